public import Foundation

/// Runs a program to its end, as a user would, for the tests that drive executables (the
/// `storekeeper` command, pytest, the browser walkthrough).
///
/// Waits without blocking a thread: the tests share Swift's small cooperative pool (two threads
/// on a 2-core machine), and a thread blocked on a child is one fewer for every other test
/// meanwhile. The child's standard streams are files, not pipes: Foundation's `Process` can leak
/// a pipe made for one child into another spawned at the same moment on another thread, and then
/// the pipe's end of file waits for that other child too (a read to end of file blocked for as
/// long); and a pipe's readability handler did not always report end of file once the child had
/// exited. A file is read once the child has exited, and is complete.
public enum ChildProcess {
    public struct Result: Sendable {
        public var status: Int32
        public var standardOutput: String
        public var standardError: String
    }

    /// A child still running at its time limit: it is terminated and the test fails with this,
    /// rather than waiting with the suite.
    public struct DidNotExit: Error, CustomStringConvertible {
        public var command: [String]
        public var timeLimit: TimeInterval
        public var description: String {
            "\(command.joined(separator: " ")) was still running after \(Int(timeLimit)) s (terminated)"
        }
    }

    public static func run(
        _ executable: URL, _ arguments: [String], standardInput: String? = nil,
        environment: [String: String]? = nil, currentDirectory: URL? = nil, timeLimit: TimeInterval = 300
    ) async throws -> Result {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-child-\(UUID())")
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
        if let environment { process.environment = environment }
        if let currentDirectory { process.currentDirectoryURL = currentDirectory }
        let handles = [
            try FileHandle(forReadingFrom: input), try FileHandle(forWritingTo: output),
            try FileHandle(forWritingTo: error),
        ]
        defer { for handle in handles { try? handle.close() } }
        (process.standardInput, process.standardOutput, process.standardError) = (handles[0], handles[1], handles[2])
        try process.run()
        guard try await process.exited(within: timeLimit) else {
            process.terminate()
            throw DidNotExit(command: [executable.lastPathComponent] + arguments, timeLimit: timeLimit)
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
    public func exited(within timeout: TimeInterval) async throws -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while isRunning, Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
        return !isRunning
    }
}
