import Foundation
public import Logging
import NIOPosix
import SQLKit
public import Storekeeper
import Synchronization

/// The embedded backend: one SQLite database file, in WAL mode, with foreign keys enforced.
///
/// All work goes through one connection, one transaction at a time (`BEGIN IMMEDIATE`, so another
/// process writing the same file makes it wait up to the busy timeout instead of failing midway).
/// The blocking SQLite calls run on a thread of the connection's own, never on an event loop or
/// the shared cooperative pool.
///
/// Don't call ``transaction(_:)`` from inside a transaction of the same storage: it would wait
/// for itself, so it throws instead.
public final class SQLiteStorage: Storage {
    public var backend: StorageBackend { .sqlite }

    /// The database file (or `:memory:`).
    public let path: String

    private let core: SQLStorageCore<SQLiteTransactionRunner>
    private let logger: Logger

    /// Opens (creating if needed) the database at `path`. `:memory:` opens a private in-memory
    /// database, which lives as long as this storage; it is meant for tests.
    ///
    /// Opening does not migrate: call ``migrate()``.
    public convenience init(path: String, logger: Logger = Logger(label: "storekeeper.storage")) async throws {
        try await self.init(path: path, logger: logger, migrations: Migration.all)
    }

    init(path: String, logger: Logger, migrations: [Migration]) async throws {
        guard !path.isEmpty else {
            throw StorageError(.badConfiguration, "the SQLite database path is empty")
        }
        self.path = path
        self.logger = logger
        let errors = StorageErrorTranslator()
        // A file has a reader connection beside the writer (WAL lets it read the last commit while
        // a write goes on); `:memory:` would open another, empty database, so it reads on the writer.
        let reader =
            path == ":memory:"
            ? nil : try await SQLiteTransactionRunner.open(path: path, role: .reader, errors: errors, logger: logger)
        let writer: SQLiteTransactionRunner
        do {
            writer = try await SQLiteTransactionRunner.open(
                path: path, role: .writer, reader: reader, errors: errors, logger: logger)
        } catch {
            try? await reader?.close()
            throw error
        }
        let runner = writer
        self.core = SQLStorageCore(runner: runner, migrations: migrations)
    }

    @discardableResult
    public func migrate() async throws -> [Int] {
        try await core.migrate()
    }

    public func schemaVersion() async throws -> Int {
        try await core.schemaVersion()
    }

    public func transaction<Result: Sendable>(
        durability: CommitDurability, _ body: @Sendable (any StorageTransaction) async throws -> Result
    ) async throws -> Result {
        try await core.transaction(durability: durability, body)
    }

    public func read<Result: Sendable>(
        _ body: @Sendable (any StorageTransaction) async throws -> Result
    ) async throws -> Result {
        try await core.read(body)
    }

    public func insertNotifications(taking items: @Sendable () -> [InboxNotification]) async throws -> [Bool] {
        try await transaction { try await $0.insertNotifications(items()) }
    }

    /// On a reader connection opened for `body` and closed after it (a few milliseconds; its
    /// callers run every few minutes), so that a long scan waits for nobody and nobody for it.
    /// `:memory:` reads on the writer (another connection would open another, empty database).
    public func readAside<Result: Sendable>(
        _ body: @Sendable (any StorageTransaction) async throws -> Result
    ) async throws -> Result {
        guard path != ":memory:" else { return try await read(body) }
        let errors = core.runner.errors
        let runner = try await SQLiteTransactionRunner.open(path: path, role: .reader, errors: errors, logger: logger)
        let result: Result
        do {
            result = try await runner.inTransaction(holdingMigrationLock: false, durability: .flushed) { database in
                try await body(SQLStorageTransaction(database: database, flavor: .sqlite, errors: errors))
            }
        } catch {
            try? await runner.close()
            throw error
        }
        try await runner.close()
        return result
    }

    public var notificationInsertsAtOnce: Int { 2 }

