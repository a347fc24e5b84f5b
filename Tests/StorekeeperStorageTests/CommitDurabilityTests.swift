import Foundation
import SQLKit
import Storekeeper
import Testing

@testable import StorekeeperStorage

/// A deferred commit is a commit whose flush the database skips (SQLite `synchronous = NORMAL`,
/// PostgreSQL `synchronous_commit = off`); every other transaction flushes (SQLite: a sync of the
/// WAL after the commit, by ``SQLiteWALFlusher``; PostgreSQL: the server's own setting). Read
/// back inside each transaction, so the test fails if a deferred transaction flushed or a flushed
/// one didn't.
@Suite struct CommitDurabilityTests {
    @Test(arguments: StorageBackend.available)
    func eachTransactionRunsWithTheFlushItAskedFor(_ backend: StorageBackend) async throws {
        try await TestDatabase.withFresh(backend) { fresh, database in
            // The test server runs with synchronous_commit off for speed; this database gets the
            // production default, so that a flushed transaction shows it.
            if backend == .postgresql {
                try await fresh.transaction { transaction in
                    let sql = try #require(transaction as? SQLStorageTransaction).database
                    let name = try #require(try await sql.raw("SELECT current_database() AS name").first())
                        .decode(column: "name", as: String.self)
                    try await sql.raw("ALTER DATABASE \(ident: name) SET synchronous_commit = on").run()
                }
            }
            let storage = try await database.open()
            defer { Task { try? await storage.close() } }
            // Alternating, so a setting left over from the previous transaction would show.
            for durability in [CommitDurability.deferred, .flushed, .deferred, .deferred, .flushed] {
                let setting = try await storage.transaction(durability: durability) { transaction in
                    try await Self.flushSetting(backend, in: transaction)
                }
                #expect(setting == Self.expected(backend, durability), "\(durability)")
            }
            // The plain form flushes.
            let plain = try await storage.transaction { try await Self.flushSetting(backend, in: $0) }
            #expect(plain == Self.expected(backend, .flushed))
        }
    }

    @Test(arguments: StorageBackend.available)
    func aDeferredCommitIsCommitted(_ backend: StorageBackend) async throws {
        try await TestDatabase.withFresh(backend) { storage, database in
            let customer = Customer(id: CustomerID(rawValue: "deferred"), appAccountToken: UUID(), createdAt: Date())
            try await storage.transaction(durability: .deferred) { try await $0.insertCustomer(customer) }
            // Seen from another connection (another storage on the same database).
            let other = try await database.open()
            let read = try await other.transaction { try await $0.customer(customer.id) }
            #expect(read?.id == customer.id)
            try await other.close()
        }
    }

    /// On a SQLite file every commit skips SQLite's own sync; a flushed one returns after a sync
    /// of the WAL by ``SQLiteWALFlusher``, shared by the commits waiting together, and a deferred
    /// one asks for none.
    @Test func aFlushedSQLiteCommitWaitsForAWALSyncAndADeferredOneForNone() async throws {
        try await TestDatabase.withFresh(.sqlite) { storage, _ in
            let sqlite = try #require(storage as? SQLiteStorage)
            let flusher = try #require(sqlite.walFlusher)
            @Sendable func customer(_ name: String) -> Customer {
                Customer(id: CustomerID(rawValue: name), appAccountToken: UUID(), createdAt: Date())
            }
            let before = flusher.completedSyncs
            try await storage.transaction(durability: .deferred) { try await $0.insertCustomer(customer("deferred")) }
            #expect(flusher.completedSyncs == before)
            try await storage.transaction(durability: .flushed) { try await $0.insertCustomer(customer("flushed")) }
            #expect(flusher.completedSyncs == before + 1)
            let concurrent = 20
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<concurrent {
                    group.addTask {
                        try await storage.transaction { try await $0.insertCustomer(customer("c\(index)")) }
                    }
                }
                try await group.waitForAll()
            }
            let shared = flusher.completedSyncs - (before + 1)
            #expect(shared >= 1 && shared <= concurrent)
            #expect(try await storage.read { try await $0.customer(CustomerID(rawValue: "c19")) } != nil)
        }
    }

    /// After the storage closes, a flush is refused instead of waiting for a sync that never comes.
    @Test func aClosedFlusherRefuses() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("flusher-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try await SQLiteStorage(path: directory.appendingPathComponent("db.sqlite").path)
        try await storage.migrate()
        let flusher = try #require(storage.walFlusher)
        try await flusher.flush()
        try await storage.close()
        await #expect(throws: StorageError.self) { try await flusher.flush() }
    }

    static func flushSetting(_ backend: StorageBackend, in transaction: any StorageTransaction) async throws -> String {
        let database = try #require(transaction as? SQLStorageTransaction).database
        switch backend {
        case .sqlite:
            let row = try #require(try await database.raw("PRAGMA synchronous").first())
            return String(try row.decode(column: "synchronous", as: Int.self))
        case .postgresql:
            let row = try #require(try await database.raw("SHOW synchronous_commit").first())
            return try row.decode(column: "synchronous_commit", as: String.self)
        }
    }

    /// SQLite reports `synchronous` as a number: 1 is NORMAL. On a file in WAL mode every commit
    /// runs NORMAL: a flushed one waits for ``SQLiteWALFlusher``'s sync after its commit instead.
    static func expected(_ backend: StorageBackend, _ durability: CommitDurability) -> String {
        switch (backend, durability) {
        case (.sqlite, _): "1"
        case (.postgresql, .flushed): "on"
        case (.postgresql, .deferred): "off"
        }
    }
}
