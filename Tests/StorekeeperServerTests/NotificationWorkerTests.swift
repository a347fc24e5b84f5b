import Logging
import ServiceLifecycle
import Synchronization
import TestSupport
import Testing

@testable import StorekeeperServer

/// The background worker's loops: each drains on its own wake-ups.
@Suite struct NotificationWorkerTests {
    /// One loop is still draining a long backlog; a notification stored meanwhile is picked up by
    /// another loop at once. (They used to wait for each other: a loop that found nothing due was
    /// not woken again until the slowest finished, so a backlog after a quiet moment drained on
    /// one loop alone, at a quarter of the speed with four.)
    @Test func aLoopThatFoundNothingDueDrainsAgainWhileAnotherIsBusy() async throws {
        let drains = Mutex(0)
        let (started, starting) = AsyncStream.makeStream(of: Int.self)
        let (release, releaser) = AsyncStream.makeStream(of: Void.self)
        let worker = NotificationWorker(workers: 2, interval: 3600, logger: Logger(label: "test")) {
            let number = drains.withLock { count in
                count += 1
                return count
            }
            starting.yield(number)
            // The first drain is the long one; the others find nothing due.
            if number == 1 { for await _ in release { break } }
        }
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(services: [worker], logger: Logger(label: "test")))
        let running = Task { try await group.run() }
        defer { releaser.finish() }

        // Drains started, in order; a stall fails the test (with what started) instead of hanging.
        let observed = Task { () throws -> [Int] in
            var numbers: [Int] = []
            for await number in started {
                numbers.append(number)
                if numbers.count == 2 { worker.wake() }  // both loops drained once, the first still busy
                if numbers.count == 3 { break }
            }
            return numbers
        }
        worker.wake()
        let outcome = await observed.result(within: .seconds(30))
        #expect(
            (try outcome?.get()) == [1, 2, 3], "the idle loop drains again while the first is still busy")
        releaser.yield()
        await group.triggerGracefulShutdown()
        try await running.value
    }
}