    /// Checkpoints the WAL beside the writer; nil for `:memory:`.
    var checkpointer: SQLiteCheckpointer? { core.runner.checkpointer }

    /// Syncs the WAL for flushed commits; nil for `:memory:`.
    var walFlusher: SQLiteWALFlusher? { core.runner.flusher }

    /// Waits for running transactions, then closes the connection.
    public func close() async throws {
        try await core.runner.close()
    }
}

/// Runs transactions on one SQLite connection, one after another: the writer runs every
/// transaction that may write, a reader (its own connection) those that only read.
///
/// A transaction's body runs on the connection's own thread (a task executor preference) and its
/// statements run there directly (``SQLiteHandle``): a transaction costs two thread hops, in and
/// out, instead of two per statement.
final class SQLiteTransactionRunner: SQLTransactionRunner {
    /// What a connection is for.
    enum Role: Sendable {
        /// Every writing transaction, one at a time (`BEGIN IMMEDIATE`: SQLite has one writer).
        case writer
        /// Reading transactions (`BEGIN`, `query_only`): a snapshot of the last commit, not
        /// waiting behind the writer.
        case reader
    }

    let flavor = SQLFlavor.sqlite
    let errors: StorageErrorTranslator
    private let handle: SQLiteHandle
    private let threadPool: NIOThreadPool
    private let executor: ThreadPoolTaskExecutor
    private let role: Role
    private let gate = TransactionGate()
    /// The writer's reader; nil for `:memory:` and for a reader.
    private let reader: SQLiteTransactionRunner?
    /// Checkpoints the writer's WAL; nil for `:memory:` and for a reader (set once, by `open`).
    private let checkpointerBox = Mutex<SQLiteCheckpointer?>(nil)
    var checkpointer: SQLiteCheckpointer? { checkpointerBox.withLock { $0 } }
    /// Syncs the writer's WAL for flushed commits; nil for `:memory:`, for a reader, and for a
    /// file not in WAL mode (its flushed commits sync inside the commit, `FULL`).
    private let flusherBox = Mutex<SQLiteWALFlusher?>(nil)
    var flusher: SQLiteWALFlusher? { flusherBox.withLock { $0 } }
    private let logger: Logger
    /// The connection's `synchronous` setting now (changed only while the gate is held).
    private let synchronous = Mutex(CommitDurability.flushed)
    /// Whether ``close()`` closed the connection; if not, deinit does.
    private let connectionClosed = Mutex(false)

    /// Marks the task (and its children) running a transaction, to refuse a nested one that would
    /// wait for itself.
    @TaskLocal private static var transactionHolder: ObjectIdentifier?

    /// Opens a connection to the database at `path` on a thread of its own, set up for `role`.
    static func open(
        path: String, role: Role, reader: SQLiteTransactionRunner? = nil, errors: StorageErrorTranslator,
        logger: Logger
    ) async throws -> SQLiteTransactionRunner {
        // A thread of its own: SQLite blocks its thread while it waits for another connection's
        // write lock or for a flush, and on a shared pool such waits could starve everything else.
        let threadPool = NIOThreadPool(numberOfThreads: 1)
        threadPool.start()
        let handle: SQLiteHandle
        do {
            handle = try await threadPool.runIfActive { try SQLiteHandle(path: path) }
        } catch {
            try? await threadPool.shutdownGracefully()
            throw StorageError(.unavailable, "cannot open SQLite database at \(path): \(errors.translate(error))")
        }
        let runner = SQLiteTransactionRunner(
            handle: handle, threadPool: threadPool, role: role, reader: reader, errors: errors, logger: logger)
        do {
            try await withTaskExecutorPreference(runner.executor) { try await runner.configure(path: path) }
            // Only a file's WAL has anything to checkpoint; opened once the writer has put the file
            // in WAL mode (a connection that found no WAL would checkpoint nothing).
            if role == .writer, path != ":memory:",
                let checkpointer = try await SQLiteCheckpointer.open(path: path, errors: errors, logger: logger)
            {
                runner.checkpointerBox.withLock { $0 = checkpointer }
                // The WAL exists now: the checkpointer's connection opened it.
                let flusher = try await SQLiteWALFlusher.open(databasePath: path, logger: logger)
                runner.flusherBox.withLock { $0 = flusher }
                // On the connection's thread, as every use of it; no transaction runs before open returns.
                try await threadPool.runIfActive {
                    handle.onCommit { frames, checkpointInline in
                        checkpointer.writerCommitted(walFrames: frames, checkpointInline: checkpointInline)
                    }
                }
            }
        } catch {
            try? await runner.close()
            throw error
        }
        return runner
    }

