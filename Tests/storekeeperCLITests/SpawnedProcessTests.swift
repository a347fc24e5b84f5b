import Foundation
import Glibc
import TestSupport
import Testing

/// The tests' child runner (``SpawnedProcess``) starts a program as a shell would.
@Suite struct SpawnedProcessTests {
    @Test func theChildGetsItsInputEnvironmentDirectoryAndNoOtherDescriptors() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spawn-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // A descriptor of this process without close-on-exec, which the child must not inherit.
        let open = Glibc.open(directory.appendingPathComponent("held").path, O_WRONLY | O_CREAT, 0o600)
        try #require(open >= 0)
        defer { close(open) }

        let result = try await ChildProcess.run(
            URL(fileURLWithPath: "/bin/sh"),
            ["-c", "read line; echo \"$line $GREETING\"; pwd; ls /proc/$$/fd; echo oops >&2; exit 3"],
            standardInput: "hello\n", environment: ["GREETING": "world", "PATH": "/usr/bin:/bin"],
            currentDirectory: directory)
        #expect(result.status == 3)
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.first == "hello world")
        #expect(lines.dropFirst().first == directory.resolvingSymlinksInPath().path)
        // The shell's three streams only (`ls` reads the shell's descriptors, not its own).
        #expect(Array(lines.dropFirst(2)) == ["0", "1", "2"], "\(result.standardOutput)")
        #expect(result.standardError == "oops\n")
    }

    @Test func aSignalEndsTheChildWithDefaultHandlingAndIsReported() async throws {
        // A server ignores SIGPIPE, and so may this test process; the child starts with the default
        // (a shell cannot undo a signal ignored when it started, so this one would sleep and exit 0).
        signal(SIGPIPE, SIG_IGN)
        let child = try SpawnedProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", "kill -PIPE $$; sleep 5"])
        #expect(try await child.exited(within: 10))
        #expect(child.termination == .signalled(SIGPIPE))

        let sleeper = try SpawnedProcess(URL(fileURLWithPath: "/bin/sleep"), ["30"])
        #expect(sleeper.isRunning)
        sleeper.terminate()
        #expect(try await sleeper.exited(within: 10))
        #expect(sleeper.termination == .signalled(SIGTERM))
        // Once reaped, its id is not signalled again (it may be another process's by then).
        sleeper.send(SIGKILL)
        #expect(sleeper.termination == .signalled(SIGTERM))
    }

    @Test func aMissingExecutableIsRefusedWithItsName() throws {
        #expect {
            _ = try SpawnedProcess(URL(fileURLWithPath: "/no/such/program"), ["--flag"])
        } throws: { error in
            "\(error)" == "cannot start program --flag: No such file or directory"
        }
    }
}
