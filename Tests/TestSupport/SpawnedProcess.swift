public import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A child program started with `posix_spawn`, for the tests that run executables (the
/// `storekeeper` command, pytest, the browser walkthrough).
///
/// Not Foundation's `Process`: this toolchain's `Process.run()` reads past the end of a buffer
/// while listing `/proc/self/fd` (swift-corelibs-foundation pull request #5472, fixed after this
/// toolchain) and now and then crashed the whole test run with signal 11.
///
/// The child's standard streams are files in a directory of its own, removed with this object: a
/// file is read at any moment without a reader thread, and is complete once the child has exited.
/// The child starts with default signal handlers, an empty signal mask and no descriptor but its
/// three streams, as from a shell.
public final class SpawnedProcess: Sendable {
    /// How a child ended.
    public enum Termination: Sendable, Equatable, CustomStringConvertible {
        case exited(Int32)
        case signalled(Int32)

        public var description: String {
            switch self {
            case .exited(let status): "exited with \(status)"
            case .signalled(let signal): "ended by signal \(signal)"
            }
        }
    }

    /// `posix_spawn` refused: the executable is missing or not executable, or the system is out of
    /// processes.
    public struct SpawnFailed: Error, CustomStringConvertible {
        public var command: [String]
        public var code: Int32
        public var description: String {
            "cannot start \(command.joined(separator: " ")): \(String(cString: strerror(code)))"
        }
    }

    public let processIdentifier: pid_t
    private let directory: URL
    private let ended = Mutex<Termination?>(nil)

    /// Starts `executable ARGUMENTS` with `standardInput` as its input, in `environment` (this
    /// process's when `nil`) and `currentDirectory` (this process's when `nil`).
    public init(
        _ executable: URL, _ arguments: [String], standardInput: String = "", environment: [String: String]? = nil,
        currentDirectory: URL? = nil
    ) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-child-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.directory = directory
        try Data(standardInput.utf8).write(to: directory.appendingPathComponent("stdin"))

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        let streams: [(Int32, String, Int32)] = [
            (0, "stdin", O_RDONLY), (1, "stdout", O_WRONLY | O_CREAT | O_TRUNC),
            (2, "stderr", O_WRONLY | O_CREAT | O_TRUNC),
        ]
        for (descriptor, name, flags) in streams {
            posix_spawn_file_actions_addopen(
                &actions, descriptor, directory.appendingPathComponent(name).path, flags, 0o600)
        }
        try Self.extensions.closeFrom(&actions, 3)
        if let currentDirectory { try Self.extensions.changeDirectory(&actions, currentDirectory.path) }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigdefault(&attributes, &all)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let command = [executable.path] + arguments
        let argv = command.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let envp = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in envp { free(pointer) } }

        var pid = pid_t()
        let code = posix_spawn(&pid, executable.path, &actions, &attributes, argv, envp)
        guard code == 0 else {
            try? FileManager.default.removeItem(at: directory)
            throw SpawnFailed(command: [executable.lastPathComponent] + arguments, code: code)
        }
        processIdentifier = pid
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    /// What the child wrote on standard output so far.
    public var standardOutput: String { contents(of: "stdout") }

    /// What the child wrote on standard error so far.
    public var standardError: String { contents(of: "stderr") }

    private func contents(of name: String) -> String {
        String(decoding: (try? Data(contentsOf: directory.appendingPathComponent(name))) ?? Data(), as: UTF8.self)
    }

    /// How the child ended, or `nil` while it runs (reaping it once it has ended).
    public var termination: Termination? {
        ended.withLock { ended in
            if ended == nil {
                var status: Int32 = 0
                if waitpid(processIdentifier, &status, WNOHANG) == processIdentifier {
                    // The layout of waitpid's status word: the low seven bits are the signal that
                    // ended the child, zero when it exited, and the next byte its exit status.
                    ended = status & 0x7f == 0 ? .exited((status >> 8) & 0xff) : .signalled(status & 0x7f)
                }
            }
            return ended
        }
    }

    public var isRunning: Bool { termination == nil }

    /// Sends `signal`, unless the child has already been reaped (its id may belong to another
    /// process by then).
    public func send(_ signal: Int32) {
        ended.withLock { ended in
            if ended == nil { _ = kill(processIdentifier, signal) }
        }
    }

    /// Sends SIGTERM.
    public func terminate() { send(SIGTERM) }

    /// Sends `signal` as soon as the child's standard output contains `marker`, watching from a
    /// thread of its own every millisecond: a task on the tests' shared cooperative pool can wait
    /// seconds for its turn under the full suite, long enough for the child to have gone past
    /// the moment the signal was meant for. Whether the marker came (and the signal went) within
    /// `timeout`, the child still running.
    public func send(_ signal: Int32, onceOutputContains marker: String, within timeout: TimeInterval) async -> Bool {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                let deadline = Date().addingTimeInterval(timeout)
                while self.isRunning, Date() < deadline {
                    if self.standardOutput.contains(marker) {
                        self.send(signal)
                        return continuation.resume(returning: true)
                    }
                    usleep(1000)
                }
                continuation.resume(returning: false)
            }
        }
    }

    /// Waits until the child has ended, or `timeout` has passed, checking every 5 ms without
    /// holding a thread (the tests share Swift's small cooperative pool); whether it ended.
    public func exited(within timeout: TimeInterval) async throws -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while isRunning, Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
        return !isRunning
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` and `…_addchdir_np` (2.34 and 2.29),
    /// which its headers declare only under `_GNU_SOURCE`, so Swift's Glibc module does not
    /// import them; looked up by name instead.
    private struct Extensions: Sendable {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        typealias ChangeDirectory =
            @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
        struct Missing: Error, CustomStringConvertible {
            var name: String
            var description: String { "this C library has no \(name) (glibc 2.34 or later has it)" }
        }

        let closeFromAddress: Int?
        let changeDirectoryAddress: Int?

        init() {
            let library = dlopen(nil, RTLD_NOW)
            closeFromAddress = dlsym(library, "posix_spawn_file_actions_addclosefrom_np").map { Int(bitPattern: $0) }
            changeDirectoryAddress = dlsym(library, "posix_spawn_file_actions_addchdir_np").map {
                Int(bitPattern: $0)
            }
        }

        func closeFrom(_ actions: inout posix_spawn_file_actions_t, _ lowest: Int32) throws {
            guard let address = closeFromAddress, let pointer = UnsafeRawPointer(bitPattern: address) else {
                throw Missing(name: "posix_spawn_file_actions_addclosefrom_np")
            }
            _ = unsafeBitCast(pointer, to: CloseFrom.self)(&actions, lowest)
        }

        func changeDirectory(_ actions: inout posix_spawn_file_actions_t, _ path: String) throws {
            guard let address = changeDirectoryAddress, let pointer = UnsafeRawPointer(bitPattern: address) else {
                throw Missing(name: "posix_spawn_file_actions_addchdir_np")
            }
            _ = unsafeBitCast(pointer, to: ChangeDirectory.self)(&actions, path)
        }
    }

    private static let extensions = Extensions()
}