    private init(
        handle: SQLiteHandle, threadPool: NIOThreadPool, role: Role, reader: SQLiteTransactionRunner?,
        errors: StorageErrorTranslator, logger: Logger
    ) {
        self.role = role
        self.reader = reader
        self.handle = handle
        self.threadPool = threadPool
        self.executor = ThreadPoolTaskExecutor(pool: threadPool)
        self.errors = errors
        self.logger = logger
    }

    private var database: any SQLDatabase {
        SQLiteHandleDatabase(handle: handle, logger: logger)
    }

    /// Sets the connection up: WAL so readers in other processes don't block the writer, full
    /// sync so a committed notification survives a power cut (on a file, once open, the writer
    /// commits with `NORMAL` and ``SQLiteWALFlusher`` syncs instead), a larger page cache, a busy timeout
    /// for other processes' write locks, and foreign keys (off by default in SQLite).
    func configure(path: String) async throws {
        do {
            if role == .reader {
                // A reader never writes: a write attempted on it fails instead of taking the lock.
                try await database.raw("PRAGMA query_only = ON").run()
                try await database.raw("PRAGMA cache_size = -65536").run()
                // Reads the file through a read-only memory map (up to 2 GB, SQLite's limit on
                // Linux) instead of a pread and a copy per page beyond the page cache: at a million
                // customers the customer view's CPU fell from 471-479 to 383-397 µs per GET.
                try await database.raw("PRAGMA mmap_size = 2147418112").run()
                try await database.raw("PRAGMA busy_timeout = 5000").run()
                return
            }
            let journal = try await database.raw("PRAGMA journal_mode = WAL").first()
            let mode = try journal.map { try RowReader(row: $0, table: "pragma").string("journal_mode") }
            if mode?.lowercased() != "wal" && path != ":memory:" {
                logger.warning(
                    "SQLite did not switch to WAL mode",
                    metadata: ["path": "\(path)", "journal_mode": "\(mode ?? "?")"])
            }
            try await database.raw("PRAGMA synchronous = FULL").run()
            // SQLite's default page cache is 2 MB: beyond it every page a statement touches is a
            // pread and a copy from the OS cache, which the ingest profile once showed as ~15% of
            // the CPU. But not much more: a commit after a B-tree split that swapped pages (SQLite
            // parks one at the lock-byte page's number) walks the writer's whole page cache, and
            // with 64 MiB that walk was 3.3% of the ingest profile; with 16 MiB it was 1.3%, and
            // preads stayed at 0.8%.
            try await database.raw("PRAGMA cache_size = -16384").run()
            // Statement journals and transient tables in memory, not in files of their own: the
            // writer created and wrote ~13 KB of temporary file per notification ingested.
            try await database.raw("PRAGMA temp_store = MEMORY").run()
            try await database.raw("PRAGMA busy_timeout = 5000").run()
            try await database.raw("PRAGMA foreign_keys = ON").run()
        } catch {
            throw errors.translate(error)
        }
    }

