import Foundation
import Logging
import Storekeeper
import Synchronization
import Testing

@testable import StorekeeperStorage

/// ``Storage/insertNotifications(taking:)``: a webhook group stored in a write of its own, the
/// items taken once the storage can write.
@Suite struct InboxGroupInsertTests {
    /// As in a transaction: each is new unless stored already or earlier in the group, the first
    /// copy is the one kept (its body too), and the items are asked for the same ones on every ask.
    @Test(arguments: StorageBackend.available)
    func aGroupIsStoredAsATransactionStoresIt(backend: StorageBackend) async throws {
        try await TestDatabase.withFresh(backend) { storage, _ async throws in
            let fixture = DedupingGroup()
            let (stored, group) = (fixture.stored, fixture.group)
            let storedFirst = try await storage.insertNotifications(taking: { [stored] })
            #expect(storedFirst == [true])
            let asked = Mutex(0)
            let outcomes = try await storage.insertNotifications(taking: {
                asked.withLock { $0 += 1 }
                return group
            })
            #expect(outcomes == fixture.outcomes)
            #expect(asked.withLock { $0 } == 1)
            #expect(try await storage.insertNotifications(taking: { [] }) == [])
            try await fixture.expectKept(in: storage)
        }
    }

    /// More than one statement holds: stored whole all the same (in a transaction), duplicates
    /// across the statements' boundary included.
    @Test(arguments: StorageBackend.available)
    func aGroupLargerThanAStatementIsStoredWhole(backend: StorageBackend) async throws {
        try await TestDatabase.withFresh(backend) { storage, _ async throws in
            let count = SQLStorageTransaction.rowsPerStatement + 20
            let group = (0..<count).flatMap { index in
                [makeNotification("k-\(index)", body: Data("\(index)".utf8)), makeNotification("k-\(index)")]
            }
            let outcomes = try await storage.insertNotifications(taking: { group })
            #expect(outcomes == Array((0..<count).map { _ in [true, false] }.joined()))
            try await storage.transaction { transaction async throws in
                #expect(try await transaction.notificationCounts()[.pending] == count)
                for index in [
                    0, SQLStorageTransaction.rowsPerStatement / 2, SQLStorageTransaction.rowsPerStatement, count - 1,
                ] {
                    let stored = try await transaction.notification(store: .appStore, dedupeKey: "k-\(index)")
                    #expect(stored?.body == Data("\(index)".utf8))
                }
            }
        }
    }

    /// On PostgreSQL a group that fits one statement is that one statement, without BEGIN and
    /// COMMIT: counted from the statements the storage logs (at trace level).
    @Test(.enabled(if: StorageBackend.postgresURL != nil, StorageBackend.skippedPostgresMessage))
    func onPostgresAGroupIsOneStatementAlone() async throws {
        try await TestDatabase.withFresh(.postgresql) { _, database async throws in
            let statements = StatementLog()
            var logger = Logger(label: "storekeeper.storage.tests.statements") { _ in statements }
            logger.logLevel = .trace
            let storage = try await database.open(logger: logger)
            do {
                let group = (0..<10).map { makeNotification("g-\($0)") }
                statements.clear()
                #expect(try await storage.insertNotifications(taking: { group }) == Array(repeating: true, count: 10))
                let sent = statements.all
                #expect(sent.count == 1)
                #expect(sent.first?.hasPrefix("WITH inserted AS (INSERT INTO inbox ") == true)
                try await storage.transaction { transaction async throws in
                    #expect(try await transaction.notificationCounts()[.pending] == 10)
                    #expect(try await transaction.notification(store: .appStore, dedupeKey: "g-9") == group[9])
                }
            } catch {
                try? await storage.close()
                throw error
            }
            try await storage.close()
        }
    }
}

/// The SQL of every statement logged as PostgresKit logs them ("Executing query", with `sql`).
private final class StatementLog: LogHandler, Sendable {
    private let statements = Mutex<[String]>([])

    var all: [String] { statements.withLock { $0 } }
    func clear() { statements.withLock { $0.removeAll() } }

    func log(event: LogEvent) {
        guard event.message.description == "Executing query", case .string(let sql)? = event.metadata?["sql"] else {
            return
        }
        statements.withLock { $0.append(sql.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    subscript(metadataKey _: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }

    var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }

    var logLevel: Logger.Level {
        get { .trace }
        set {}
    }
}
