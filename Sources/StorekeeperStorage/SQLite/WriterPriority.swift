import NIOPosix

#if canImport(Glibc)
    import Glibc
#endif

/// The SQLite writer's thread runs ahead of the rest of the process when the process may raise a
/// thread's priority (Linux: root, the `CAP_SYS_NICE` capability, or an `RLIMIT_NICE` of 30 or
/// more).
///
/// Why: every writing transaction runs on that one thread, so under load it is what limits
/// ingest, while the work competing with it for the cores (signature checks, HTTP) runs on many
/// threads and can wait. On the 2-core machine the writer was ready to run but waiting for a core
/// about a third of the ingest benchmark; at nice −10 the benchmark processed about a fifth more
/// (Benchmarks/README.md).
enum WriterPriority {
    /// The nice value asked for (Linux: −20 highest, 0 default, 19 lowest).
    static let nice: Int32 = -10

    /// Raises the priority of the thread of `pool`, a pool of one thread (Linux keeps a nice value
    /// per thread, so it is asked for on that thread); returns why not, or nil once done.
    static func raise(threadOf pool: NIOThreadPool) async -> String? {
        do {
            return try await pool.runIfActive { raiseCallingThread() }
        } catch {
            return "the thread pool is not running"
        }
    }

    private static func raiseCallingThread() -> String? {
        #if canImport(Glibc)
            // `who` 0 is the calling thread, not the whole process, on Linux.
            guard setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, nice) != 0 else { return nil }
            return String(cString: strerror(errno))
        #else
            return "not supported on this system"
        #endif
    }
}
