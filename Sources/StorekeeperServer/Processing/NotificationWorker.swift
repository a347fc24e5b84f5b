import Logging
import ServiceLifecycle

/// Processes the inbox in the background: woken when a notification is stored, and otherwise
/// every `interval` (to pick up retries that came due). Stops with the service group.
///
/// Each of its `workers` loops waits for wake-ups of its own and drains on its own: several claim
/// disjoint batches (a claim leases what it takes), so on PostgreSQL their transactions overlap; on
/// SQLite they take turns at the one writer connection, one interpreting while another applies.
/// (Once all loops waited for the slowest to finish before any was woken again: a loop that found
/// nothing due in a quiet moment stayed idle while one other drained the rest alone.)
final class NotificationWorker: Service, Sendable {
    let interval: Double
    let logger: Logger
    /// Processes batches until none is due.
    private let drainUntilNoneDue: @Sendable () async throws -> Void
    /// One wake-up stream per loop; a wake-up that comes while a loop drains is kept (one), so the
    /// loop drains again afterwards and nothing stored meanwhile waits for the next poll.
    private let wakeUps: [(stream: AsyncStream<Void>, continuation: AsyncStream<Void>.Continuation)]

    convenience init(inbox: NotificationInbox, interval: Double, logger: Logger) {
        self.init(workers: inbox.settings.workers, interval: interval, logger: logger) {
            try await inbox.processUntilNoneDue()
        }
    }

    init(
        workers: Int, interval: Double, logger: Logger,
        drainUntilNoneDue: @escaping @Sendable () async throws -> Void
    ) {
        self.interval = interval
        self.logger = logger
        self.drainUntilNoneDue = drainUntilNoneDue
        wakeUps = (0..<max(1, workers)).map { _ in
            AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        }
    }

    func wake() {
        for wakeUp in wakeUps { wakeUp.continuation.yield() }
    }

    private func drain() async {
        do {
            try await drainUntilNoneDue()
        } catch {
            logger.warning("inbox unavailable; retrying", metadata: ["error": "\(error)"])
        }
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
                for wakeUp in wakeUps {
                    group.addTask {
                        for await _ in wakeUp.stream.cancelOnGracefulShutdown() { await self.drain() }
                    }
                }
            }
        } onGracefulShutdown: {
            for wakeUp in self.wakeUps { wakeUp.continuation.finish() }
        }
    }
}
