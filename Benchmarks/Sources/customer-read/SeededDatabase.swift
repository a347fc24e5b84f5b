import BenchmarkFigures
import Foundation
import Logging
import PostgresNIO
import SQLiteNIO
import StorekeeperStorage

/// A Storekeeper database seeded with ``SeedSQL``: migrated by Storekeeper itself, then filled with
/// generated rows in one transaction through a plain connection. Seeded databases are kept between
/// runs (a SQLite file in the cache directory, a PostgreSQL database named after its size and seed
/// version) and reused while their seed version matches.
struct SeededDatabase: Sendable {
    enum Backend: Sendable {
        case sqlite(cacheDirectory: URL)
        /// A server URL naming a database to connect to (the benchmark's databases are created next to it).
        case postgresql(serverURL: String)

        var name: String {
            switch self {
            case .sqlite: "sqlite"
            case .postgresql: "postgresql"
            }
        }
    }

    /// What a seeded database holds, recorded in its `benchmark_seed` table.
    struct Contents: Sendable {
        var customers: Int
        var purchases: Int
        var transactions: Int
        var stateChanges: Int
        var ledgerEntries: Int
        /// How long seeding took when it was done.
        var seedSeconds: Double
    }

    let backend: Backend
    /// The storage URL or path the server opens.
    let storageURL: String
    let contents: Contents
    /// Whether this run seeded it (false: reused from an earlier run).
    let seededNow: Bool

    /// The seeded database with `customers` customers, seeding it if no matching one is kept.
    static func prepare(_ backend: Backend, customers: Int, logger: Logger) async throws -> SeededDatabase {
        switch backend {
        case .sqlite(let cacheDirectory):
            return try await prepareSQLite(cacheDirectory: cacheDirectory, customers: customers, logger: logger)
        case .postgresql(let serverURL):
            return try await preparePostgres(serverURL: serverURL, customers: customers, logger: logger)
        }
    }

    // MARK: SQLite

