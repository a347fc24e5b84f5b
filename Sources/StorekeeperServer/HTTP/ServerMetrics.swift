import CoreMetrics
import Prometheus

/// The server's metrics, kept in its own Prometheus registry (no global bootstrap, so several
/// servers can live in one process, as tests need) and served at /metrics.
final class ServerMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory

    init() {
        factory = PrometheusMetricsFactory(registry: registry)
    }

    func notificationReceived(store: String, result: String) {
        Counter(
            label: "storekeeper_notifications_received_total", dimensions: [("store", store), ("result", result)],
            factory: factory
        ).increment()
    }

    func notificationProcessed(store: String, result: String) {
        Counter(
            label: "storekeeper_notifications_processed_total", dimensions: [("store", store), ("result", result)],
            factory: factory
        ).increment()
    }

    /// What a catch-up run recovered, by kind (`history`, `voided`, `refreshed`, `failures`).
    func caughtUp(_ report: MissedNotificationRecovery.Report) {
        for (kind, count) in [
            ("history", report.historyNotificationsStored), ("voided", report.voidedPurchasesApplied),
            ("refreshed", report.subscriptionsRefreshed), ("failures", report.failures),
        ] where count > 0 {
            Counter(label: "storekeeper_catch_up_total", dimensions: [("kind", kind)], factory: factory)
                .increment(by: count)
        }
    }

    func inbox(status: String, count: Int) {
        Gauge(label: "storekeeper_inbox_notifications", dimensions: [("status", status)], factory: factory)
            .record(count)
    }

    func request(route: String, status: Int) {
        Counter(
            label: "storekeeper_http_requests_total", dimensions: [("route", route), ("status", String(status))],
            factory: factory
        ).increment()
    }

    func exposition() -> String {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }
}
