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