    private static func prepareSQLite(cacheDirectory: URL, customers: Int, logger: Logger) async throws
        -> SeededDatabase
    {
        try FileManager.default.createDirectory(at: cacheDirectory, withIntermediateDirectories: true)
        let path = cacheDirectory.appendingPathComponent("customer-read-\(customers)-seed\(SeedSQL.version).sqlite")
            .path
        if FileManager.default.fileExists(atPath: path) {
            let connection = try await SQLiteSession.open(path)
            let contents = try? await readContents(connection)
            try await connection.close()
            if let contents, contents.customers == customers {
                return SeededDatabase(
                    backend: .sqlite(cacheDirectory: cacheDirectory), storageURL: path, contents: contents,
                    seededNow: false)
            }
        }
        // Seeded under another name and renamed when complete: an interrupted run leaves no file
        // that looks seeded.
        let partial = path + ".partial"
        for suffix in ["", "-wal", "-shm"] {
            try? FileManager.default.removeItem(atPath: path + suffix)
            try? FileManager.default.removeItem(atPath: partial + suffix)
        }
        let storage = try await StorageFactory.open(partial, logger: logger)
        try await storage.migrate()
        try await storage.close()
        let started = ContinuousClock.now
        let connection = try await SQLiteSession.open(partial)
        do {
            // A cache that can be rebuilt: no rollback journal, no syncs while seeding.
            for pragma in [
                "PRAGMA journal_mode = OFF", "PRAGMA synchronous = OFF", "PRAGMA cache_size = -1000000",
                "PRAGMA temp_store = MEMORY",
            ] {
                try await connection.execute(pragma)
            }
            try await connection.execute("BEGIN")
            let indexes = try await connection.rows(
                "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
            try await seed(connection, dialect: .sqlite, customers: customers, indexes: indexes)
            try await recordContents(connection, customers: customers, since: started)
            try await connection.execute("COMMIT")
            let contents = try await readContents(connection)
            try await connection.close()
            try FileManager.default.moveItem(atPath: partial, toPath: path)
            return SeededDatabase(
                backend: .sqlite(cacheDirectory: cacheDirectory), storageURL: path, contents: contents, seededNow: true)
        } catch {
            try? await connection.close()
            throw error
        }
    }

    // MARK: PostgreSQL

    private static func preparePostgres(serverURL: String, customers: Int, logger: Logger) async throws
        -> SeededDatabase
    {
        // STOREKEEPER_BENCH_POSTGRES_PREFIX names another set of databases (a copy, made with
        // `CREATE DATABASE … TEMPLATE …`, that one branch's migrations may change freely).
        let prefix =
            ProcessInfo.processInfo.environment["STOREKEEPER_BENCH_POSTGRES_PREFIX"].flatMap {
                $0.isEmpty ? nil : $0
            } ?? "storekeeper_bench_customer_read"
        let name = "\(prefix)_\(customers)_seed\(SeedSQL.version)"
        guard var components = URLComponents(string: serverURL) else {
            throw BenchmarkError("STOREKEEPER_BENCH_POSTGRES_URL is not a URL")
        }
        components.path = "/" + name
        guard let databaseURL = components.string else { throw BenchmarkError("cannot name database \(name)") }
        let admin = try await PostgresSession.connect(serverURL, logger: logger)
        let exists = try await admin.integers("SELECT 1 FROM pg_database WHERE datname = '\(name)'").count == 1
        if exists {
            let connection = try await PostgresSession.connect(databaseURL, logger: logger)
            let seeded =
                try await connection.integers(
                    "SELECT CAST(COUNT(to_regclass('benchmark_seed')) AS BIGINT)"
                ).first == 1
            var contents: Contents?
            if seeded { contents = try? await readContents(connection) }
            try await connection.close()
            if let contents, contents.customers == customers {
                try await admin.close()
                return SeededDatabase(
                    backend: .postgresql(serverURL: serverURL), storageURL: databaseURL, contents: contents,
                    seededNow: false)
            }
            try await admin.execute("DROP DATABASE \(name) WITH (FORCE)")
        }
        try await admin.execute("CREATE DATABASE \(name)")
        try await admin.close()
        let storage = try await StorageFactory.open(databaseURL, logger: logger)
        try await storage.migrate()
        try await storage.close()
        let started = ContinuousClock.now
        let connection = try await PostgresSession.connect(databaseURL, logger: logger)
        do {
            try await connection.execute("BEGIN")
            try await connection.execute("SET LOCAL maintenance_work_mem = '512MB'")
            try await connection.execute("SET LOCAL work_mem = '256MB'")
            // Indexes that are not constraints are dropped while seeding and rebuilt from their
            // own definitions.
            let indexes = try await connection.rows(
                """
                SELECT indexname, indexdef FROM pg_indexes AS i
                WHERE schemaname = current_schema()
                  AND NOT EXISTS (SELECT 1 FROM pg_constraint AS c WHERE c.conname = i.indexname)
                """)
            try await seed(connection, dialect: .postgresql, customers: customers, indexes: indexes)
            try await recordContents(connection, customers: customers, since: started)
            try await connection.execute("COMMIT")
            // What autovacuum does soon after a bulk load in a running deployment: statistics for
            // the planner and visibility maps for index-only scans.
            try await connection.execute("VACUUM ANALYZE")
            let contents = try await readContents(connection)
            try await connection.close()
            return SeededDatabase(
                backend: .postgresql(serverURL: serverURL), storageURL: databaseURL, contents: contents,
                seededNow: true)
        } catch {
            try? await connection.close()
            throw error
        }
    }

    // MARK: Seeding

    /// Drops `indexes` (name, definition), runs the seed statements, recreates the indexes.
    private static func seed(
        _ connection: some SQLSession, dialect: SeedSQL.Dialect, customers: Int, indexes: [[String]]
    ) async throws {
        for index in indexes { try await connection.execute("DROP INDEX \(index[0])") }
        for statement in SeedSQL(dialect: dialect, customers: customers).statements {
            try await connection.execute(statement)
        }
        for index in indexes { try await connection.execute(index[1]) }
    }

    private static func recordContents(
        _ connection: some SQLSession, customers: Int, since started: ContinuousClock.Instant
    ) async throws {
        let elapsed = seconds(ContinuousClock.now - started)
        try await connection.execute(
            """
            CREATE TABLE benchmark_seed (
                version BIGINT NOT NULL, customers BIGINT NOT NULL, purchases BIGINT NOT NULL,
                transactions BIGINT NOT NULL, state_changes BIGINT NOT NULL, ledger_entries BIGINT NOT NULL,
                seed_milliseconds BIGINT NOT NULL
            )
            """)
        try await connection.execute(
            """
            INSERT INTO benchmark_seed
            SELECT \(SeedSQL.version), (SELECT COUNT(*) FROM customers), (SELECT COUNT(*) FROM purchases),
                   (SELECT COUNT(*) FROM transactions), (SELECT COUNT(*) FROM state_changes),
                   (SELECT COUNT(*) FROM ledger_entries), \(Int64(elapsed * 1000))
            """)
    }

    private static func readContents(_ connection: some SQLSession) async throws -> Contents {
        let values = try await connection.integerRow(
            """
            SELECT version, customers, purchases, transactions, state_changes, ledger_entries, seed_milliseconds
            FROM benchmark_seed
            """)
        guard values.count == 7, values[0] == SeedSQL.version else {
            throw BenchmarkError("the database was seeded by another seed version")
        }
        return Contents(
            customers: values[1], purchases: values[2], transactions: values[3], stateChanges: values[4],
            ledgerEntries: values[5], seedSeconds: Double(values[6]) / 1000)
    }
}

/// Plain SQL on one connection, for seeding and checks.
protocol SQLSession: Sendable {
    func execute(_ sql: String) async throws
    /// Each row's columns as text.
    func rows(_ sql: String) async throws -> [[String]]
    /// The first column of each row, as integers.
    func integers(_ sql: String) async throws -> [Int]
    /// The columns of the first row, as integers.
    func integerRow(_ sql: String) async throws -> [Int]
    func close() async throws
}

struct SQLiteSession: SQLSession {
    let connection: SQLiteConnection

