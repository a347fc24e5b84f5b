import Logging
import ServiceLifecycle
import Synchronization

/// Processes the inbox in the background: woken when a notification is stored, and otherwise
/// every `interval` (to pick up retries that came due). Stops with the service group.
final class NotificationWorker: Service, Sendable {
    let inbox: NotificationInbox
    let interval: Double
    let logger: Logger
    private let signal: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init(inbox: NotificationInbox, interval: Double, logger: Logger) {
        self.inbox = inbox
        self.interval = interval
        self.logger = logger
        (signal, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    func wake() { continuation.yield() }

    /// Processes batches until none is due.
    private func drain() async {
        do {
            try await inbox.processUntilNoneDue()
        } catch {
            logger.warning("inbox unavailable; retrying", metadata: ["error": "\(error)"])
        }
    }

    func run() async throws {
        let interval = self.interval
        let continuation = self.continuation
        // A ticker turns the poll interval into wake-ups on the same stream.
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(interval))
                continuation.yield()
            }
        }
        defer { ticker.cancel() }
        await withGracefulShutdownHandler {
            for await _ in signal.cancelOnGracefulShutdown() {
                // Several loops claim disjoint batches (a claim leases what it takes): on PostgreSQL
                // their transactions overlap; on SQLite they take turns at the one writer connection.
                await withTaskGroup(of: Void.self) { group in
                    for _ in 0..<max(1, inbox.settings.workers) {
                        group.addTask { await self.drain() }
                    }
                }
            }
        } onGracefulShutdown: {
            continuation.finish()
        }
    }
}
