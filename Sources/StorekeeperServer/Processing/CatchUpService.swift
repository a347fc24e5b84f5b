import Logging
import ServiceLifecycle

/// Runs ``MissedNotificationRecovery`` at startup and then every `interval`, until the service
/// group shuts down.
final class CatchUpService: Service, Sendable {
    let recovery: MissedNotificationRecovery
    let onReport: @Sendable (MissedNotificationRecovery.Report) -> Void
    let logger: Logger

    init(
        recovery: MissedNotificationRecovery, logger: Logger,
        onReport: @escaping @Sendable (MissedNotificationRecovery.Report) -> Void
    ) {
        self.recovery = recovery
        self.logger = logger
        self.onReport = onReport
    }

    func run() async throws {
        // A service that returns ends its group: when turned off, wait for shutdown instead.
        guard recovery.settings.enabled else {
            try? await gracefulShutdown()
            return
        }
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            let report = await recovery.run()
            onReport(report)
            logger.debug(
                "catch-up ran",
                metadata: [
                    "history": "\(report.historyNotificationsStored)", "voided": "\(report.voidedPurchasesApplied)",
                    "refreshed": "\(report.subscriptionsRefreshed)", "failures": "\(report.failures)",
                ])
            let interval = recovery.settings.interval
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(interval)) }
        }
    }
}
