import Foundation
public import Logging
import PostgresKit
import PostgresNIO
import SQLKit
public import Storekeeper
import Synchronization

/// The backend for several instances sharing one database: PostgreSQL through PostgresNIO's
/// connection pool.
///
/// Transactions run at READ COMMITTED; ``StorageTransaction/purchase(_:)`` reads with
/// `SELECT … FOR UPDATE`, so read-modify-write of one purchase is serialized across instances, and
/// ``StorageTransaction/lockDueNotifications(now:limit:)`` uses `FOR UPDATE SKIP LOCKED`, so
/// concurrent workers claim disjoint batches. A transaction that fails with a serialization
/// failure or deadlock (SQLSTATE 40001, 40P01) is rerun, up to five times.
///
/// The pool runs in a task of its own from ``init(url:logger:)`` until ``close()``.
public final class PostgresStorage: Storage {
    public var backend: StorageBackend { .postgresql }

    /// Where the database is (its description leaves the password out).
    public let location: PostgresLocation

    private let core: SQLStorageCore<PostgresTransactionRunner>

    /// Connects lazily to the database at `url` (`postgres://user:password@host:port/database`
    /// or `postgresql://…`, options in ``PostgresLocation``). A malformed URL throws
    /// ``StorageError/Reason/badConfiguration``; an unreachable server shows up as
    /// ``StorageError/Reason/unavailable`` on first use.
    ///
    /// Creating the storage does not migrate: call ``migrate()``.
    public convenience init(url: String, logger: Logger = Logger(label: "storekeeper.storage")) throws {
        self.init(location: try PostgresLocation(url: url), logger: logger, migrations: Migration.all)
    }

    /// Connects lazily to the database at `location`.
    public convenience init(location: PostgresLocation, logger: Logger = Logger(label: "storekeeper.storage")) {
        self.init(location: location, logger: logger, migrations: Migration.all)
    }

    init(location: PostgresLocation, logger: Logger, migrations: [Migration]) {
        self.location = location
        self.core = SQLStorageCore(
            runner: PostgresTransactionRunner(location: location, logger: logger), migrations: migrations)
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

    /// Up to a statement's worth in that one statement (``SQLStorageTransaction/insertNotifications(_:)``
    /// writes inbox rows and payloads together here), sent without BEGIN and COMMIT.
    public func insertNotifications(taking items: @Sendable () -> [InboxNotification]) async throws -> [Bool] {
        let runner = core.runner
        let outcomes = try await runner.inOneStatement { database -> [Bool]? in
            let notifications = items()
            guard notifications.count <= SQLStorageTransaction.rowsPerStatement else { return nil }
            return try await SQLStorageTransaction(database: database, flavor: runner.flavor, errors: runner.errors)
                .insertNotifications(notifications)
        }
        if let outcomes { return outcomes }
        return try await transaction { try await $0.insertNotifications(items()) }
    }

    public var notificationInsertsAtOnce: Int { 1 }

    /// Transactions rerun since this storage was created because PostgreSQL rolled them back in a
    /// conflict (a deadlock or serialization failure): each cost its work and a wait (a deadlock is
    /// found after `deadlock_timeout`, a second by default).
    public var transactionsRerun: Int { core.runner.transactionsRerun }

    /// Stops the pool and closes its connections; transactions still running fail.
    public func close() async throws {
        await core.runner.close()
    }
}

/// Runs transactions on connections leased from a `PostgresClient` pool.
final class PostgresTransactionRunner: SQLTransactionRunner {
    let flavor = SQLFlavor.postgresql
    let errors: StorageErrorTranslator
    private let location: PostgresLocation
    private let client: PostgresClient
    private let logger: Logger
    private let state: Mutex<State>
    /// Names of the statements prepared on this pool's connections; nil when none are.
    let statementNames: PostgresStatementNames?

    private struct State {
        var runTask: Task<Void, Never>?
        var closed = false
        var reruns = 0
    }

    var transactionsRerun: Int { state.withLock(\.reruns) }

    /// Key of the advisory lock migrations hold: "Storekee" in ASCII.
    static let migrationLockKey: Int64 = 0x5374_6F72_656B_6565
    static let maximumAttempts = 5

