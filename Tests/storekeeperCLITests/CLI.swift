import Foundation
import Testing

/// Runs the built `storekeeper` executable, as a user would.
enum CLI {
    struct Result {
        var status: Int32
        var standardOutput: String
        var standardError: String
    }

    /// The executable SwiftPM built next to this test bundle (this target depends on it).
    static let executable: URL? = {
        if let override = ProcessInfo.processInfo.environment["STOREKEEPER_BINARY"] {
            return URL(fileURLWithPath: override)
        }
        var candidates: [URL] = []
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            candidates.append(directory.appendingPathComponent("storekeeper"))
            directory.deleteLastPathComponent()
        }
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("storekeeper"))
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }()

    struct MissingExecutable: Error, CustomStringConvertible {
        var description: String { "the storekeeper executable was not built next to the tests" }
    }

    static func run(_ arguments: [String], standardInput: String? = nil) throws -> Result {
        guard let executable else {
            throw MissingExecutable()
        }
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        let input = Pipe()
        process.standardInput = input
        try process.run()
        if let standardInput { input.fileHandleForWriting.write(Data(standardInput.utf8)) }
        try input.fileHandleForWriting.close()
        // Read both pipes before waiting so a large output cannot block the child.
        let outData = output.fileHandleForReading.readDataToEndOfFile()
        let errData = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus,
            standardOutput: String(decoding: outData, as: UTF8.self),
            standardError: String(decoding: errData, as: UTF8.self))
    }
}
