import Logging
import ServiceLifecycle
import Synchronization
import TestSupport
import Testing

@testable import StorekeeperServer

/// The background worker's loops: a wake-up goes to one idle loop, which processes batches while
/// they come back full; a full batch brings another loop in to help.
@Suite struct NotificationWorkerTests {
    /// One loop is still on a long batch; a notification stored meanwhile is picked up by another
    /// loop at once. And each wake-up starts one loop, not all of them: the others would only have
    /// claimed nothing, a transaction each.
    @Test func aWakeUpStartsOneIdleLoopEvenWhileAnotherIsBusy() async throws {
        let harness = FirstBatchWaits(workers: 3)
        let started = try await harness.run { worker, number in
            if number == 1 { worker.wake() }  // the first loop is busy
            return number == 2
        }
        #expect(started == [1, 2], "an idle loop takes the second wake-up while the first is busy")
        #expect(harness.batches == 2, "two wake-ups, two batches: the third loop was never woken")
    }

    /// A loop is woken but its claim has not begun (it waits for the writer, behind webhooks'
    /// commits): wake-ups meanwhile start no other loop, since that claim will see what they
    /// announce. In an 8,000-notification SQLite run, three claims in four found nothing before this.
    @Test func aWakeUpWhileAClaimHasYetToBeginStartsNoOtherLoop() async throws {
        let harness = FirstBatchWaits(workers: 3, claimFirst: false)
        let started = try await harness.run { worker, number in
            if number == 1 {
                for _ in 0..<5 { worker.wake() }
                // Woken loops would have started by now; then the first claim begins.
                try? await Task.sleep(for: .milliseconds(200))
                harness.releaseFirstBatch()
                // Once it has begun, what is stored next needs another claim: a wake-up starts one.
                await harness.claimHasBegun()
                worker.wake()
                return false
            }
            return true
        }
        #expect(started == [1, 2])
        #expect(
            harness.batches == 2,
            "five wake-ups while the first claim had not begun started \(harness.batches - 1) more")
    }

    /// Every loop is busy: a wake-up is kept, and a busy loop looks again once done (it may have
    /// claimed before what woke the worker was stored).
    @Test func aWakeUpWhileEveryLoopIsBusyIsNotLost() async throws {
        let harness = FirstBatchWaits(workers: 1)
        let started = try await harness.run { worker, number in
            if number == 1 {
                worker.wake()  // while the only loop is busy
                harness.releaseFirstBatch()
            }
            return number == 2
        }
        #expect(started == [1, 2], "the loop processed again after the wake-up it got while busy")
    }

    /// A backlog: batches come back full, and each full batch wakes another idle loop, until all
    /// of them work at once (a backlog drained by one loop alone took as long as the loops were many).
    @Test func fullBatchesBringTheOtherLoopsIn() async throws {
        struct Progress {
            var batches = 0
            var working = 0
            var mostWorkingAtOnce = 0
        }
        let progress = Mutex(Progress())
        let (finished, finishing) = AsyncStream.makeStream(of: Void.self)
        let worker = NotificationWorker(workers: 3, interval: 3600, logger: Logger(label: "test")) { claimBegins in
            claimBegins()
            let backlogLeft = progress.withLock { progress in
                progress.batches += 1
                progress.working += 1
                progress.mostWorkingAtOnce = max(progress.mostWorkingAtOnce, progress.working)
                // The backlog lasts until all three loops were seen at once (at most 2,000 batches).
                return progress.mostWorkingAtOnce < 3 && progress.batches < 2_000
            }
            if backlogLeft { try await Task.sleep(for: .milliseconds(1)) }
            progress.withLock { $0.working -= 1 }
            if !backlogLeft { finishing.yield() }
            return backlogLeft
        }
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(services: [worker], logger: Logger(label: "test")))
        let running = Task { try await group.run() }

        let drained = Task { () throws -> Void in for await _ in finished { break } }
        worker.wake()
        _ = await drained.result(within: .seconds(60))
        await group.triggerGracefulShutdown()
        try await running.value
        let seen = progress.withLock { $0 }
        #expect(seen.mostWorkingAtOnce == 3, "\(seen.mostWorkingAtOnce) loop(s) at once over \(seen.batches) batches")
    }
}

/// A worker whose batches are numbered as they start, none full; the first waits until released,
/// its claim begun (`claimFirst`, as when it has taken the writer) or not yet (waiting for it).
private final class FirstBatchWaits: Sendable {
    let worker: NotificationWorker
    private let count = BatchCount()
    private let started: AsyncStream<Int>
    private let release: AsyncStream<Void>.Continuation

    init(workers: Int, claimFirst: Bool = true) {
        let count = self.count
        let (started, starting) = AsyncStream.makeStream(of: Int.self)
        let (release, releaser) = AsyncStream.makeStream(of: Void.self)
        self.started = started
        self.release = releaser
        let (claims, claiming) = AsyncStream.makeStream(of: Void.self)
        self.claims = claims
        worker = NotificationWorker(workers: workers, interval: 3600, logger: Logger(label: "test")) { claimBegins in
            let number = count.next()
            let begin = {
                claimBegins()
                claiming.yield()
            }
            if claimFirst || number > 1 { begin() }
            starting.yield(number)
            if number == 1 {
                for await _ in release { break }
                if !claimFirst { begin() }
            }
            return false
        }
    }

    private let claims: AsyncStream<Void>

    /// Returns once a batch's claim has begun.
    func claimHasBegun() async {
        for await _ in claims { return }
    }

    var batches: Int { count.value.withLock { $0 } }

    private final class BatchCount: Sendable {
        let value = Mutex(0)

        func next() -> Int {
            value.withLock { count in
                count += 1
                return count
            }
        }
    }

    func releaseFirstBatch() { release.yield() }

    /// Runs the worker, wakes it once, and calls `step` with each batch's number as it starts until
    /// `step` returns true; returns the numbers seen (nil if that took over 30 s: a stall fails
    /// the test instead of hanging it). Then releases the first batch and shuts the worker down.
    func run(_ step: @escaping @Sendable (NotificationWorker, Int) async -> Bool) async throws -> [Int]? {
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(services: [worker], logger: Logger(label: "test")))
        let running = Task { try await group.run() }
        let (worker, started) = (self.worker, self.started)
        let observed = Task { () throws -> [Int] in
            var numbers: [Int] = []
            for await number in started {
                numbers.append(number)
                if await step(worker, number) { break }
            }
            return numbers
        }
        worker.wake()
        let outcome = await observed.result(within: .seconds(30))
        release.yield()
        release.finish()
        await group.triggerGracefulShutdown()
        try await running.value
        return try outcome?.get()
    }
}