    static func open(_ path: String) async throws -> SQLiteSession {
        SQLiteSession(connection: try await SQLiteConnection.open(storage: .file(path: path)))
    }

    func execute(_ sql: String) async throws {
        _ = try await connection.query(sql, [])
    }

    func rows(_ sql: String) async throws -> [[String]] {
        try await connection.query(sql, []).map { row in row.columns.map { $0.data.string ?? "" } }
    }

    func integers(_ sql: String) async throws -> [Int] {
        try await connection.query(sql, []).compactMap { $0.columns.first?.data.integer.map { Int($0) } }
    }

    func integerRow(_ sql: String) async throws -> [Int] {
        guard let row = try await connection.query(sql, []).first else { return [] }
        return row.columns.compactMap { $0.data.integer.map { Int($0) } }
    }

    func close() async throws {
        try await connection.close()
    }
}

struct PostgresSession: SQLSession {
    let connection: PostgresConnection
    let logger: Logger

    static func connect(_ url: String, logger: Logger) async throws -> PostgresSession {
        let location = try PostgresLocation(url: url)
        let configuration = PostgresConnection.Configuration(
            host: location.host, port: location.port, username: location.username, password: location.password,
            database: location.database, tls: .disable)
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
        return PostgresSession(connection: connection, logger: logger)
    }

    func execute(_ sql: String) async throws {
        _ = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger).collect()
    }

    func rows(_ sql: String) async throws -> [[String]] {
        try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger).collect().map { row in
            row.makeRandomAccess().map { cell in (try? cell.decode(String.self)) ?? "" }
        }
    }

    func integers(_ sql: String) async throws -> [Int] {
        try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger).collect().compactMap { row in
            try? row.makeRandomAccess()[0].decode(Int.self)
        }
    }

    func integerRow(_ sql: String) async throws -> [Int] {
        guard let row = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger).collect().first
        else { return [] }
        return row.makeRandomAccess().compactMap { try? $0.decode(Int.self) }
    }

    func close() async throws {
        try await connection.close()
    }
}
