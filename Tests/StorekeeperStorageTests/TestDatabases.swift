import Foundation
import Logging
import PostgresNIO
import TestSupport
import Testing

@testable import StorekeeperStorage

/// What the storage tests add to the backends they run against (`StorageBackend.available`,
/// from TestSupport, lists them).
extension StorageBackend {
    /// The PostgreSQL server tests create their databases on (`.ci/postgres.sh` starts one).
    static let postgresURL: String? = PostgresAdmin.serverURL

    static let skippedPostgresMessage: Comment = """
        STOREKEEPER_TEST_POSTGRES_URL is not set: the PostgreSQL half of the storage conformance suite is skipped \
        (run `.ci/postgres.sh` and export its URL to run it)
        """
}

/// One fresh, empty database for one test, and a way to open more storages on it.
struct TestDatabase: Sendable {
    let backend: StorageBackend
    /// The migrations a storage opened here knows.
    let migrations: [Migration]
    private let opener: @Sendable ([Migration], Logger) async throws -> any Storage

    init(
        backend: StorageBackend, migrations: [Migration],
        opener: @escaping @Sendable ([Migration], Logger) async throws -> any Storage
    ) {
        self.backend = backend
        self.migrations = migrations
        self.opener = opener
    }

    /// Another storage on the same database (for concurrency and multi-instance tests), logging
    /// to `logger` (its statements at trace level).
    func open(migrations: [Migration]? = nil, logger: Logger = TestDatabase.logger) async throws -> any Storage {
        try await opener(migrations ?? self.migrations, logger)
    }

    static let logger = Logger(label: "storekeeper.storage.tests")

    /// Runs `body` with a storage on a database nobody else uses, migrated unless `migrated` is
    /// false; cleans up afterwards. SQLite: a file in a new temporary directory. PostgreSQL: a new
    /// database on the test server, dropped afterwards.
    static func withFresh(
        _ backend: StorageBackend, migrated: Bool = true, migrations: [Migration] = Migration.all,
        _ body: (any Storage, TestDatabase) async throws -> Void
    ) async throws {
        switch backend {
        case .sqlite:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "storekeeper-storage-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let path = directory.appendingPathComponent("test.sqlite").path
            let database = TestDatabase(backend: backend, migrations: migrations) { migrations, logger in
                try await SQLiteStorage(path: path, logger: logger, migrations: migrations)
            }
            try await run(database, migrated: migrated, body)
        case .postgresql:
            guard let url = StorageBackend.postgresURL else {
                Issue.record("PostgreSQL tests ran without STOREKEEPER_TEST_POSTGRES_URL")
                return
            }
            var location = try PostgresLocation(url: url)
            // Parallel tests each hold a pool: keep them small.
            location.poolSize = 6
            let name = "storekeeper_test_\(UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""))"
            try await PostgresAdmin(location: location).execute("CREATE DATABASE \(name)")
            var testLocation = location
            testLocation.database = name
            let database = TestDatabase(backend: backend, migrations: migrations) { [testLocation] migrations, logger in
                PostgresStorage(location: testLocation, logger: logger, migrations: migrations)
            }
            do {
                try await run(database, migrated: migrated, body)
            } catch {
                try? await PostgresAdmin(location: location).dropDatabase(name)
                throw error
            }
            // A drop still refused after its retries (`dropDatabase`) leaves an unused database
            // behind; it doesn't undo what the test showed.
            try? await PostgresAdmin(location: location).dropDatabase(name)
        }
    }

    private static func run(
        _ database: TestDatabase, migrated: Bool, _ body: (any Storage, TestDatabase) async throws -> Void
    ) async throws {
        let storage = try await database.open()
        do {
            if migrated { try await storage.migrate() }
            try await body(storage, database)
        } catch {
            try? await storage.close()
            throw error
        }
        try await storage.close()
    }
}
