import Foundation
import Logging
import NIOPosix
import SQLKit
import SQLiteKit
import SQLiteNIO
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
                let queued = gate.waiting + 1
                group.addTask {
                    try await gate.enter(lane)
                    order.append(name)
                    gate.leave()
                }
                // Each waiter is queued before the next is started.
                while gate.waiting < queued { try await Task.sleep(for: .milliseconds(1)) }
            }
            try await queue("b1", .background)
            try await queue("b2", .background)
            for index in 1...6 { try await queue("u\(index)", .urgent) }
            gate.leave()
            try await group.waitForAll()
        }
        #expect(order.names == ["u1", "u2", "u3", "u4", "b1", "u5", "u6", "b2"])
    }

    /// The writer's commits leave checkpoints to a connection of their own, and the WAL stays
    /// bounded all the same: once copied back it starts over from its beginning.
    @Test func theWALIsCheckpointedBesideTheWriterAndStaysBounded() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("checkpoints-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("storekeeper.sqlite").path
        let storage = try await SQLiteStorage(path: path)
        let checkpointer = try #require(storage.checkpointer)
        try await storage.transaction { transaction async throws in
            let database = try #require(transaction as? SQLStorageTransaction).database
            try await database.raw("CREATE TABLE pages (b BLOB NOT NULL)").run()
        }
        // About a page per row: 15,000 pages in all, past the size at which the writer would
        // checkpoint inline (8,000) had the WAL never started over.
        let (commits, rowsPerCommit) = (150, 100)
        for _ in 0..<commits {
            try await storage.transaction(durability: .deferred) { transaction async throws in
                let database = try #require(transaction as? SQLStorageTransaction).database
                for _ in 0..<rowsPerCommit {
                    try await database.raw("INSERT INTO pages VALUES (randomblob(4000))").run()
                }
            }
        }
        #expect(checkpointer.completedCheckpoints >= 5, "\(checkpointer.completedCheckpoints) checkpoints")
        let walBytes = try #require(
            try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int)
        let frameBytes = 4096 + 24
        let bound = (SQLiteCheckpointer.inlineFrames + 2 * rowsPerCommit) * frameBytes
        #expect(walBytes <= bound, "the WAL grew to \(walBytes / frameBytes) frames")
        let count = try await storage.read { transaction async throws in
            let database = try #require(transaction as? SQLStorageTransaction).database
            return try await database.raw("SELECT COUNT(*) AS n FROM pages").first()?.decode(column: "n", as: Int.self)
        }
        #expect(count == commits * rowsPerCommit)
        try await storage.close()
    }

    /// SQLite runs one checkpoint at a time. Past the inline bound the writer waits for a running
    /// checkpoint and then checkpoints itself: finding it busy and going on let the WAL grow for as
    /// long as that checkpoint took.
    @Test func pastTheBoundTheWriterWaitsForTheRunningCheckpointThenCheckpointsItself() async throws {
        let (checkpointerThread, writerThread) = (NIOThreadPool(numberOfThreads: 1), NIOThreadPool(numberOfThreads: 1))
        checkpointerThread.start()
        writerThread.start()
        let release = DispatchSemaphore(value: 0)
        let events = EntryOrder()
        let checkpointer = SQLiteCheckpointer(
            threadPool: checkpointerThread, logger: Logger(label: "test"),
            checkpoint: {
                events.append("running")
                // Bounded, so that a second checkpoint (which nothing releases) fails the test
                // instead of holding it; generous, since the release waits for the writer, and under
                // the whole suite's load this test took 23 s in one CI run.
                events.append(release.wait(timeout: .now() + 240) == .success ? "ended" : "never released")
                return 1
            }, closeConnection: {})
        // Asks for a checkpoint on the checkpointer's thread; too few frames to checkpoint inline.
        checkpointer.writerCommitted(walFrames: SQLiteCheckpointer.framesPerCheckpoint) { events.append("inline") }
        // Both waits bounded: a checkpointer that never starts, or a writer that never waits, fails
        // the test rather than holding the suite.
        let deadline = ContinuousClock.now + .seconds(240)
        while events.names.isEmpty, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        try #require(events.names == ["running"], "the asked-for checkpoint never started")
        let writer = Task {
            try await writerThread.runIfActive {
                checkpointer.writerCommitted(walFrames: SQLiteCheckpointer.inlineFrames) { events.append("inline") }
            }
        }
        // Released only once the writer waits: released before, the checkpoint would end first and
        // the writer's request start another one (a test that waited 100 ms for the writer hung
        // that way on a loaded machine, its checkpoint hook waiting for a second release).
        while !checkpointer.writerIsWaiting, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(1))
        }
        let writerWaited = checkpointer.writerIsWaiting
        #expect(events.names == ["running"])
        release.signal()
        try await writer.value
        #expect(writerWaited, "the writer past the inline bound never waited for the running checkpoint")
        #expect(events.names == ["running", "ended", "inline"])
        #expect(checkpointer.completedCheckpoints == 1)
        try await checkpointer.close()
        try await writerThread.shutdownGracefully()
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

    /// The binds taken by their concrete type are what SQLiteKit's encoder makes of them, `nil` of
    /// any optional type included; a type not taken so still goes through the encoder.
    @Test func bindsTakenByTypeAreWhatSQLiteKitsEncoderMakes() throws {
        let handle = try SQLiteHandle(path: ":memory:")
        defer { try? handle.close() }
        let database = SQLiteHandleDatabase(handle: handle, logger: .init(label: "test"))
        let encoder = SQLiteDataEncoder()
        let binds: [any Encodable & Sendable] = [
            "", "ü\u{0}x", Int.min, Int.max, 0, Int64.min, Int64.max, -0.5, Double.infinity, true, false,
            Data(), Data([0, 1, 255]), "some" as String?, nil as String?, 7 as Int?, nil as Int?, nil as Int64?,
            2.5 as Double?, nil as Bool?, true as Bool?, Data([9]) as Data?, nil as Data?,
            UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)), Int32(-3), [1, 2],
        ]
        for bind in binds {
            #expect(try database.sqliteData(bind) == encoder.encode(bind), "\(type(of: bind)) \(bind)")
        }
        #expect(try database.sqliteData(SQLiteData.integer(4)) == .integer(4))
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
