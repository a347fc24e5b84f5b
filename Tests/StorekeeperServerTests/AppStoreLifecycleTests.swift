import Foundation
import NIOHTTP1
import StoreSimulator
import Storekeeper
import StorekeeperStorage
import Testing

/// The App Store story end to end: simulator → webhook → inbox → processing → customer view.
@Suite(.serialized) struct AppStoreLifecycleTests {
    @Test(arguments: StorageBackend.available) func subscriptionLifecycleThroughNotifications(_ backend: StorageBackend)
        async throws
    {
        try await ServerHarness.run(on: backend) { h in
            let token = try await h.createCustomer("alice")
            let bought = try h.simulator.appStore.purchase(
                customer: "alice", product: "pro.monthly", appAccountToken: token)
            try await h.settle()
            var entitlements = try await h.entitlements("alice")
            #expect(entitlements["pro"]?.active == true)
            #expect(entitlements["pro"]?.state == "active")

            // Renewal: still active a month later.
            try await h.advance(days: 31)
            #expect(try await h.entitlements("alice")["pro"]?.active == true)

            // Billing fails: billing retry (no grace period configured) removes access; recovery restores it.
            try h.simulator.appStore.failBilling(bought.originalTransactionId)
            try await h.advance(days: 31)
            entitlements = try await h.entitlements("alice")
            #expect(entitlements["pro"]?.active == false)
            #expect(entitlements["pro"]?.state == "billing_retry")
            try h.simulator.appStore.recoverBilling(bought.originalTransactionId)
            try await h.settle()
            #expect(try await h.entitlements("alice")["pro"]?.active == true)

            // Cancel: access until expiry, then expired.
            try h.simulator.appStore.setAutoRenew(bought.originalTransactionId, on: false)
            try await h.settle()
            entitlements = try await h.entitlements("alice")
            #expect(entitlements["pro"]?.active == true)
            #expect(entitlements["pro"]?.state == "canceled")
            try await h.advance(days: 32)
            entitlements = try await h.entitlements("alice")
            #expect(entitlements["pro"]?.active == false)
            #expect(entitlements["pro"]?.state == "expired")

            let history = try await h.storage.transaction {
                try await $0.stateChanges(of: .appStore(bought.originalTransactionId))
            }
            #expect(history.map(\.to).contains(.billingRetry))
            #expect(history.last?.to == .expired)

            let metrics = try await h.text("/metrics")
            let processed = metrics.split(separator: "\n").filter {
                $0.hasPrefix("storekeeper_notifications_processed_total") && $0.contains("processed")
            }
            #expect(processed.count == 1, "\(metrics)")
            #expect(processed.first.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0 >= history.count)
        }
    }

    @Test(arguments: StorageBackend.available) func refundRemovesAccessAndAConsumableRefundTakesCreditsBack(
        _ backend: StorageBackend
    ) async throws {
        try await ServerHarness.run(on: backend) { h in
            let token = try await h.createCustomer("bob")
            let sub = try h.simulator.appStore.purchase(customer: "bob", product: "pro.monthly", appAccountToken: token)
            let coins = try h.simulator.appStore.purchase(customer: "bob", product: "coins.100", appAccountToken: token)
            try await h.settle()
            #expect(try await h.balances("bob")["coins"] == 100)
            #expect(try await h.entitlements("bob")["pro"]?.active == true)

            try h.simulator.appStore.refund(transactionId: sub.transactionId)
            try h.simulator.appStore.refund(transactionId: coins.transactionId, revocationPercentage: 50_000)
            try await h.settle()
            let entitlements = try await h.entitlements("bob")
            #expect(entitlements["pro"]?.active == false)
            #expect(entitlements["pro"]?.state == "revoked")
            #expect(try await h.balances("bob")["coins"] == 50)

            // Debits: idempotent, refused beyond the balance.
            let debit = #"{"amount": 20, "idempotencyKey": "order-1"}"#
            let first = try await h.request(.POST, "/v1/customers/bob/balances/coins/debits", json: debit)
            let again = try await h.request(.POST, "/v1/customers/bob/balances/coins/debits", json: debit)
            #expect(first.status == 200)
            #expect(again.status == 200)
            #expect(try await h.balances("bob")["coins"] == 30)
            let tooMuch = try await h.request(
                .POST, "/v1/customers/bob/balances/coins/debits", json: #"{"amount": 31, "idempotencyKey": "order-2"}"#
            )
            #expect(tooMuch.status == 409)
            #expect((tooMuch.body["error"] as? [String: Any])?["code"] as? String == "insufficient-balance")
            let reused = try await h.request(
                .POST, "/v1/customers/bob/balances/coins/debits", json: #"{"amount": 5, "idempotencyKey": "order-1"}"#
            )
            #expect(reused.status == 409)
            #expect((reused.body["error"] as? [String: Any])?["code"] as? String == "idempotency-key-reused")
            #expect(try await h.balances("bob")["coins"] == 30)
        }
    }

