import Logging
import NIOPosix
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Makes the writer's commits durable on a thread of its own: the writer commits with
/// `synchronous = NORMAL` (its commit appends to the WAL without waiting for the disk) and a
/// transaction that must be durable waits here for an `fdatasync` of the WAL that began after its
/// commit. Commits waiting at the same time share one sync.
///
/// Why: with `FULL`, SQLite syncs the WAL inside the commit, on the writer's thread, and every
/// other transaction waits behind the disk. The ingest benchmark's writer spent about a fifth of
/// the run in that sync (Benchmarks/README.md). Here the writer goes on to the next transaction
/// while the disk works.
///
/// The WAL is written in order, so a sync also makes every commit before it durable. A frame
/// the WAL no longer holds when the sync runs was checkpointed into the database file, which
/// SQLite syncs at every checkpoint (with `NORMAL` too) before it reuses the WAL.
final class SQLiteWALFlusher: Sendable {
    private struct State {
        var waiting: [CheckedContinuation<Void, any Error>] = []
        var syncing = false
        var closed = false
        var completed = 0
    }

    /// The WAL (`<database>-wal`), open for syncing only. SQLite keeps the file while any
    /// connection has the database open, and this storage's connections outlive the flusher.
    private let descriptor: Int32
    private let walPath: String
    private let threadPool: NIOThreadPool
    private let state = Mutex(State())
    private let logger: Logger

    private init(descriptor: Int32, walPath: String, threadPool: NIOThreadPool, logger: Logger) {
        self.descriptor = descriptor
        self.walPath = walPath
        self.threadPool = threadPool
        self.logger = logger
    }

    /// Opens the WAL of the database at `databasePath`; it must exist (the file is in WAL mode
    /// and a connection has it open).
    static func open(databasePath: String, logger: Logger) async throws -> SQLiteWALFlusher {
        let walPath = databasePath + "-wal"
        let descriptor = openForSyncing(walPath)
        guard descriptor >= 0 else {
            throw StorageError(.unavailable, "cannot open the SQLite WAL \(walPath): \(Self.describe(errno))")
        }
        let threadPool = NIOThreadPool(numberOfThreads: 1)
        threadPool.start()
        return SQLiteWALFlusher(descriptor: descriptor, walPath: walPath, threadPool: threadPool, logger: logger)
    }

    /// Returns once a sync of the WAL that began after this call has finished: everything
    /// committed before the call is then on disk.
    func flush() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let startsSyncing: Bool? = state.withLock { state in
                guard !state.closed else { return nil }
                state.waiting.append(continuation)
                guard !state.syncing else { return false }
                state.syncing = true
                return true
            }
            switch startsSyncing {
            case nil: continuation.resume(throwing: StorageError(.unavailable, "the SQLite storage is closed"))
            case true?: threadPool.submit { [self] _ in syncUntilNoneWaits() }
            case false?: break
            }
        }
    }

    /// Syncs that finished (for tests).
    var completedSyncs: Int { state.withLock { $0.completed } }

    /// Runs on the flusher's thread. Each round takes the flushes asked for so far: the sync
    /// starts after each of them was asked for, so after its commit.
    private func syncUntilNoneWaits() {
        while true {
            let batch = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
                let batch = state.waiting
                state.waiting = []
                if batch.isEmpty { state.syncing = false }
                return batch
            }
            guard !batch.isEmpty else { return }
            if Self.sync(descriptor) == 0 {
                state.withLock { $0.completed += 1 }
                for waiter in batch { waiter.resume() }
            } else {
                // What was committed may not be on disk: the callers must not answer as if it
                // were (a webhook answers 5xx and the store delivers it again).
                let reason = Self.describe(errno)
                logger.error("SQLite WAL sync failed", metadata: ["path": "\(walPath)", "error": "\(reason)"])
                let error = StorageError(.unavailable, "cannot sync the SQLite WAL \(walPath) to disk: \(reason)")
                for waiter in batch { waiter.resume(throwing: error) }
            }
        }
    }

    private static func sync(_ descriptor: Int32) -> Int32 {
        #if canImport(Darwin)
            fsync(descriptor)
        #else
            fdatasync(descriptor)
        #endif
    }

    private static func describe(_ code: Int32) -> String {
        String(cString: strerror(code))
    }

    /// Waits for a running sync, then closes the WAL; a flush asked for afterwards fails.
    func close() async throws {
        state.withLock { $0.closed = true }
        let descriptor = self.descriptor
        // Submitted after any running sync on the same single thread, so it waits for it.
        try await threadPool.runIfActive { closeDescriptor(descriptor) }
        try await threadPool.shutdownGracefully()
    }

    deinit {
        if !state.withLock({ $0.closed }) {
            closeDescriptor(descriptor)
            threadPool.shutdownGracefully { _ in }
        }
    }
}

// Outside the class, whose own `close()` would shadow the system's.
private func openForSyncing(_ path: String) -> Int32 {
    path.withCString { open($0, O_RDONLY | O_CLOEXEC) }
}

private func closeDescriptor(_ descriptor: Int32) {
    _ = close(descriptor)
}
