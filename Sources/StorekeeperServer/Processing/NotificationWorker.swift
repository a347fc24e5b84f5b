import Logging
import ServiceLifecycle
import Synchronization

/// Processes the inbox in the background: woken when a notification is stored, and otherwise
/// every `interval` (to pick up retries that came due). Stops with the service group.
///
/// It runs `workers` loops. A wake-up goes to one idle loop, which processes batches until one
/// comes back less than full: a claim takes everything due up to its limit, so a short batch means
/// nothing else was due when it claimed. A full batch wakes another idle loop to help, so a
/// backlog is worked on by every loop at once: several claim disjoint batches (a claim locks what
/// it takes, and leases what is interpreted after its transaction), so on PostgreSQL their
/// transactions overlap; on SQLite they take turns at the one writer connection.
///
/// Why not every loop at every wake-up: all but one found nothing, and each look was a claim, a
/// transaction of its own. In the PostgreSQL ingest benchmark, 1,150 of 1,265 claims came back
/// empty, four round trips each and two fifths of all statements. (And once all loops waited for
/// the slowest to finish before any was woken again: a loop that found nothing due in a quiet
/// moment stayed idle while one other drained the rest alone.)
///
/// Nor a loop at every wake-up while another loop's claim has yet to begin: whoever wakes the
/// worker has already committed what it stored, so that claim will see it. Every stored webhook
/// wakes the worker, and on SQLite a woken loop waits for the writer behind the webhooks' own
/// commits: 1,598 of 2,159 claims in an 8,000-notification SQLite run found nothing, because the
/// loops woken while the first waited claimed after it had taken everything.
final class NotificationWorker: Service, Sendable {
    let interval: Double
    let logger: Logger
    /// Processes one batch, calling its argument where its claim begins (from there on, the claim
    /// sees everything committed before); returns whether it was full, so that more may be due.
    private let processBatch: @Sendable (_ claimBegins: @escaping @Sendable () -> Void) async throws -> Bool
    private let loops: [Loop]
    /// Which busy loop keeps the next wake-up when none is idle.
    private let nextBusy = Atomic<Int>(0)

    /// A loop's wake-ups, and where it is. A wake-up that comes while the loop drains is kept (one),
    /// so the loop drains again afterwards and nothing stored meanwhile waits for the next poll.
    private final class Loop: Sendable {
        enum State: UInt8, AtomicRepresentable {
            /// Waits for a wake-up.
            case idle
            /// Woken, or between two batches of a drain: its next claim has not begun, and will see
            /// whatever is committed until it does.
            case awaitingClaim
            /// Its claim has begun: what is committed from now on may be missed by it.
            case claimed
        }

        let stream: AsyncStream<Void>
        let continuation: AsyncStream<Void>.Continuation
        let state = Atomic<State>(.idle)

        init() {
            (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        }
    }

    convenience init(inbox: NotificationInbox, interval: Double, logger: Logger) {
        let batchSize = inbox.settings.batchSize
        self.init(workers: inbox.settings.workers, interval: interval, logger: logger) {
            try await inbox.processDue(limit: batchSize, claimBegins: $0) >= batchSize
        }
    }

    init(
        workers: Int, interval: Double, logger: Logger,
        processBatch: @escaping @Sendable (_ claimBegins: @escaping @Sendable () -> Void) async throws -> Bool
    ) {
        self.interval = interval
        self.logger = logger
        self.processBatch = processBatch
        loops = (0..<max(1, workers)).map { _ in Loop() }
    }

    /// Wakes an idle loop; when every loop is busy, one of them drains again after its current
    /// drain, which may have claimed before what woke it was stored. Wakes none while a loop's claim
    /// has yet to begin: the caller has committed what it stored, and that claim will see it.
    func wake() {
        guard !loops.contains(where: { $0.state.load(ordering: .sequentiallyConsistent) == .awaitingClaim }),
            !wakeIdleLoop()
        else { return }
        let index = nextBusy.add(1, ordering: .relaxed).oldValue
        loops[index % loops.count].continuation.yield()
    }

    /// Wakes one idle loop, if there is one; returns whether there was.
    @discardableResult
    private func wakeIdleLoop() -> Bool {
        for loop in loops
        where loop.state.compareExchange(
            expected: .idle, desired: .awaitingClaim, ordering: .sequentiallyConsistent
        ).exchanged {
            loop.continuation.yield()
            return true
        }
        return false
    }

    private func drain(_ loop: Loop) async {
        do {
            while true {
                loop.state.store(.awaitingClaim, ordering: .sequentiallyConsistent)
                let full = try await processBatch { loop.state.store(.claimed, ordering: .sequentiallyConsistent) }
                guard full else { break }
                wakeIdleLoop()
            }
        } catch {
            logger.warning("inbox unavailable; retrying", metadata: ["error": "\(error)"])
        }
        loop.state.store(.idle, ordering: .sequentiallyConsistent)
    }

    func run() async throws {
        let interval = self.interval
        // A ticker turns the poll interval into wake-ups.
        let ticker = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(interval))
                self?.wake()
            }
        }
        defer { ticker.cancel() }
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                for loop in loops {
                    group.addTask {
                        for await _ in loop.stream.cancelOnGracefulShutdown() {
                            await self.drain(loop)
                        }
                    }
                }
            }
        } onGracefulShutdown: {
            for loop in self.loops { loop.continuation.finish() }
        }
    }
}
