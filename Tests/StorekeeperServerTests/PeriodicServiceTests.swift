import Foundation
import Logging
import SQLKit
import ServiceLifecycle
import StoreCore
import Synchronization
import Testing

@testable import StorekeeperServer
@testable import StorekeeperStorage

/// Two instances sharing one database run a leased background job one at a time: the holder's
/// rounds run, the other's are skipped, and the other takes over when the holder stops.
@Suite struct PeriodicServiceTests {
    @Test func aLeasedJobRunsOnOneInstanceAtATimeAndMovesWhenItsHolderStops() async throws {
        try await TemporaryStorage.withSQLite { storage in
            let runs = Mutex<[String]>([])
            let skipped = Mutex<Set<String>>([])
            let logger = Logger(label: "test")
            func service(_ holder: String) -> PeriodicService {
                let lease = JobLease(
                    name: "sweep", holder: holder, duration: 60, storage: storage, clock: SystemWallClock())
                return PeriodicService("sweep", every: 0.02, lease: lease, logger: logger) {
                    runs.withLock { $0.append(holder) }
                } heldElsewhere: {
                    skipped.withLock { _ = $0.insert(holder) }
                }
            }
            // Each instance in a service group of its own, stopped the way `serve` stops it.
            func group(_ holder: String) -> ServiceGroup {
                ServiceGroup(services: [service(holder)], gracefulShutdownSignals: [], logger: logger)
            }
            let (firstGroup, secondGroup) = (group("first"), group("second"))
            let first = Task { try await firstGroup.run() }
            try await waitUntil { runs.withLock { !$0.isEmpty } }
            let second = Task { try await secondGroup.run() }
            // The other instance's skipped rounds say so (it drops the job's gauges then).
            try await waitUntil { skipped.withLock { $0.contains("second") } }
            try await Task.sleep(for: .milliseconds(300))
            #expect(runs.withLock { Set($0) } == ["first"])
            #expect(skipped.withLock { $0 } == ["second"])
            // The holder shuts down (and gives the lease up): the other instance takes the job over.
            await firstGroup.triggerGracefulShutdown()
            _ = await first.result
            try await waitUntil { runs.withLock { $0.contains("second") } }
            await secondGroup.triggerGracefulShutdown()
            _ = await second.result
            let order = runs.withLock { $0 }
            let firstSecond = try #require(order.firstIndex(of: "second"))
            #expect(order[firstSecond...].allSatisfy { $0 == "second" })
        }
    }

    /// A round that outlasts the lease (a catch-up waiting for quota turns) keeps it: its holder
    /// renews it while the round runs, so the other live instance does not take the job mid-round.
    @Test func aRoundLongerThanTheLeaseKeepsItUntilItEnds() async throws {
        try await TemporaryStorage.withSQLite { storage in
            let events = Mutex<[String]>([])
            let logger = Logger(label: "test")
            func group(_ holder: String, roundLength: Duration) -> ServiceGroup {
                // Renewed every 2 s, each renewal with 4 s to land: with a 2-second lease, a
                // renewal delayed past 1.3 s (the whole suite and a release build running) lost it.
                let lease = JobLease(
                    name: "catch-up", holder: holder, duration: 6, storage: storage, clock: SystemWallClock())
                let service = PeriodicService("catch-up", every: 0.02, lease: lease, logger: logger) {
                    events.withLock { $0.append("\(holder) start") }
                    try await Task.sleep(for: roundLength)
                    events.withLock { $0.append("\(holder) end") }
                }
                return ServiceGroup(services: [service], gracefulShutdownSignals: [], logger: logger)
            }
            let (firstGroup, secondGroup) = (
                group("first", roundLength: .seconds(9)), group("second", roundLength: .zero)
            )
            let first = Task { try await firstGroup.run() }
            try await waitUntil { events.withLock { $0.contains("first start") } }
            let second = Task { try await secondGroup.run() }
            try await waitUntil { events.withLock { $0.contains("first end") } }
            await secondGroup.triggerGracefulShutdown()
            await firstGroup.triggerGracefulShutdown()
            _ = await (first.result, second.result)
            let log = events.withLock { $0 }
            let (start, end) = (
                try #require(log.firstIndex(of: "first start")), try #require(log.firstIndex(of: "first end"))
            )
            #expect(log[start...end].allSatisfy { $0.hasPrefix("first") }, "\(log)")
        }
    }

