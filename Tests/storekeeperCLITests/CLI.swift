import Foundation
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

/// `storekeeper serve` running as a child process.
final class ServerProcess: Sendable {
    let process: SpawnedProcess
    /// The port from its "listening on" line.
    let port: Int

    var baseURL: String { "http://127.0.0.1:\(port)" }

    private init(process: SpawnedProcess, port: Int) {
        self.process = process
        self.port = port
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
        let process = try SpawnedProcess(
            executable, arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
        let deadline = Date().addingTimeInterval(60)
        while !process.standardOutput.contains("\n"), process.isRunning, Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let prefix = "listening on http://127.0.0.1:"
        guard let line = process.standardOutput.split(separator: "\n").first, line.hasPrefix(prefix),
            let bound = Int(line.dropFirst(prefix.count))
        else {
            process.terminate()
            throw ServerDidNotStart(standardError: process.standardError)
        }
        return ServerProcess(process: process, port: bound)
    }

    /// Sends `signal` and waits (up to `timeout`) for the process to end; returns whether it did.
    @discardableResult
    func stop(signal: Int32 = SIGTERM, timeout: TimeInterval = 30) async throws -> Bool {
        process.send(signal)
        return try await process.exited(within: timeout)
    }

    /// What the server wrote on standard output so far.
    var standardOutput: String { process.standardOutput }

    /// What the server wrote on standard error so far.
    var standardError: String { process.standardError }

    struct ServerDidNotStart: Error, CustomStringConvertible {
        var standardError: String
        var description: String { "serve did not print its listening line; standard error: \(standardError)" }
    }
}
