import Foundation
import Synchronization
import TestSupport
import Testing

/// Runs the built `storekeeper` executable, as a user would.
enum CLI {
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

    /// Runs `storekeeper ARGUMENTS` to its end (see ``ChildProcess``); a child still running
    /// after `timeLimit` is terminated and the test fails with ``ChildProcess/DidNotExit``.
    static func run(_ arguments: [String], standardInput: String? = nil, timeLimit: TimeInterval = 300)
        async throws -> ChildProcess.Result
    {
        guard let executable else {
            throw MissingExecutable()
        }
        return try await ChildProcess.run(executable, arguments, standardInput: standardInput, timeLimit: timeLimit)
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