    @Test(arguments: StorageBackend.available) func duplicatedAndReorderedDeliveriesGiveTheInOrderState(
        _ backend: StorageBackend
    ) async throws {
        try await ServerHarness.run(on: backend) { h in
            let token = try await h.createCustomer("carol")
            let bought = try h.simulator.appStore.purchase(
                customer: "carol", product: "pro.monthly", appAccountToken: token)
            try await h.settle()
            let stored = h.simulator.appStore.notifications
            // Deliver every notification again, newest first.
            for notification in stored.reversed() {
                let body = #"{"signedPayload": "\#(notification.signedPayload)"}"#
                let (status, _) = try await h.request(.POST, "/v1/notifications/app-store", json: body, key: nil)
                #expect(status == 200)
            }
            try await h.settle()
            let entitlements = try await h.entitlements("carol")
            #expect(entitlements["pro"]?.active == true)
            let history = try await h.storage.transaction {
                try await $0.stateChanges(of: .appStore(bought.originalTransactionId))
            }
            #expect(history.count == 1)
        }
    }

    @Test(arguments: StorageBackend.available) func forgedAndGarbledNotificationsAreRefusedAndChangeNothing(
        _ backend: StorageBackend
    ) async throws {
        try await ServerHarness.run(on: backend) { h in
            _ = try await h.createCustomer("dave")
            let forger = try TestCertificateChain(options: .init(now: ServerHarness.start, name: "Forger"))
            let forged = try AppStoreSigner(chain: forger).sign(
                payloadJSON: Data(
                    #"{"notificationType":"TEST","notificationUUID":"forged-1","signedDate":1767225600000,"data":{"bundleId":"com.example.storekeeper","environment":"Sandbox"}}"#
                        .utf8)
            )
            for body in [#"{"signedPayload": "\#(forged)"}"#, #"{"signedPayload": "a.b.c"}"#, "not json", "{}"] {
                let (status, answer) = try await h.request(.POST, "/v1/notifications/app-store", json: body, key: nil)
                #expect(status == 400, "\(body.prefix(40)) got \(status)")
                #expect((answer["error"] as? [String: Any])?["code"] != nil)
            }

            // A payload claiming an app that is not configured: a forged one is refused for its
            // signature, as for a configured app; only one Apple (here the simulator) signed is
            // told the app is unknown. (A forged one was told too, so anyone could ask which
            // bundle ids are configured.)
            func post(_ token: String) async throws -> (status: Int, code: String?) {
                let (status, answer) = try await h.request(
                    .POST, "/v1/notifications/app-store", json: #"{"signedPayload": "\#(token)"}"#, key: nil)
                return (status, (answer["error"] as? [String: Any])?["code"] as? String)
            }
            let elsewhere = Data(
                #"{"notificationType":"TEST","notificationUUID":"elsewhere-1","signedDate":1767225600000,"data":{"bundleId":"com.example.elsewhere","environment":"Sandbox"}}"#
                    .utf8)
            let forgedHere = try await post(forged)
            let forgedElsewhere = try await post(try AppStoreSigner(chain: forger).sign(payloadJSON: elsewhere))
            #expect(forgedElsewhere.status == forgedHere.status && forgedElsewhere.code == forgedHere.code)
            let signedElsewhere = try await post(
                try AppStoreSigner(chain: try #require(h.simulator.chain)).sign(payloadJSON: elsewhere))
            #expect(signedElsewhere.status == 422 && signedElsewhere.code == "unknown-app")

            let counts = try await h.storage.transaction { try await $0.notificationCounts() }
            #expect(counts.values.reduce(0, +) == 0)
        }
    }

    @Test(arguments: StorageBackend.available) func customerAPIRequiresKeysAndValidatesInput(_ backend: StorageBackend)
        async throws
    {
        try await ServerHarness.run(on: backend) { h in
            #expect(try await h.request(.PUT, "/v1/customers/erin", key: nil).status == 401)
            #expect(try await h.request(.PUT, "/v1/customers/erin", key: "wrong-key-wrong-key").status == 401)
            #expect(try await h.request(.PUT, "/v1/customers/erin", key: ServerHarness.readOnlyKey).status == 403)
            #expect(try await h.request(.GET, "/v1/customers/erin", key: ServerHarness.readOnlyKey).status == 404)
            _ = try await h.createCustomer("erin")
            #expect(try await h.request(.GET, "/v1/customers/erin", key: ServerHarness.readOnlyKey).status == 200)
            let garbled = try await h.request(
                .POST, "/v1/customers/erin/purchases/app-store", json: #"{"signedTransaction": "x.y.z"}"#
            )
            #expect(garbled.status == 400)
            #expect(try await h.request(.GET, "/health", key: nil).status == 200)
            #expect(try await h.request(.GET, "/ready", key: nil).status == 200)
        }
    }

    /// An app that presents a renewed subscription by its original transaction (what many apps
    /// keep) links it in its current state, read from the subscription's latest transaction.
    /// (The submitted transaction's period had ended while the status said active: it was taken
    /// for an upgraded one and refused with 422 `transaction-upgraded`.)
    @Test func aRenewedSubscriptionPresentedByItsOriginalTransactionIsLinked() async throws {
        try await ServerHarness.run { h in
            let store = h.simulator.appStore
            let bought = try store.purchase(customer: "hana", product: "pro.monthly")
            try await h.settle()
            try await h.advance(days: 62)
            #expect(store.subscription(bought.originalTransactionId)?.transactionIds.count == 3)
            _ = try await h.createCustomer("hana")
            let (status, body) = try await h.request(
                .POST, "/v1/customers/hana/purchases/app-store",
                json: #"{"transactionId": "\#(bought.originalTransactionId)"}"#)
            #expect(status == 200, "\(body)")
            let pro = try await h.entitlements("hana")["pro"]
            #expect(pro?.active == true)
            let stored = try await h.storage.transaction {
                try await $0.purchase(.appStore(bought.originalTransactionId))
            }
            #expect(stored?.customerID == CustomerID("hana"))
            #expect(stored?.expiresAt == store.subscription(bought.originalTransactionId)?.expiresDate)
        }
    }

    @Test func aSecondCustomerPresentingTheSamePurchaseMeetsThePolicy() async throws {
        for policy in [OwnershipPolicy.keep, .transfer] {
            try await ServerHarness.run(policy: policy) { h in
                let token = try await h.createCustomer("frank")
                let bought = try h.simulator.appStore.purchase(
                    customer: "frank", product: "pro.monthly", appAccountToken: token
                )
                try await h.settle()
                _ = try await h.createCustomer("grace")
                let submission = #"{"transactionId": "\#(bought.transactionId)", "environment": "Sandbox"}"#
                let (status, body) = try await h.request(
                    .POST, "/v1/customers/grace/purchases/app-store", json: submission)
                switch policy {
                case .keep:
                    #expect(status == 409)
                    #expect((body["error"] as? [String: Any])?["code"] as? String == "ownership-conflict")
                    #expect(try await h.entitlements("frank")["pro"]?.active == true)
                default:
                    #expect(status == 200)
                    #expect(try await h.entitlements("grace")["pro"]?.active == true)
                    #expect(try await h.entitlements("frank")["pro"] == nil)
                    let transfers = try await h.storage.transaction {
                        try await $0.transfers(of: .appStore(bought.originalTransactionId))
                    }
                    #expect(transfers.count == 1)
                }
            }
        }
    }

    @Test(arguments: StorageBackend.available) func appReceiptsAreResolvedThroughTheTransactionHistory(
        _ backend: StorageBackend
    ) async throws {
        try await ServerHarness.run(on: backend) { h in
            let store = h.simulator.appStore
            try store.setNotificationURL(nil, bundleId: ServerHarness.bundleID)  // only the submission counts
            _ = try await h.createCustomer("rhea")
            // Bought on an older app version (StoreKit 1, no appAccountToken): a subscription that
            // renewed once, and coins.
            let sub = try store.purchase(customer: "someone-at-apple", product: "pro.monthly")
            try store.purchase(customer: "someone-at-apple", product: "coins.100")
            try store.advance(by: 31 * ServerHarness.day)
            let receipt = try store.makeAppReceipt(customer: "someone-at-apple", bundleId: ServerHarness.bundleID)
                .base64EncodedString()

            let (status, body) = try await h.request(
                .POST, "/v1/customers/rhea/purchases/app-store", json: #"{"appReceipt": "\#(receipt)"}"#)
            #expect(status == 200, "\(body)")
            #expect(try await h.entitlements("rhea")["pro"]?.active == true)
            #expect(try await h.balances("rhea")["coins"] == 100)
            // Made outside the app: the customer's appAccountToken is now set on it at the store.
            let token = try await h.createCustomer("rhea")
            let latest = try #require(store.subscription(sub.originalTransactionId)?.transactionIds.last)
            #expect(store.transaction(latest)?.appAccountToken?.lowercased() == token.uuidString.lowercased())

            let garbled = try await h.request(
                .POST, "/v1/customers/rhea/purchases/app-store", json: #"{"appReceipt": "bm90IGEgcmVjZWlwdA=="}"#)
            #expect(garbled.status == 400)
            #expect((garbled.body["error"] as? [String: Any])?["code"] as? String == "malformed-submission")
        }
    }

    @Test func aStorageFailureOnAWebhookIsA5xxSoTheStoreRetries() async throws {
        try await ServerHarness.run { h in
            let store = h.simulator.appStore
            try store.setNotificationURL(nil, bundleId: ServerHarness.bundleID)
            let token = try await h.createCustomer("sid")
            try store.purchase(customer: "sid", product: "pro.monthly", appAccountToken: token)
            let payload = try #require(store.notifications.last?.signedPayload)
            // The database goes away under the running server.
            try await h.storage.close()
            let (status, body) = try await h.request(
                .POST, "/v1/notifications/app-store", json: #"{"signedPayload": "\#(payload)"}"#, key: nil)
            #expect(status == 503)
            #expect((body["error"] as? [String: Any])?["code"] as? String == "storage-unavailable")
            #expect(try await h.text("/ready").contains("storage unavailable"))
        }
    }
}
