import CoreMetrics
import Prometheus
import Storekeeper
import Synchronization

/// The server's metrics, kept in its own Prometheus registry (no global bootstrap, so several
/// servers can live in one process, as tests need) and served at /metrics.
final class ServerMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    /// The endpoints with a lag gauge.
    private let lagEndpoints = Mutex<Set<String>>([])
    /// The endpoints with attempt counters and latencies.
    private let attemptEndpoints = Mutex<Set<String>>([])

    init() {
        factory = PrometheusMetricsFactory(registry: registry)
    }

    /// How receiving a delivery ended (the `result` label): stored, a duplicate, or refused with
    /// an error code.
    enum ReceiveResult: Sendable, Hashable {
        case stored
        case duplicate
        case refused(ErrorCode)

        var label: String {
            switch self {
            case .stored: "stored"
            case .duplicate: "duplicate"
            case .refused(let code): code.rawValue
            }
        }
    }

    func notificationReceived(store: Store, result: ReceiveResult) {
        Counter(
            label: "storekeeper_notifications_received_total",
            dimensions: [("store", store.rawValue), ("result", result.label)], factory: factory
        ).increment()
    }

    func notificationProcessed(store: Store, result: ProcessingOutcome) {
        Counter(
            label: "storekeeper_notifications_processed_total",
            dimensions: [("store", store.rawValue), ("result", result.rawValue)], factory: factory
        ).increment()
    }

    /// A processing batch failed as a whole and was applied notification by notification.
    func processingBatchSplit() {
        Counter(label: "storekeeper_processing_batches_split_total", factory: factory).increment()
    }

    /// What a catch-up run recovered, by kind, and how many subscriptions its refresh found due.
    func caughtUp(_ report: CatchUpReport) {
        for kind in CatchUpKind.allCases where report[kind] > 0 {
            Counter(label: "storekeeper_catch_up_total", dimensions: [("kind", kind.rawValue)], factory: factory)
                .increment(by: report[kind])
        }
        if let due = report.dueForRefresh {
            for reason in RefreshReason.allCases { refreshDueGauge(reason).record(due[reason] ?? 0) }
        } else {
            catchUpHeldElsewhere()
        }
    }

    /// The catch-up ran on another instance, or its refresh did not count what is due: the due
    /// gauges are dropped rather than left at a count this instance no longer keeps up to date.
    func catchUpHeldElsewhere() {
        for reason in RefreshReason.allCases { refreshDueGauge(reason).destroy() }
    }

    private func refreshDueGauge(_ reason: RefreshReason) -> CoreMetrics.Gauge {
        Gauge(label: "storekeeper_refresh_due", dimensions: [("kind", reason.rawValue)], factory: factory)
    }

    /// How a refund consumption request was settled: sent, skipped (by reason), failed or expired.
    func refundRequestSettled(_ request: RefundRequest) {
        Counter(
            label: "storekeeper_refund_requests_total",
            dimensions: [
                ("store", request.purchaseKey.store.rawValue), ("status", request.status.rawValue),
                ("reason", request.skipReason?.rawValue ?? ""),
            ], factory: factory
        ).increment()
    }

    func inbox(status: InboxNotification.Status, count: Int) {
        Gauge(label: "storekeeper_inbox_notifications", dimensions: [("status", status.rawValue)], factory: factory)
            .record(count)
    }

    /// PostgreSQL transactions this instance reran after a deadlock or serialization failure, in
    /// all (read at each scrape).
    func transactionsRerun(_ count: Int) {
        Gauge(label: "storekeeper_postgres_transactions_rerun", factory: factory).record(count)
    }

    func request(route: String, status: Int) {
        Counter(
            label: "storekeeper_http_requests_total", dimensions: [("route", route), ("status", String(status))],
            factory: factory
        ).increment()
    }

    /// One webhook delivery attempt, by the delivery's state after it (the `result` label:
    /// delivered, failed to be retried, or dead-lettered).
    func webhookAttempt(endpoint: String, status: EventDelivery.Status, latency milliseconds: Int) {
        attemptEndpoints.withLock { _ = $0.insert(endpoint) }
        webhookAttemptCounter(endpoint, status).increment()
        webhookLatencyRecorder(endpoint).record(Double(milliseconds) / 1000)
    }

    /// The endpoints whose attempt counters this instance shows.
    var attemptEndpointNames: Set<String> { attemptEndpoints.withLock { $0 } }

    /// Drops the attempt counters and latencies of endpoints no longer in `endpoints` (configured
    /// or created through the API, enabled or not): a deleted endpoint's series would otherwise
    /// stay until a restart, one set for every endpoint ever deleted.
    func webhookEndpoints(existing endpoints: Set<String>) {
        for endpoint in Self.keepOnly(endpoints, in: attemptEndpoints) {
            for status in EventDelivery.Status.allCases { webhookAttemptCounter(endpoint, status).destroy() }
            webhookLatencyRecorder(endpoint).destroy()
        }
    }

    private func webhookAttemptCounter(_ endpoint: String, _ status: EventDelivery.Status) -> CoreMetrics.Counter {
        let result =
            switch status {
            case .delivered: "delivered"
            case .pending: "failed"
            case .dead: "dead"
            }
        return Counter(
            label: "storekeeper_webhook_deliveries_total", dimensions: [("endpoint", endpoint), ("result", result)],
            factory: factory)
    }

    private func webhookLatencyRecorder(_ endpoint: String) -> CoreMetrics.Recorder {
        Recorder(
            label: "storekeeper_webhook_delivery_latency_seconds", dimensions: [("endpoint", endpoint)],
            aggregate: true, factory: factory)
    }

    /// How long the oldest event still waiting for `endpoint` has waited (0: none waits).
    func webhookLag(endpoint: String, seconds: Double) {
        lagEndpoints.withLock { _ = $0.insert(endpoint) }
        webhookLagGauge(endpoint).record(seconds)
    }

    /// Drops the lag gauges of endpoints other than `endpoints` (deleted or disabled ones), rather
    /// than leave them at what was last seen.
    func webhookLag(keepingOnly endpoints: Set<String>) {
        for endpoint in Self.keepOnly(endpoints, in: lagEndpoints) { webhookLagGauge(endpoint).destroy() }
    }

    /// Webhook delivery ran on another instance: the lag gauges are that instance's to show.
    func webhookDeliveryHeldElsewhere() {
        webhookLag(keepingOnly: [])
    }

    /// Removes from `tracked` the endpoints not in `endpoints`, and returns them: those whose
    /// series are to be dropped.
    private static func keepOnly(_ endpoints: Set<String>, in tracked: borrowing Mutex<Set<String>>) -> Set<String> {
        tracked.withLock { kept in
            let dropped = kept.subtracting(endpoints)
            kept.subtract(dropped)
            return dropped
        }
    }

    private func webhookLagGauge(_ endpoint: String) -> CoreMetrics.Gauge {
        Gauge(label: "storekeeper_webhook_lag_seconds", dimensions: [("endpoint", endpoint)], factory: factory)
    }

    /// The tables the pruning job deletes from (the `table` label).
    enum PrunedTable: String, Sendable, CaseIterable {
        case events
        case webhookAttempts = "webhook_attempts"
        case inbox
    }

    /// Rows pruned past their retention, by table.
    func pruned(_ table: PrunedTable, count: Int) {
        Counter(label: "storekeeper_pruned_rows_total", dimensions: [("table", table.rawValue)], factory: factory)
            .increment(by: count)
    }

    func exposition() -> String {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }
}
