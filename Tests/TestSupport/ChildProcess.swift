public import Foundation

/// Runs a program to its end, as a user would, for the tests that drive executables (the
/// `storekeeper` command, pytest, the browser walkthrough).
///
/// Waits without blocking a thread: the tests share Swift's small cooperative pool (two threads
/// on a 2-core machine), and a thread blocked on a child is one fewer for every other test
/// meanwhile. The child is a ``SpawnedProcess``, its streams files read once it has exited.
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

    /// The status a shell would report: the exit status, or 128 plus the signal that ended it.
    public static func run(
        _ executable: URL, _ arguments: [String], standardInput: String? = nil,
        environment: [String: String]? = nil, currentDirectory: URL? = nil, timeLimit: TimeInterval = 300
    ) async throws -> Result {
        let child = try SpawnedProcess(
            executable, arguments, standardInput: standardInput ?? "", environment: environment,
            currentDirectory: currentDirectory)
        guard try await child.exited(within: timeLimit), let termination = child.termination else {
            child.terminate()
            throw DidNotExit(command: [executable.lastPathComponent] + arguments, timeLimit: timeLimit)
        }
        let status: Int32
        switch termination {
        case .exited(let code): status = code
        case .signalled(let signal): status = 128 + signal
        }
        return Result(status: status, standardOutput: child.standardOutput, standardError: child.standardError)
    }
}
