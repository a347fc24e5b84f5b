import Foundation
import StoreSimulator
import Storekeeper
import StorekeeperStorage
import Testing

@testable import StorekeeperServer

/// An endpoint created through the API is delivered to like a configured one, and every change to
/// it (secrets, filters, enabled, deletion) takes effect at the dispatcher's next round, without a
/// restart: a real receiver on loopback, signatures checked by the test's own HMAC, both backends.
@Suite(.serialized) struct WebhookEndpointDeliveryTests {
    static let nextSecret = "whsec_rotated_0123456789abcdef"

    @Test(arguments: StorageBackend.available) func apiEndpointIsDeliveredToAndChangesApplyAtTheNextRound(
        _ backend: StorageBackend
    ) async throws {
        let receiver = WebhookReceiver()
        try await receiver.run(port: 0) { port in
            try await ServerHarness.run(
                on: backend,
                customize: { _, configuration in
                    // No configured endpoint; the job's own rounds are an hour apart (the test runs them).
                    configuration.webhooks = WebhookSettings(pollInterval: 3_600, timeout: 2, retrySchedule: [60])
                }
            ) { h in
                let store = h.simulator.appStore
                let (status, created) = try await h.request(
                    .POST, "/v1/webhooks",
                    json:
                        #"{"name": "api-hook", "url": "\#(EventTests.hookURL(port))", "events": ["purchase.started"]}"#)
                #expect(status == 201, "\(created)")
                let first = try #require((created["secret"] as? [String: Any])?["value"] as? String)
                let firstID = try #require((created["secret"] as? [String: Any])?["id"] as? String)

                let token = try await h.createCustomer("alice")
                _ = try store.purchase(customer: "alice", product: "pro.monthly", appAccountToken: token)
                try await h.settle()
                try await h.application.webhooks.run()
                // Only the type asked for, signed with the secret the API returned.
                #expect(receiver.acceptedOnce.map(\.type) == ["purchase.started"])
                let delivered = try #require(receiver.acceptedOnce.last)
                #expect(WebhookReceiver.signatureMatches(delivered.signature, body: delivered.body, secret: first))

                // Rotation: both secrets sign until the old one is retired.
                let (added, _) = try await h.request(
                    .POST, "/v1/webhooks/api-hook/secrets", json: #"{"secret": "\#(Self.nextSecret)"}"#)
                #expect(added == 201)
                _ = try store.purchase(customer: "alice", product: "coins.100", appAccountToken: token)
                try await h.settle()
                try await h.application.webhooks.run()
                let rotating = try #require(receiver.acceptedOnce.last)
                #expect(receiver.acceptedOnce.count == 2)
                #expect(rotating.signature.components(separatedBy: "v1=").count == 3)
                #expect(WebhookReceiver.signatureMatches(rotating.signature, body: rotating.body, secret: first))
                #expect(
                    WebhookReceiver.signatureMatches(rotating.signature, body: rotating.body, secret: Self.nextSecret))
                let (retired, _) = try await h.request(.DELETE, "/v1/webhooks/api-hook/secrets/\(firstID)")
                #expect(retired == 200)

                // Disabled: nothing is sent, and the cursor waits.
                let (disabled, _) = try await h.request(.PATCH, "/v1/webhooks/api-hook", json: #"{"enabled": false}"#)
                #expect(disabled == 200)
                _ = try store.purchase(customer: "alice", product: "coins.100", appAccountToken: token)
                try await h.settle()
                try await h.application.webhooks.run()
                #expect(receiver.acceptedOnce.count == 2)
                // Enabled with every type: what happened meanwhile arrives, signed with the new secret only.
                let (enabled, _) = try await h.request(
                    .PATCH, "/v1/webhooks/api-hook", json: #"{"enabled": true, "events": []}"#)
                #expect(enabled == 200)
                try await h.application.webhooks.run()
                let caughtUp = receiver.acceptedOnce.dropFirst(2)
                #expect(caughtUp.map(\.type).contains("purchase.started"))
                #expect(caughtUp.map(\.type).contains("balance.changed"))
                for delivery in caughtUp {
                    #expect(
                        WebhookReceiver.signatureMatches(
                            delivery.signature, body: delivery.body, secret: Self.nextSecret))
                    #expect(!WebhookReceiver.signatureMatches(delivery.signature, body: delivery.body, secret: first))
                }
                // The delivery log of an API endpoint reads like a configured one's.
                let (logStatus, log) = try await h.request(.GET, "/v1/webhooks/api-hook/deliveries")
                #expect(logStatus == 200)
                #expect((log["deliveries"] as? [[String: Any]])?.count == receiver.acceptedOnce.count)

                let shown = try await h.text("/metrics")
                #expect(shown.contains(#"storekeeper_webhook_lag_seconds{endpoint="api-hook"}"#))
                #expect(
                    shown.contains(#"storekeeper_webhook_deliveries_total{endpoint="api-hook",result="delivered"}"#))
                #expect(shown.contains(#"storekeeper_webhook_delivery_latency_seconds_count{endpoint="api-hook"}"#))

                // Deleted: nothing more is sent, and its lag, attempt counters and latencies are no longer shown.
                let (deleted, _) = try await h.request(.DELETE, "/v1/webhooks/api-hook")
                #expect(deleted == 204)
                let count = receiver.received.count
                _ = try store.purchase(customer: "alice", product: "coins.100", appAccountToken: token)
                try await h.settle()
                let round = try await h.application.webhooks.run()
                #expect(round.queued == 0 && round.delivered == 0)
                #expect(receiver.received.count == count)
                let metrics = try await h.text("/metrics")
                #expect(!metrics.contains(#"storekeeper_webhook_lag_seconds{endpoint="api-hook"}"#))
                #expect(!metrics.contains(#"endpoint="api-hook""#))
            }
        }
    }
    /// An instance where another holds the delivery job still shows the attempt counters of its
    /// own earlier rounds: those of an endpoint deleted meanwhile are dropped on its skipped rounds
    /// too, not kept until it restarts. (The holder drops them in its delivery rounds.)
    @Test(arguments: StorageBackend.available) func anInstanceWithoutTheDeliveryJobDropsADeletedEndpointsCounters(
        _ backend: StorageBackend
    ) async throws {
        // The job's own rounds an hour apart: the test calls what a skipped round calls.
        let hourlyRounds: @Sendable (StoreSimulator, inout StorekeeperConfiguration) -> Void = { _, configuration in
            configuration.webhooks = WebhookSettings(pollInterval: 3_600, timeout: 2, retrySchedule: [60])
        }
        try await ServerHarness.run(on: backend, customize: hourlyRounds) { h in
            let (status, created) = try await h.request(
                .POST, "/v1/webhooks", json: #"{"name": "api-hook", "url": "http://127.0.0.1:9/hook"}"#)
            #expect(status == 201, "\(created)")
            // Its earlier rounds, from when this instance held the job.
            h.application.metrics.webhookAttempt(endpoint: "api-hook", status: .delivered, latency: 7)
            // Its attempt counters and latencies (the job's lag gauge is the holder's to show).
            func attemptSeries() async throws -> [Substring] {
                try await h.text("/metrics").split(separator: "\n").filter {
                    $0.hasPrefix("storekeeper_webhook_deliver") && $0.contains(#"endpoint="api-hook""#)
                }
            }
            try await h.application.webhooks.dropMetricsOfDeletedEndpoints()
            #expect(
                try await attemptSeries().contains(
                    #"storekeeper_webhook_deliveries_total{endpoint="api-hook",result="delivered"} 1"#))

            let (deleted, _) = try await h.request(.DELETE, "/v1/webhooks/api-hook")
            #expect(deleted == 204)
            try await h.application.webhooks.dropMetricsOfDeletedEndpoints()
            #expect(try await attemptSeries().isEmpty)
        }
    }
}
