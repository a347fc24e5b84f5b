import Dispatch
import Logging
import NIOPosix
import Synchronization

/// Copies the writer's WAL back into the database file on a connection and thread of its own.
///
/// SQLite checkpoints inside the commit that finds the WAL past 1,000 pages, on the committing
/// connection: with one writer, that is the writer's thread, busy copying pages and waiting for
/// two flushes while webhooks and processing queue behind it (about a sixth of the writer's time
/// in the backlog profile, Benchmarks/README.md). Here the writer's commits only say how large the
/// WAL has grown; every 1,000 pages this connection checkpoints passively (it waits for no one and
/// no one waits for it) on another core. A passive checkpoint cannot restart a WAL that is written
/// while it copies, so past ``inlineFrames`` the writer checkpoints itself too, as SQLite would:
/// that copies the little left and lets the next commit start the WAL from its beginning. SQLite
/// runs one checkpoint at a time, so the writer first waits for a running one here: skipping its
/// own then (busy) let the WAL grow for as long as this one took, 40 % past the bound on a loaded
/// host.
final class SQLiteCheckpointer: Sendable {
    /// Pages written since the last request before another checkpoint is asked for (SQLite's own
    /// automatic checkpoint threshold).
    static let framesPerCheckpoint = 1000
    /// The WAL size at which the writer checkpoints inside its commit (bounding the WAL at about
    /// 32 MiB of 4 KiB pages whatever happens here).
    static let inlineFrames = 8000

    private struct State {
        /// The WAL's size when a checkpoint was last asked for.
        var requestedAt = 0
        var running = false
        var requestedAgain = false
        var closed = false
        var completed = 0
        /// The writer, waiting past ``inlineFrames`` for the running checkpoint to end.
        var writerWaiting: DispatchSemaphore?
    }

    /// A passive checkpoint on this connection: frames now in the database file, nil if busy.
    private let checkpoint: @Sendable () throws -> Int?
    private let closeConnection: @Sendable () throws -> Void
    private let threadPool: NIOThreadPool
    private let state = Mutex(State())
    private let logger: Logger

    /// `checkpoint` and `closeConnection` run on `threadPool`'s one thread.
    init(
        threadPool: NIOThreadPool, logger: Logger, checkpoint: @escaping @Sendable () throws -> Int?,
        closeConnection: @escaping @Sendable () throws -> Void
    ) {
        self.checkpoint = checkpoint
        self.closeConnection = closeConnection
        self.threadPool = threadPool
        self.logger = logger
    }

    /// Opens a connection to the database at `path` on a thread of its own; nil if the file is
    /// not in WAL mode (then the writer's commits write the database itself).
    static func open(path: String, errors: StorageErrorTranslator, logger: Logger) async throws
        -> SQLiteCheckpointer?
    {
        let threadPool = NIOThreadPool(numberOfThreads: 1)
        threadPool.start()
        do {
            let handle = try await threadPool.runIfActive { () throws -> SQLiteHandle? in
                let handle = try SQLiteHandle(path: path)
                // Reading the mode opens the WAL on this connection: one that never read the file
                // has no WAL open, and its checkpoints copy nothing.
                var mode: String?
                try handle.execute("PRAGMA journal_mode", []) { row in mode = row.value("journal_mode")?.string }
                guard mode?.lowercased() == "wal" else {
                    try handle.close()
                    return nil
                }
                return handle
            }
            guard let handle else {
                try await threadPool.shutdownGracefully()
                return nil
            }
            return SQLiteCheckpointer(
                threadPool: threadPool, logger: logger, checkpoint: { try handle.checkpoint() },
                closeConnection: { try handle.close() })
        } catch {
            try? await threadPool.shutdownGracefully()
            throw StorageError(.unavailable, "cannot open SQLite database at \(path): \(errors.translate(error))")
        }
    }

    /// Checkpoints that found frames of the WAL in the database file (for tests).
    var completedCheckpoints: Int { state.withLock { $0.completed } }

    /// Whether the writer is waiting for the running checkpoint to end (for tests).
    var writerIsWaiting: Bool { state.withLock { $0.writerWaiting != nil } }

    /// Told by the writer after each commit (on its thread) how many frames the WAL holds; asks for
    /// a checkpoint every ``framesPerCheckpoint`` and runs `checkpointInline` past ``inlineFrames``.
    func writerCommitted(walFrames: Int, checkpointInline: () -> Void) {
        let startsRunning = state.withLock { state -> Bool in
            // Fewer frames than last time: the WAL started again from its beginning.
            if walFrames < state.requestedAt { state.requestedAt = 0 }
            guard !state.closed, walFrames - state.requestedAt >= Self.framesPerCheckpoint else { return false }
            state.requestedAt = walFrames
            guard !state.running else {
                state.requestedAgain = true
                return false
            }
            state.running = true
            return true
        }
        if startsRunning { threadPool.submit { [self] _ in checkpointUntilNoneRequested() } }
        guard walFrames >= Self.inlineFrames else { return }
        let runningCheckpointEnded = state.withLock { state -> DispatchSemaphore? in
            guard state.running else { return nil }
            let semaphore = DispatchSemaphore(value: 0)
            state.writerWaiting = semaphore
            return semaphore
        }
        // Blocks the writer's thread, as the inline checkpoint itself does; nothing else can start
        // a checkpoint here meanwhile, since only this thread asks for them.
        runningCheckpointEnded?.wait()
        checkpointInline()
    }

    /// Runs on the checkpointer's thread.
    private func checkpointUntilNoneRequested() {
        while true {
            do {
                if let copied = try checkpoint(), copied > 0 { state.withLock { $0.completed += 1 } }
            } catch {
                // The writer's inline checkpoint still bounds the WAL.
                logger.warning("SQLite checkpoint failed", metadata: ["error": "\(error)"])
            }
            let again = state.withLock { state -> Bool in
                // A waiting writer checkpoints inline next, which copies what was asked for.
                guard state.requestedAgain, !state.closed, state.writerWaiting == nil else {
                    state.running = false
                    state.requestedAgain = false
                    state.writerWaiting?.signal()
                    state.writerWaiting = nil
                    return false
                }
                state.requestedAgain = false
                return true
            }
            guard again else { return }
        }
    }

    deinit {
        // Dropped without close(): nothing can request a checkpoint any more.
        if !state.withLock({ $0.closed }) {
            try? closeConnection()
            threadPool.shutdownGracefully { _ in }
        }
    }

    /// Waits for a running checkpoint, then closes the connection.
    func close() async throws {
        state.withLock { $0.closed = true }
        let closeConnection = self.closeConnection
        // Submitted after any running checkpoint on the same single thread, so it waits for it.
        try await threadPool.runIfActive { try closeConnection() }
        try await threadPool.shutdownGracefully()
    }
}