    init(location: PostgresLocation, logger: Logger) {
        self.location = location
        self.logger = logger
        self.statementNames =
            location.statementCacheSize > 0 ? PostgresStatementNames(capacity: location.statementCacheSize) : nil
        var secrets: [String] = []
        if let password = location.password {
            secrets.append(password)
            if let encoded = password.addingPercentEncoding(withAllowedCharacters: .urlPasswordAllowed) {
                secrets.append(encoded)
            }
        }
        self.errors = StorageErrorTranslator(secrets: secrets)
        var configuration = PostgresClient.Configuration(
            host: location.host, port: location.port, username: location.username, password: location.password,
            database: location.database, tls: Self.clientTLS(location.tls))
        configuration.options.connectTimeout = location.connectTimeout
        configuration.options.maximumConnections = location.poolSize
        configuration.options.additionalStartupParameters = [("application_name", "storekeeper")]
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.client = client
        self.state = Mutex(State(runTask: Task { await client.run() }))
    }

    // MARK: Transactions

    func inTransaction<Result: Sendable>(
        holdingMigrationLock: Bool, durability: CommitDurability,
        _ body: @Sendable (any SQLDatabase) async throws -> Result
    ) async throws -> Result {
        try await rerunningConflicts {
            try await self.withLeasedConnection { connection in
                try await self.runTransaction(
                    on: connection, holdingMigrationLock: holdingMigrationLock, durability: durability, body)
            }
        }
    }

    /// Runs `body`, which sends at most one statement, without BEGIN and COMMIT: PostgreSQL commits
    /// the statement as it ends, flushed as a transaction's COMMIT is (`synchronous_commit` as the
    /// server has it, `on` by default).
    func inOneStatement<Result: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> Result) async throws
        -> Result
    {
        try await rerunningConflicts {
            try await self.withLeasedConnection { connection in
                do {
                    return try await body(
                        ConnectionLossAwareDatabase(
                            connection: connection, queryLogLevel: .trace, statementNames: statementNames))
                } catch {
                    throw self.errors.translateIfDriverError(error)
                }
            }
        }
    }

    /// Runs `work` again (after a short backoff) when PostgreSQL rolled it back in a conflict, up
    /// to ``maximumAttempts`` times.
    private func rerunningConflicts<Result: Sendable>(_ work: () async throws -> Result) async throws -> Result {
        var attempt = 1
        while true {
            guard !state.withLock(\.closed) else { throw StorageError(.unavailable, "the storage is closed") }
            do {
                return try await work()
            } catch let error as StorageError where error.isRetryable && attempt < Self.maximumAttempts {
                // Another transaction won a conflict; back off a little, with jitter, and rerun.
                state.withLock { $0.reruns += 1 }
                logger.debug(
                    "PostgreSQL transaction rerun after a conflict",
                    metadata: ["attempt": "\(attempt)", "error": "\(error.detail)"])
                let backoff = 10 * (1 << attempt) + Int.random(in: 0..<20)
                try await Task.sleep(for: .milliseconds(backoff))
                attempt += 1
            }
        }
    }

