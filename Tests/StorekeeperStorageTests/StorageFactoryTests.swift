import Foundation
import Logging
import Storekeeper
import Testing

@testable import StorekeeperStorage

@Suite struct StorageFactoryTests {
    @Test func postgresURLsPickPostgreSQL() throws {
        for scheme in ["postgres", "postgresql", "POSTGRES"] {
            let location = try StorageFactory.Location("\(scheme)://sk:p%40ss@db.internal:6543/keeper?sslmode=require")
            guard case .postgresql(let postgres) = location else {
                Issue.record("\(scheme):// gave \(location)")
                continue
            }
            #expect(postgres.host == "db.internal")
            #expect(postgres.port == 6543)
            #expect(postgres.username == "sk")
            #expect(postgres.password == "p@ss")
            #expect(postgres.database == "keeper")
            #expect(postgres.tls == .require)
            #expect(!location.description.contains("p@ss"))
            #expect(!location.description.contains("p%40ss"))
        }
        let defaults = try PostgresLocation(url: "postgres://sk@localhost")
        #expect(defaults.port == 5432)
        #expect(defaults.database == nil)
        #expect(defaults.password == nil)
        #expect(defaults.tls == .prefer)
        #expect(defaults.statementCacheSize == 256)
        let tuned = try PostgresLocation(
            url:
                "postgres://sk:pw@localhost/db?connect_timeout=2.5&pool_size=3&acquire_timeout=4&statement_cache_size=0"
        )
        #expect(tuned.connectTimeout == .milliseconds(2_500))
        #expect(tuned.poolSize == 3)
        #expect(tuned.acquireTimeout == .seconds(4))
        #expect(tuned.statementCacheSize == 0)
    }

    @Test func pathsPickSQLite() throws {
        #expect(
            try StorageFactory.Location("/var/lib/storekeeper/db.sqlite")
                == .sqlite(path: "/var/lib/storekeeper/db.sqlite"))
        #expect(try StorageFactory.Location("data/db.sqlite") == .sqlite(path: "data/db.sqlite"))
        #expect(try StorageFactory.Location("sqlite:///var/lib/db.sqlite") == .sqlite(path: "/var/lib/db.sqlite"))
        #expect(try StorageFactory.Location("sqlite://data/db.sqlite") == .sqlite(path: "data/db.sqlite"))
        #expect(try StorageFactory.Location("sqlite:db.sqlite") == .sqlite(path: "db.sqlite"))
        #expect(try StorageFactory.Location(" :memory: ") == .sqlite(path: ":memory:"))
    }

    @Test(arguments: [
        "", "   ", "mysql://root:hunter2@db/x", "sqlite://", "postgres://", "postgres://user:hunter2@/db",
        "postgres://:hunter2@host/db", "postgres://u:hunter2@host/db?sslmode=sometimes",
        "postgres://u:hunter2@host/db?pool_size=0", "postgres://u:hunter2@host/db?connect_timeout=soon",
        "postgres://u:hunter2@host/db?statement_cache_size=-1",
        "postgres://u:hunter2@host/db?colour=blue", "postgres://u:hunter2@host:99999/db",
    ])
    func badLocationsAreExplainedWithoutThePassword(location: String) async throws {
        let error = await expectStorageError(.badConfiguration) {
            _ = try await StorageFactory.open(location, logger: Logger(label: "test"))
        }
        #expect(error?.detail.isEmpty == false)
        #expect(error?.detail.contains("hunter2") == false, "\(error?.detail ?? "")")
    }

    @Test func redactionHidesPasswordsEvenInMalformedURLs() {
        #expect(PostgresLocation.redacting("postgres://u:secret@h/db") == "postgres://u:***@h/db")
        #expect(PostgresLocation.redacting("postgres://u:se@c/ret@h:5/db") == "postgres://u:***@h:5/db")
        #expect(PostgresLocation.redacting("postgres://u@h/db") == "postgres://u@h/db")
        #expect(PostgresLocation.redacting("/plain/path") == "/plain/path")
    }

    @Test func factoryOpensSQLite() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sk-factory-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try await StorageFactory.open(
            "sqlite://\(directory.appendingPathComponent("db.sqlite").path)", logger: Logger(label: "test"))
        #expect(storage.backend == .sqlite)
        #expect(try await storage.migrate() == Migration.all.map(\.version))
        try await storage.close()
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("db.sqlite").path))
    }

    @Test func inMemorySQLiteWorksForOneStorage() async throws {
        let storage = try await SQLiteStorage(path: ":memory:")
        try await storage.migrate()
        try await storage.transaction { transaction async throws in
            try await transaction.insertCustomer(makeCustomer("m"))
        }
        #expect(try await storage.transaction { try await $0.customer(CustomerID("m")) } != nil)
        try await storage.close()
    }

    @Test func unopenableSQLiteFileIsUnavailable() async throws {
        await expectStorageError(.unavailable) {
            _ = try await SQLiteStorage(path: "/nonexistent-\(UUID().uuidString)/deeper/db.sqlite")
        }
    }

    @Test func nestedSQLiteTransactionIsRefusedInsteadOfDeadlocking() async throws {
        let storage = try await SQLiteStorage(path: ":memory:")
        try await storage.migrate()
        await expectStorageError(.unavailable) {
            try await storage.transaction { _ in
                try await storage.transaction { _ in }
            }
        }
        try await storage.close()
    }

    @Test func unreachablePostgresIsUnavailableAndKeepsThePasswordSecret() async throws {
        // Port 1 on loopback: nothing listens there, so the connection is refused at once.
        var quiet = Logger(label: "test")
        quiet.logLevel = .critical
        let storage = try PostgresStorage(
            url: "postgres://sk:hunter2@127.0.0.1:1/db?sslmode=disable&connect_timeout=1&acquire_timeout=1",
            logger: quiet)
        #expect(storage.backend == .postgresql)
        #expect(!storage.location.description.contains("hunter2"))
        let error = await expectStorageError(.unavailable) { try await storage.migrate() }
        #expect(error?.detail.contains("127.0.0.1") == true, "\(error?.detail ?? "")")
        #expect(error?.detail.contains("hunter2") == false)
        try await storage.close()
        await expectStorageError(.unavailable) { _ = try await storage.schemaVersion() }
    }
}
