import Logging
import ServiceLifecycle

/// Retries the Google Play acknowledgements that failed when a purchase was recorded, every
/// `interval` (default 10 minutes — far inside Google's three days, after which an
/// unacknowledged purchase is refunded). Stops with the service group.
final class AcknowledgementSweeper: Service, Sendable {
    let purchases: GooglePlayPurchases
    let interval: Double
    let logger: Logger

    init(purchases: GooglePlayPurchases, interval: Double, logger: Logger) {
        self.purchases = purchases
        self.interval = interval
        self.logger = logger
    }

    func run() async throws {
        // A service that returns ends its group: with nothing to sweep, wait for shutdown instead.
        guard !purchases.apps.apps.isEmpty else {
            try? await gracefulShutdown()
            return
        }
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            do {
                let tried = try await purchases.sweepUnacknowledged()
                if tried > 0 { logger.info("retried Google Play acknowledgements", metadata: ["count": "\(tried)"]) }
            } catch {
                logger.warning("acknowledgement sweep failed; will retry", metadata: ["error": "\(error)"])
            }
            let interval = self.interval
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(interval)) }
        }
    }
}
