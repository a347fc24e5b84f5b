import Foundation
import Logging
import ServiceLifecycle
import StoreCore
import StorekeeperStorage
import Synchronization
import Testing

@testable import StorekeeperServer

/// Two instances sharing one database run a leased background job one at a time: the holder's
/// rounds run, the other's are skipped, and the other takes over when the holder stops.
@Suite struct PeriodicServiceTests {
    @Test func aLeasedJobRunsOnOneInstanceAtATimeAndMovesWhenItsHolderStops() async throws {
        try await TemporaryStorage.withSQLite { storage in
            let runs = Mutex<[String]>([])
            let logger = Logger(label: "test")
            func service(_ holder: String) -> PeriodicService {
                let lease = JobLease(
                    name: "sweep", holder: holder, duration: 60, storage: storage, clock: SystemWallClock())
                return PeriodicService("sweep", every: 0.02, lease: lease, logger: logger) {
                    runs.withLock { $0.append(holder) }
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
            try await Task.sleep(for: .milliseconds(300))
            #expect(runs.withLock { Set($0) } == ["first"])
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

    /// A job polled every second must not write its lease every second: on SQLite each commit
    /// makes the reader connection drop its whole page cache, which the customer-read benchmark
    /// showed as a stall of the API's reads every second. The holder renews once half the lease
    /// has run out, so the lease row (what another instance sees) moves only then.
    @Test func theHolderRenewsItsLeaseOnlyOnceHalfOfItHasRunOut() async throws {
        try await TemporaryStorage.withSQLite { storage in
            let start = Date(timeIntervalSince1970: 1_800_000_000)
            let clock = SettableWallClock(start)
            let lease = JobLease(name: "sweep", holder: "a", duration: 60, storage: storage, clock: clock)
            /// Whether another instance could take the lease at `seconds` after the start.
            func takenOver(at seconds: TimeInterval) async throws -> Bool {
                let now = start.addingTimeInterval(seconds)
                return try await storage.transaction {
                    try await $0.acquireJobLease("sweep", holder: "b", now: now, until: now.addingTimeInterval(60))
                }
            }
            var held = try await lease.acquire()
            #expect(held)
            // Rounds in the first half of the lease: held, and nothing written.
            for second in 1...29 {
                clock.set(start.addingTimeInterval(TimeInterval(second)))
                held = try await lease.acquire()
                #expect(held)
            }
            let takenAfterItsFirstExpiry = try await takenOver(at: 60.5)
            #expect(takenAfterItsFirstExpiry)
            try await storage.transaction { try await $0.releaseJobLease("sweep", holder: "b") }

            // Past half of it, a round renews the lease for its whole duration.
            let renewing = JobLease(name: "renewing", holder: "a", duration: 60, storage: storage, clock: clock)
            clock.set(start)
            held = try await renewing.acquire()
            #expect(held)
            clock.set(start.addingTimeInterval(31))
            held = try await renewing.acquire()
            #expect(held)
            let now = start.addingTimeInterval(60.5)
            let taken = try await storage.transaction {
                try await $0.acquireJobLease("renewing", holder: "b", now: now, until: now.addingTimeInterval(60))
            }
            #expect(!taken)
        }
    }

    /// A holder that lost its lease (it stopped renewing for longer than the lease, e.g. paused)
    /// asks the storage again instead of trusting what it remembers.
    @Test func aHolderPastItsLeaseAsksTheStorageAgain() async throws {
        try await TemporaryStorage.withSQLite { storage in
            let start = Date(timeIntervalSince1970: 1_800_000_000)
            let clock = SettableWallClock(start)
            let lease = JobLease(name: "sweep", holder: "a", duration: 60, storage: storage, clock: clock)
            let held = try await lease.acquire()
            #expect(held)
            let later = start.addingTimeInterval(61)
            let taken = try await storage.transaction {
                try await $0.acquireJobLease("sweep", holder: "b", now: later, until: later.addingTimeInterval(60))
            }
            #expect(taken)
            clock.set(later.addingTimeInterval(1))
            let stillHeld = try await lease.acquire()
            #expect(!stillHeld)
        }
    }

    func waitUntil(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now.advanced(by: .seconds(10))
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("not reached within 10 s")
                return
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}
