import Foundation
import SQLKit
import Synchronization
import Testing

@testable import StorekeeperStorage

/// The SQLite connection layer below the storage: the writer's two-lane gate and the direct
/// statement runner (its statement cache and value round trips).
@Suite struct SQLiteConnectionTests {
    /// Urgent waiters (flushed commits someone waits for) go before background ones, but a
    /// background waiter still gets every fifth turn while both lanes wait.
    @Test func urgentWaitersGoFirstWithoutStarvingBackgroundWork() async throws {
        let gate = TransactionGate()
        try await gate.enter(.background)  // held while everyone queues
        let order = EntryOrder()
        try await withThrowingTaskGroup(of: Void.self) { group in
            func queue(_ name: String, _ lane: TransactionGate.Lane) async throws {
                let queued = await gate.waiting + 1
                group.addTask {
                    try await gate.enter(lane)
                    order.append(name)
                    await gate.leave()
                }
                // Each waiter is queued before the next is started.
                while await gate.waiting < queued { try await Task.sleep(for: .milliseconds(1)) }
            }
            try await queue("b1", .background)
            try await queue("b2", .background)
            for index in 1...6 { try await queue("u\(index)", .urgent) }
            await gate.leave()
            try await group.waitForAll()
        }
        #expect(order.names == ["u1", "u2", "u3", "u4", "b1", "u5", "u6", "b2"])
    }

    @Test func valuesRoundTripAndCachedStatementsRebindEveryParameter() async throws {
        let handle = try SQLiteHandle(path: ":memory:")
        defer { try? handle.close() }
        let database = SQLiteHandleDatabase(handle: handle, logger: .init(label: "test"))
        try await database.raw("CREATE TABLE t (i INTEGER, f REAL, s TEXT, b BLOB, n TEXT)").run()
        for index in 0..<3 {
            // The same SQL each time: the cached statement gets fresh values, none left over.
            try await database.raw(
                """
                INSERT INTO t VALUES (\(bind: index), \(bind: Double(index) / 2), \(bind: "ü\(index)\u{0}x"),
                \(bind: Data(repeating: UInt8(index), count: index)), \(bind: index == 1 ? "one" : nil as String?))
                """
            ).run()
        }
        let rows = try await database.raw("SELECT i, f, s, b, n, typeof(b) AS bt FROM t ORDER BY i").all()
        #expect(rows.count == 3)
        for (index, row) in rows.enumerated() {
            #expect(try row.decode(column: "i", as: Int.self) == index)
            #expect(try row.decode(column: "f", as: Double.self) == Double(index) / 2)
            #expect(try row.decode(column: "s", as: String.self) == "ü\(index)\u{0}x")
            #expect(try row.decode(column: "b", as: Data.self) == Data(repeating: UInt8(index), count: index))
            // An empty blob is stored as a blob, not as NULL.
            #expect(try row.decode(column: "bt", as: String.self) == "blob")
            #expect(try row.decode(column: "n", as: String?.self) == (index == 1 ? "one" : nil))
            #expect(!row.contains(column: "missing"))
        }
    }

    @Test func errorsCarrySQLitesCodeAndTwoStatementsInOneQueryAreRefused() async throws {
        let handle = try SQLiteHandle(path: ":memory:")
        defer { try? handle.close() }
        let database = SQLiteHandleDatabase(handle: handle, logger: .init(label: "test"))
        try await database.raw("CREATE TABLE t (k TEXT PRIMARY KEY)").run()
        try await database.raw("INSERT INTO t VALUES ('a')").run()
        await #expect {
            try await database.raw("INSERT INTO t VALUES ('a')").run()
        } throws: { ($0 as? SQLiteCallError)?.primaryCode == 19 }
        await #expect {
            try await database.raw("INSERT INTO t VALUES ('b'); DELETE FROM t").run()
        } throws: { ($0 as? SQLiteCallError)?.message.contains("more than one statement") == true }
        // The refused query changed nothing; a trailing semicolon alone is fine.
        let count = try await database.raw("SELECT COUNT(*) AS c FROM t;").first()?.decode(column: "c", as: Int.self)
        #expect(count == 1)
    }
}

private final class EntryOrder: Sendable {
    private let entries = Mutex<[String]>([])
    func append(_ name: String) { entries.withLock { $0.append(name) } }
    var names: [String] { entries.withLock { $0 } }
}