    /// A holder whose lease another instance has taken (its renewals failed until it ran out)
    /// stops its round rather than repeat the other's store calls.
    @Test func aHolderThatLosesItsLeaseStopsItsRound() async throws {
        try await TemporaryStorage.withSQLite { storage in
            let lease = JobLease(
                name: "sweep", holder: "first", duration: 0.3, storage: storage, clock: SystemWallClock())
            let finished = Mutex(false)
            let started = Mutex(false)
            let round = Task {
                try await lease.runIfHeld {
                    started.withLock { $0 = true }
                    try await Task.sleep(for: .seconds(20))
                    finished.withLock { $0 = true }
                }
            }
            try await waitUntil { started.withLock { $0 } }
            // Another instance takes the lease as if it had run out.
            let stolen = try await storage.transaction {
                try await $0.acquireJobLease(
                    "sweep", holder: "second", now: .distantFuture, until: .distantFuture)
            }
            #expect(stolen)
            await #expect(throws: JobLeaseLost.self) { try await round.value }
            #expect(!finished.withLock { $0 })
        }
    }

    /// A holder whose renewals cannot get through (here the database file's write lock is held by
    /// another connection for 4.5 s; SQLite waits up to 5 s for it) stops its round when its lease
    /// runs out, since another instance may take the job from then on: while the lock is still
    /// held, not once a renewal gets through or gives up.
    @Test func aRoundStopsWhenItsLeaseRunsOutWhileARenewalWaits() async throws {
        try await TemporaryStorage.withSQLiteFile { storage, path in
            let lease = JobLease(
                name: "delivery", holder: "first", duration: 0.9, storage: storage, clock: SystemWallClock())
            let (started, startedSignal) = AsyncStream.makeStream(of: Void.self)
            let finished = Mutex(false)
            let round = Task {
                try await lease.runIfHeld {
                    startedSignal.yield()
                    try await Task.sleep(for: .seconds(20))
                    finished.withLock { $0 = true }
                }
            }
            for await _ in started { break }
            let other = try await StorageFactory.open(path, logger: TemporaryStorage.quietLogger)
            let released = Mutex(false)
            let blocker = Task {
                try await other.transaction { transaction in
                    try await transaction.setCursor("blocker", to: "holding the write lock")
                    try await Task.sleep(for: .seconds(4.5))
                }
                released.withLock { $0 = true }
            }
            await #expect(throws: JobLeaseLost.self) { try await round.value }
            #expect(!released.withLock { $0 }, "the round stopped only once the lock was released")
            #expect(!finished.withLock { $0 })
            try await blocker.value
            try await other.close()
        }
    }

    /// An idle holder's rounds run without writing its lease until a third of it has passed since
    /// it was last renewed; then the next round renews it. Another instance cannot take it
    /// meanwhile, and once it has run out the holder asks again instead of running on.
    @Test func aHolderRenewsItsLeaseEveryThirdOfItNotEveryRound() async throws {
        try await TemporaryStorage.withSQLite { storage async throws in
            let start = Date(timeIntervalSince1970: 1_800_000_000)
            let clock = SettableWallClock(start)
            let first = JobLease(name: "delivery", holder: "first", duration: 600, storage: storage, clock: clock)
            let second = JobLease(name: "delivery", holder: "second", duration: 600, storage: storage, clock: clock)
            func expiry() async throws -> Date {
                try await storage.transaction { transaction async throws -> Date in
                    let database = try #require((transaction as? SQLStorageTransaction)?.database)
                    let milliseconds = try #require(
                        try await database.raw("SELECT expires_at FROM job_leases WHERE name = 'delivery'")
                            .first()?.decode(column: "expires_at", as: Int64.self))
                    return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
                }
            }
            func round(_ lease: JobLease, at seconds: TimeInterval) async throws -> Bool {
                clock.set(start.addingTimeInterval(seconds))
                return try await lease.runIfHeld {}
            }
            #expect(try await round(first, at: 0))
            #expect(try await expiry() == start.addingTimeInterval(600))
            // (Well before 200 s: a round also renews when it outlasts the next beat, slept in real
            // seconds from this clock's, and a loaded machine may keep an empty round for a while.)
            for seconds in [1, 100, 150] as [TimeInterval] {
                #expect(try await round(first, at: seconds))
                #expect(try await expiry() == start.addingTimeInterval(600), "renewed at \(seconds) s")
                #expect(try await !round(second, at: seconds))
            }
            #expect(try await round(first, at: 200))
            #expect(try await expiry() == start.addingTimeInterval(800))
            // The holder stops (paused, say) and its lease runs out: the other takes the job, and
            // the holder's next round asks and does not run.
            #expect(try await round(second, at: 800))
            #expect(try await !round(first, at: 801))
            #expect(try await expiry() == start.addingTimeInterval(1_400))
        }
    }

    func waitUntil(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now.advanced(by: .seconds(60))
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("not reached within 60 s")
                return
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}
