import Testing

@testable import StorekeeperServer

/// The gauges a leased job sets are shown by the instance that ran it, and dropped by one whose
/// rounds another instance now runs, rather than left at what it last saw.
@Suite struct ServerMetricsTests {
    @Test func theRefreshDueGaugesShowTheLastRunUntilTheCatchUpRunsElsewhere() {
        let metrics = ServerMetrics()
        var report = CatchUpReport()
        report.dueForRefresh = [.overdue: 250, .awaitingNews: 3]
        metrics.caughtUp(report)
        #expect(
            gauges(metrics, "storekeeper_refresh_due") == [#"{kind="awaiting_news"} 3.0"#, #"{kind="overdue"} 250.0"#])

        metrics.catchUpHeldElsewhere()
        #expect(gauges(metrics, "storekeeper_refresh_due") == [])

        // Back on this instance, then a run whose refresh failed before it counted: not known.
        metrics.caughtUp(report)
        #expect(gauges(metrics, "storekeeper_refresh_due").count == 2)
        metrics.caughtUp(CatchUpReport())
        #expect(gauges(metrics, "storekeeper_refresh_due") == [])
    }

    @Test func theWebhookLagGaugesAreDroppedWhenDeliveryRunsElsewhere() {
        let metrics = ServerMetrics()
        metrics.webhookLag(endpoint: "backend", seconds: 42)
        metrics.webhookLag(endpoint: "analytics", seconds: 0)
        #expect(
            gauges(metrics, "storekeeper_webhook_lag_seconds") == [
                #"{endpoint="analytics"} 0.0"#, #"{endpoint="backend"} 42.0"#,
            ])

        metrics.webhookDeliveryHeldElsewhere()
        #expect(gauges(metrics, "storekeeper_webhook_lag_seconds") == [])
        metrics.webhookLag(endpoint: "backend", seconds: 1)
        #expect(gauges(metrics, "storekeeper_webhook_lag_seconds") == [#"{endpoint="backend"} 1.0"#])

        // An endpoint deleted or disabled: its gauge goes, the others stay.
        metrics.webhookLag(endpoint: "analytics", seconds: 2)
        metrics.webhookLag(keepingOnly: ["analytics"])
        #expect(gauges(metrics, "storekeeper_webhook_lag_seconds") == [#"{endpoint="analytics"} 2.0"#])
    }

    @Test func aDeletedEndpointsAttemptCountersAndLatenciesAreDropped() {
        let metrics = ServerMetrics()
        metrics.webhookAttempt(endpoint: "backend", status: .delivered, latency: 12)
        metrics.webhookAttempt(endpoint: "analytics", status: .pending, latency: 30_000)
        metrics.webhookAttempt(endpoint: "analytics", status: .dead, latency: 5)
        #expect(
            gauges(metrics, "storekeeper_webhook_deliveries_total") == [
                #"{endpoint="analytics",result="dead"} 1"#, #"{endpoint="analytics",result="failed"} 1"#,
                #"{endpoint="backend",result="delivered"} 1"#,
            ])
        #expect(gauges(metrics, "storekeeper_webhook_delivery_latency_seconds_count").count == 2)

        // "analytics" deleted; "backend" exists (a disabled endpoint exists too: its history stays).
        metrics.webhookEndpoints(existing: ["backend", "disabled"])
        #expect(
            gauges(metrics, "storekeeper_webhook_deliveries_total") == [#"{endpoint="backend",result="delivered"} 1"#])
        #expect(
            gauges(metrics, "storekeeper_webhook_delivery_latency_seconds_count") == [#"{endpoint="backend"} 1"#])
        #expect(!metrics.exposition().contains(#"endpoint="analytics""#))

        // An endpoint made again under the deleted one's name starts from nothing.
        metrics.webhookAttempt(endpoint: "analytics", status: .delivered, latency: 1)
        #expect(
            gauges(metrics, "storekeeper_webhook_deliveries_total") == [
                #"{endpoint="analytics",result="delivered"} 1"#, #"{endpoint="backend",result="delivered"} 1"#,
            ])
    }

    /// The samples of `name` in the exposition, without the name, sorted.
    private func gauges(_ metrics: ServerMetrics, _ name: String) -> [String] {
        metrics.exposition().split(separator: "\n")
            .filter { $0.hasPrefix(name + "{") }
            .map { String($0.dropFirst(name.count)) }
            .sorted()
    }
}