    func inTransaction<Result: Sendable>(
        holdingMigrationLock: Bool, durability: CommitDurability,
        _ body: @Sendable (any SQLDatabase) async throws -> Result
    ) async throws -> Result {
        let holder = ObjectIdentifier(self)
        guard Self.transactionHolder != holder else {
            throw StorageError(
                .unavailable, "transaction(_:) called inside a transaction of the same SQLite storage")
        }
        // With a flusher (the writer of a file has one), every commit skips SQLite's own sync and a
        // flushed one waits for the flusher's, after the connection is free for the next
        // transaction (SQLiteWALFlusher).
        let flusher = self.flusher
        // Waiting on the connection's thread: the gate's hand-over resumes the next transaction
        // there directly, not through the cooperative pool (see TransactionGate).
        let result = try await withTaskExecutorPreference(executor) {
            // A flushed commit is one someone waits for (a webhook's 2xx, an API answer): it goes
            // ahead of deferred background work at the gate.
            try await gate.enter(durability == .flushed ? .urgent : .background)
            defer { gate.leave() }
            return try await Self.$transactionHolder.withValue(holder) {
                if role == .writer { try await setSynchronous(for: flusher == nil ? durability : .deferred) }
                return try await runTransaction(body)
            }
        }
        if durability == .flushed, let flusher { try await flusher.flush() }
        return result
    }

    /// In WAL mode, `FULL` syncs the WAL at every commit and `NORMAL` only at checkpoints; the WAL
    /// is written in order, so a `FULL` commit also makes every `NORMAL` one before it durable.
    private func setSynchronous(for durability: CommitDurability) async throws {
        guard synchronous.withLock({ $0 }) != durability else { return }
        let mode = durability == .flushed ? "FULL" : "NORMAL"
        do {
            try await database.raw("PRAGMA synchronous = \(unsafeRaw: mode)").run()
        } catch {
            throw errors.translate(error)
        }
        synchronous.withLock { $0 = durability }
    }

    /// BEGIN IMMEDIATE takes the write lock up front (SQLite's one writer), so the transaction never
    /// fails halfway because another process started writing; the migration lock is that same lock.
    private func runTransaction<Result: Sendable>(
        _ body: @Sendable (any SQLDatabase) async throws -> Result
    ) async throws -> Result {
        let database = self.database
        do {
            try await database.raw(role == .writer ? "BEGIN IMMEDIATE" : "BEGIN").run()
        } catch {
            throw errors.translate(error)
        }
        let result: Result
        do {
            result = try await body(database)
        } catch {
            await rollback(database)
            // The body's own errors pass through; driver errors it let escape are translated.
            throw errors.translateIfDriverError(error)
        }
        do {
            try await database.raw("COMMIT").run()
        } catch {
            // A failed COMMIT (e.g. busy) leaves the transaction open.
            await rollback(database)
            throw errors.translate(error)
        }
        return result
    }

    private func rollback(_ database: any SQLDatabase) async {
        do {
            try await database.raw("ROLLBACK").run()
        } catch {
            // SQLite may have rolled back already (after an I/O error, say): nothing is left to undo.
            logger.debug("SQLite ROLLBACK failed", metadata: ["error": "\(error)"])
        }
    }

    func reading<Result: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> Result) async throws
        -> Result
    {
        guard let reader else {
            return try await inTransaction(holdingMigrationLock: false, durability: .flushed, body)
        }
        return try await reader.inTransaction(holdingMigrationLock: false, durability: .flushed, body)
    }

    func close() async throws {
        try await reader?.close()
        guard await gate.close() else { return }
        try await flusher?.close()
        try await checkpointer?.close()
        connectionClosed.withLock { $0 = true }
        let handle = self.handle
        do {
            try await threadPool.runIfActive { try handle.close() }
            try await threadPool.shutdownGracefully()
        } catch {
            throw errors.translate(error)
        }
    }

    deinit {
        // A storage dropped without close(): nothing can use the connection any more, so close it
        // in the background rather than leak the file handle.
        if !connectionClosed.withLock({ $0 }) {
            try? handle.close()
            threadPool.shutdownGracefully { _ in }
        }
    }
}
