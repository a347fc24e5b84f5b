import Foundation
import Synchronization
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

    struct DidNotExit: Error, CustomStringConvertible {
        var arguments: [String]
        var timeLimit: TimeInterval
        var description: String {
            "storekeeper \(arguments.joined(separator: " ")) was still running after \(Int(timeLimit)) s (terminated)"
        }
    }

    /// Runs `storekeeper ARGUMENTS` to its end.
    ///
    /// Waits without blocking a thread: the tests share Swift's small cooperative pool (two
    /// threads on a 2-core machine), and a thread blocked on a child is one fewer for every other
    /// test meanwhile. The child's standard streams are files, not pipes: Foundation's `Process`
    /// can leak a pipe made for one child into another spawned at the same moment on another
    /// thread, and then the pipe's end of file waits for that other child too (a read to end of
    /// file blocked for as long); and a pipe's readability handler did not always report end of
    /// file once the child had exited. A file is read once the child has exited, and is complete.
    ///
    /// A child still running after `timeLimit` is terminated and the test fails with
    /// ``DidNotExit``, rather than waiting with the suite.
    static func run(_ arguments: [String], standardInput: String? = nil, timeLimit: TimeInterval = 300)
        async throws -> Result
    {
        guard let executable else {
            throw MissingExecutable()
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-cli-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        func file(_ name: String, contents: String = "") throws -> URL {
            let url = directory.appendingPathComponent(name)
            try Data(contents.utf8).write(to: url)
            return url
        }
        let (input, output, error) = (
            try file("stdin", contents: standardInput ?? ""), try file("stdout"), try file("stderr")
        )
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let handles = [
            try FileHandle(forReadingFrom: input), try FileHandle(forWritingTo: output),
            try FileHandle(forWritingTo: error),
        ]
        defer { for handle in handles { try? handle.close() } }
        (process.standardInput, process.standardOutput, process.standardError) = (handles[0], handles[1], handles[2])
        try process.run()
        guard try await process.exited(within: timeLimit) else {
            process.terminate()
            throw DidNotExit(arguments: arguments, timeLimit: timeLimit)
        }
        return Result(
            status: process.terminationStatus,
            standardOutput: String(decoding: try Data(contentsOf: output), as: UTF8.self),
            standardError: String(decoding: try Data(contentsOf: error), as: UTF8.self))
    }
}

extension Process {
    /// Waits until the process has exited, or `timeout` has passed, checking every 5 ms without
    /// holding a thread; whether it exited.
    func exited(within timeout: TimeInterval) async throws -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while isRunning, Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
        return !isRunning
    }
}

/// Collects what a pipe delivers on Foundation's reader thread, never on a Swift concurrency
/// thread (a blocking read there starves the small cooperative pool).
final class PipeCollector: Sendable {
    private let buffer = Mutex(Data())

    init(_ pipe: Pipe) {
        // Holds the collector until end of file, when the handler is removed.
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let chunk = handle.availableData
            if chunk.isEmpty {
                handle.readabilityHandler = nil
            } else {
                self.buffer.withLock { $0.append(chunk) }
            }
        }
    }

    var text: String { buffer.withLock { String(decoding: $0, as: UTF8.self) } }
}

/// `storekeeper serve` running as a child process.
final class ServerProcess: Sendable {
    let process: Process
    /// The port from its "listening on" line.
    let port: Int
    private let output: PipeCollector
    private let errors: PipeCollector

    var baseURL: String { "http://127.0.0.1:\(port)" }

    private init(process: Process, port: Int, output: PipeCollector, errors: PipeCollector) {
        self.process = process
        self.port = port
        self.output = output
        self.errors = errors
    }

    /// Starts `storekeeper serve --config CONFIG --host 127.0.0.1 --port PORT` and waits (up to
    /// 60 s) for its "listening on" line.
    static func start(
        config: String, port: Int = 0, environment: [String: String] = [:]
    ) async throws -> ServerProcess {
        try await start(
            arguments: ["serve", "--config", config, "--host", "127.0.0.1", "--port", String(port)],
            environment: environment)
    }

    /// Starts `storekeeper ARGUMENTS` (with `environment` added to this process's) and waits (up to
    /// 60 s) for its "listening on" line.
    static func start(arguments: [String], environment: [String: String] = [:]) async throws -> ServerProcess {
        guard let executable = CLI.executable else { throw CLI.MissingExecutable() }
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let outputPipe = Pipe()
        process.standardOutput = outputPipe
        let errorPipe = Pipe()
        process.standardError = errorPipe
        let output = PipeCollector(outputPipe)
        let errors = PipeCollector(errorPipe)
        try process.run()
        let deadline = Date().addingTimeInterval(60)
        while !output.text.contains("\n"), process.isRunning, Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let prefix = "listening on http://127.0.0.1:"
        guard let line = output.text.split(separator: "\n").first, line.hasPrefix(prefix),
            let bound = Int(line.dropFirst(prefix.count))
        else {
            if process.isRunning { process.terminate() }
            throw ServerDidNotStart(standardError: errors.text)
        }
        return ServerProcess(process: process, port: bound, output: output, errors: errors)
    }

    /// Sends `signal` and waits (up to `timeout`) for the process to end; returns whether it did.
    @discardableResult
    func stop(signal: Int32 = SIGTERM, timeout: TimeInterval = 30) async throws -> Bool {
        kill(process.processIdentifier, signal)
        return try await process.exited(within: timeout)
    }

    /// What the server wrote on standard output so far.
    var standardOutput: String { output.text }

    /// What the server wrote on standard error so far.
    var standardError: String { errors.text }

    struct ServerDidNotStart: Error, CustomStringConvertible {
        var standardError: String
        var description: String { "serve did not print its listening line; standard error: \(standardError)" }
    }
}