    func reading<Result: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> Result) async throws
        -> Result
    {
        guard !state.withLock(\.closed) else { throw StorageError(.unavailable, "the storage is closed") }
        do {
            return try await withLeasedConnection { connection in
                try await body(
                    ConnectionLossAwareDatabase(
                        connection: connection, queryLogLevel: .trace, statementNames: statementNames))
            }
        } catch {
            throw errors.translateIfDriverError(error)
        }
    }

    /// BEGIN, the body, COMMIT (ROLLBACK if the body throws), each statement failing rather than
    /// waiting forever if the connection is lost (``ConnectionLossAwareDatabase``).
    private func runTransaction<Result: Sendable>(
        on connection: PostgresConnection, holdingMigrationLock: Bool, durability: CommitDurability,
        _ body: @Sendable (any SQLDatabase) async throws -> Result
    ) async throws -> Result {
        let database = ConnectionLossAwareDatabase(
            connection: connection, queryLogLevel: .trace, statementNames: statementNames)
        do {
            try await database.raw("BEGIN").run()
        } catch {
            throw errors.translate(error)
        }
        let result: Result
        do {
            if holdingMigrationLock {
                // Held until this transaction ends: a second instance migrating at the same
                // time waits here, then finds the migration applied.
                try await database.raw("SELECT pg_advisory_xact_lock(\(bind: Self.migrationLockKey))").run()
            }
            if durability == .deferred {
                // This transaction's commit doesn't wait for the WAL flush; later flushed
                // commits, and the WAL writer within `wal_writer_delay`, make it durable.
                try await database.raw("SET LOCAL synchronous_commit = off").run()
            }
            result = try await body(database)
        } catch {
            do {
                try await database.raw("ROLLBACK").run()
            } catch {
                // The connection is gone or broken: the server rolls back when the session ends.
                logger.debug("PostgreSQL ROLLBACK failed", metadata: ["error": "\(errors.translate(error))"])
            }
            // The body's own errors pass through as they are; driver errors it let escape (from
            // migrations' statements, say) are translated.
            throw errors.translateIfDriverError(error)
        }
        do {
            try await database.raw("COMMIT").run()
        } catch {
            throw errors.translate(error)
        }
        return result
    }

    /// Leases a connection for `work`, giving up with ``StorageError/Reason/unavailable`` when
    /// none is to be had within the acquire timeout (the pool itself would wait much longer).
    private func withLeasedConnection<Result: Sendable>(
        _ work: @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let client = self.client
        let timeout = location.acquireTimeout
        let leased = LeaseFlag()
        let leaseOutcome: Result?
        do {
            leaseOutcome = try await withoutActuallyEscaping(work) { work in
                try await withThrowingTaskGroup(of: Result?.self) { group in
                    group.addTask {
                        try await client.withConnection { connection in
                            leased.set()
                            // On the connection's event loop, where its statements' results arrive.
                            return try await withTaskExecutorPreference(
                                EventLoopTaskExecutor(eventLoop: connection.eventLoop)
                            ) { try await work(connection) }
                        }
                    }
                    group.addTask {
                        try? await Task.sleep(for: timeout)
                        if Task.isCancelled || leased.isSet { return nil }
                        throw LeaseTimeout()
                    }
                    while let next = try await group.next() {
                        if let value = next {
                            group.cancelAll()
                            return value
                        }
                    }
                    return nil
                }
            }
        } catch is LeaseTimeout {
            throw await explainLeaseTimeout()
        }
        guard let leaseOutcome else {
            throw StorageError(.unavailable, "PostgreSQL transaction ended without a result")
        }
        return leaseOutcome
    }

    // MARK: Diagnostics

    private struct LeaseTimeout: Error {}

    /// Set once a connection is leased, so the timer knows not to give up.
    private final class LeaseFlag: Sendable {
        private let flag = Mutex(false)
        func set() { flag.withLock { $0 = true } }
        var isSet: Bool { flag.withLock { $0 } }
    }

    /// Says why no connection came: one direct connection attempt tells a down or misconfigured
    /// server (its error) from a pool whose connections are all busy.
    func explainLeaseTimeout() async -> StorageError {
        let waited = location.acquireTimeout
        do {
            var configuration = PostgresConnection.Configuration(
                host: location.host, port: location.port, username: location.username, password: location.password,
                database: location.database, tls: try Self.connectionTLS(location.tls))
            configuration.options.connectTimeout = .nanoseconds(
                location.connectTimeout.components.seconds * 1_000_000_000
                    + location.connectTimeout.components.attoseconds / 1_000_000_000)
            let connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
            try? await connection.close()
        } catch {
            let reason = errors.translate(error)
            let detail = (reason as? StorageError)?.detail ?? "\(reason)"
            return StorageError(.unavailable, "cannot connect to PostgreSQL at \(location): \(detail)")
        }
        return StorageError(
            .unavailable,
            "no PostgreSQL connection to \(location) was free within \(waited) (all \(location.poolSize) busy)")
    }

    func close() async {
        let runTask = state.withLock { state in
            state.closed = true
            defer { state.runTask = nil }
            return state.runTask
        }
        runTask?.cancel()
        await runTask?.value
    }

    // MARK: TLS

    private static func tlsConfiguration(_ mode: PostgresLocation.TLSMode) -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        switch mode {
        case .disable, .prefer, .require: configuration.certificateVerification = .none
        case .verifyCA: configuration.certificateVerification = .noHostnameVerification
        case .verifyFull: configuration.certificateVerification = .fullVerification
        }
        return configuration
    }

    private static func clientTLS(_ mode: PostgresLocation.TLSMode) -> PostgresClient.Configuration.TLS {
        switch mode {
        case .disable: .disable
        case .prefer: .prefer(tlsConfiguration(mode))
        case .require, .verifyCA, .verifyFull: .require(tlsConfiguration(mode))
        }
    }

    private static func connectionTLS(_ mode: PostgresLocation.TLSMode) throws -> PostgresConnection.Configuration.TLS {
        switch mode {
        case .disable: .disable
        case .prefer: .prefer(try NIOSSLContext(configuration: tlsConfiguration(mode)))
        case .require, .verifyCA, .verifyFull: .require(try NIOSSLContext(configuration: tlsConfiguration(mode)))
        }
    }
}
