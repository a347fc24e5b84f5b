import Foundation
import GooglePlay
import NIOHTTP1
import StoreSimulator
import Storekeeper
import StorekeeperStorage
import Testing

/// The Google Play story end to end: simulated purchase → Pub/Sub push (OIDC-authenticated) →
/// inbox → the current state fetched from the simulated Android Publisher API → acknowledgement →
/// customer view.
@Suite(.serialized) struct GooglePlayLifecycleTests {
    static let package = ServerHarness.packageName

    @Test(arguments: StorageBackend.available) func subscriptionLifecycleThroughRealTimeNotifications(
        _ backend: StorageBackend
    ) async throws {
        try await ServerHarness.run(on: backend) { h in
            let play = h.simulator.googlePlay
            let account = try await h.createCustomer("gina")
            let bought = try play.purchaseSubscription(
                packageName: Self.package, productId: "premium",
                options: PlayPurchaseOptions(obfuscatedExternalAccountId: account.uuidString))
            let token = bought.purchaseToken
            try await h.settle()
            var entitlements = try await h.entitlements("gina")
            #expect(entitlements["pro"]?.active == true)
            #expect(entitlements["pro"]?.state == "active")
            // Acknowledged on receipt, so Google will not refund it after three days.
            #expect(play.subscription(token)?.acknowledged == true)
            try await h.advance(days: 4)
            #expect(play.subscription(token)?.subscriptionState == "SUBSCRIPTION_STATE_ACTIVE")

            // Renewal (order ..0) keeps access.
            try await h.advance(days: 28)
            #expect(play.subscription(token)?.orderIds.count == 2)
            #expect(try await h.entitlements("gina")["pro"]?.active == true)

            // Billing fails: grace keeps access, account hold removes it, recovery restores it.
            try play.failBilling(token)
            try await h.advance(days: 29)
            entitlements = try await h.entitlements("gina")
            #expect(entitlements["pro"]?.active == true)
            #expect(entitlements["pro"]?.state == "grace_period")
            try await h.advance(days: 3)
            entitlements = try await h.entitlements("gina")
            #expect(entitlements["pro"]?.active == false)
            #expect(entitlements["pro"]?.state == "billing_retry")
            let recoveredAt = h.simulator.clock.now()
            let recovery = try #require(try play.recoverBilling(token))
            try await h.advance(days: 0.01)
            #expect(try await h.entitlements("gina")["pro"]?.active == true)
            // Each order dated when it was placed: the renewal at the period's end, the recovery's
            // when its notification said (days after the failed renewal), not the subscription's start.
            let orders = try await h.storage.transaction { try await $0.transactions(of: .googlePlay(token)) }
            let dates = Dictionary(uniqueKeysWithValues: orders.map { ($0.fact.id, $0.fact.purchasedAt) })
            #expect(dates.count == 3)
            // (To the millisecond: Google's times are in milliseconds.)
            let recoveryDate = try #require(dates[recovery])
            #expect(abs(recoveryDate.timeIntervalSince(recoveredAt)) < 0.001, "\(recoveryDate) \(recoveredAt)")
            #expect(Set(dates.values).count == 3, "\(dates)")

            // Cancel: access until the paid period ends, then expired.
            try play.cancelSubscription(token)
            try await h.advance(days: 0.01)
            entitlements = try await h.entitlements("gina")
            #expect(entitlements["pro"]?.active == true)
            #expect(entitlements["pro"]?.state == "canceled")
            try await h.advance(days: 32)
            entitlements = try await h.entitlements("gina")
            #expect(entitlements["pro"]?.active == false)
            #expect(entitlements["pro"]?.state == "expired")

            let history = try await h.storage.transaction { try await $0.stateChanges(of: .googlePlay(token)) }
            #expect(history.map(\.to).contains(.gracePeriod))
            #expect(history.map(\.to).contains(.billingRetry))
            #expect(history.last?.to == .expired)
        }
    }

    @Test(arguments: StorageBackend.available) func pauseResumeAndRestart(_ backend: StorageBackend) async throws {
        try await ServerHarness.run(on: backend) { h in
            let play = h.simulator.googlePlay
            let token = try await h.googlePlaySubscription("paula")
            try await h.settle()
            try play.pauseSubscription(token)
            try await h.advance(days: 31)
            var entitlements = try await h.entitlements("paula")
            #expect(entitlements["pro"]?.active == false)
            #expect(entitlements["pro"]?.state == "paused")
            try play.resumeSubscription(token)
            try await h.advance(days: 0.01)
            #expect(try await h.entitlements("paula")["pro"]?.active == true)

            try play.cancelSubscription(token)
            try await h.settle()
            #expect(try await h.entitlements("paula")["pro"]?.state == "canceled")
            try play.restartSubscription(token)
            try await h.advance(days: 0.01)
            entitlements = try await h.entitlements("paula")
            #expect(entitlements["pro"]?.active == true)
            #expect(entitlements["pro"]?.state == "active")
        }
    }

    @Test(arguments: StorageBackend.available) func upgradeSupersedesTheOldTokenAndGrantsTheNewProduct(
        _ backend: StorageBackend
    ) async throws {
        try await ServerHarness.run(on: backend) { h in
            let play = h.simulator.googlePlay
            let old = try await h.googlePlaySubscription("uma")
            try await h.settle()
            let new = try play.changeSubscription(old, toProductId: "premium.max").purchaseToken
            #expect(play.subscription(new)?.linkedPurchaseToken == old)
            try await h.settle()
            let entitlements = try await h.entitlements("uma")
            #expect(entitlements["max"]?.active == true)
            #expect(entitlements["pro"]?.active == true)
            #expect(play.subscription(new)?.acknowledged == true)
            let oldHistory = try await h.storage.transaction { try await $0.stateChanges(of: .googlePlay(old)) }
            #expect(oldHistory.last?.to == .superseded)
        }
    }

    /// An upgrade whose payment is pending replaces nothing yet: the customer keeps the old
    /// subscription's access while the new purchase waits, keeps it if the payment is canceled,
    /// and has the new product instead once a payment completes.
    @Test(arguments: StorageBackend.available) func aPendingUpgradeLeavesTheOldSubscriptionUntilItIsPaid(
        _ backend: StorageBackend
    ) async throws {
        try await ServerHarness.run(on: backend) { h in
            let play = h.simulator.googlePlay
            let old = try await h.googlePlaySubscription("vic")
            try await h.settle()
            func presentedByTheApp(_ token: String) async throws {
                let (status, body) = try await h.request(
                    .POST, "/v1/customers/vic/purchases/google-play",
                    json: #"{"purchaseToken":"\#(token)","packageName":"\#(Self.package)"}"#)
                #expect(status == 200, "\(body)")
            }

            let canceled = try play.changeSubscription(old, toProductId: "premium.max", pending: true).purchaseToken
            try await presentedByTheApp(canceled)
            var entitlements = try await h.entitlements("vic")
            #expect(entitlements["pro"]?.active == true)
            #expect(entitlements["max"]?.active != true)
            try play.cancelPendingPurchase(canceled)
            try await h.advance(days: 0.01)
            entitlements = try await h.entitlements("vic")
            #expect(entitlements["pro"]?.active == true)
            #expect(entitlements["max"]?.active != true)
            let oldPurchase = try await h.storage.transaction { try await $0.purchase(.googlePlay(old)) }
            #expect(oldPurchase?.state == .active)

            let paid = try play.changeSubscription(old, toProductId: "premium.max", pending: true).purchaseToken
            try await presentedByTheApp(paid)
            #expect(try await h.entitlements("vic")["pro"]?.active == true)
            try play.completePendingPurchase(paid)
            try await h.advance(days: 0.01)
            entitlements = try await h.entitlements("vic")
            #expect(entitlements["max"]?.active == true)
            let replaced = try await h.storage.transaction { try await $0.purchase(.googlePlay(old)) }
            #expect(replaced?.state == .superseded)
        }
    }

    @Test(arguments: StorageBackend.available) func submittedPurchasesAreLinkedAcknowledgedAndConsumed(
        _ backend: StorageBackend
    ) async throws {
        try await ServerHarness.run(on: backend) { h in
            let play = h.simulator.googlePlay
            _ = try await h.createCustomer("sam")
            // Bought without an account id and before any push reached the server.
            try play.setPushSubscription(nil, packageName: Self.package)
            let gems = try play.purchaseProduct(packageName: Self.package, productId: "gems", quantity: 3)
            let lifetime = try play.purchaseProduct(packageName: Self.package, productId: "lifetime")

            let (status, view) = try await h.request(
                .POST, "/v1/customers/sam/purchases/google-play",
                json: #"{"purchaseToken": "\#(gems.purchaseToken)", "productId": "gems"}"#)
            #expect(status == 200)
            #expect((view["balances"] as? [String: Int])?["coins"] == 30)
            #expect(play.productPurchase(gems.purchaseToken)?.consumptionState == .consumed)

            // Without productId: found through purchases.productsv2.
            let second = try await h.request(
                .POST, "/v1/customers/sam/purchases/google-play",
                json: #"{"purchaseToken": "\#(lifetime.purchaseToken)"}"#)
            #expect(second.status == 200)
            #expect(try await h.entitlements("sam")["lifetime"]?.active == true)
            #expect(play.productPurchase(lifetime.purchaseToken)?.acknowledgementState == .acknowledged)

            // Submitting again changes nothing (credits are not granted twice).
            _ = try await h.request(
                .POST, "/v1/customers/sam/purchases/google-play",
                json: #"{"purchaseToken": "\#(gems.purchaseToken)", "productId": "gems"}"#)
            #expect(try await h.balances("sam")["coins"] == 30)

            // An unknown token is a 404 with a specific error; nothing is stored.
            let unknown = try await h.request(
                .POST, "/v1/customers/sam/purchases/google-play",
                json: #"{"purchaseToken": "no-such-token", "productId": "gems"}"#)
            #expect(unknown.status == 404)
            #expect((unknown.body["error"] as? [String: Any])?["code"] as? String == "purchase-not-found")
        }
    }

    /// A quantity-based partial refund stays when the purchase is read again later (the app
    /// presents its token once more): Google's answer then says Purchased, with the refunded units
    /// gone from `refundableQuantity`. (Read as not refunded at a newer time, it gave the refunded
    /// credits back.)
    @Test(arguments: StorageBackend.available) func aPartialRefundStaysWhenThePurchaseIsReadAgain(
        _ backend: StorageBackend
    ) async throws {
        try await ServerHarness.run(on: backend) { h in
            let play = h.simulator.googlePlay
            let options = try await h.googlePlayBuyer("uma")
            let gems = try play.purchaseProduct(
                packageName: Self.package, productId: "gems", quantity: 4, options: options)
            try await h.settle()
            #expect(try await h.balances("uma")["coins"] == 40)
            try play.refund(orderId: try #require(gems.orderId), quantity: 1)
            try await h.settle()
            #expect(try await h.balances("uma")["coins"] == 30)

            try await h.advance(days: 1)
            let again = try await h.request(
                .POST, "/v1/customers/uma/purchases/google-play",
                json: #"{"purchaseToken": "\#(gems.purchaseToken)", "productId": "gems"}"#)
            #expect(again.status == 200)
            #expect(try await h.balances("uma")["coins"] == 30)
        }
    }

    @Test(arguments: StorageBackend.available) func refundsAndVoidsRemoveAccessAndCredits(_ backend: StorageBackend)
        async throws
    {
        try await ServerHarness.run(on: backend) { h in
            let play = h.simulator.googlePlay
            let options = try await h.googlePlayBuyer("rita")
            let sub = try play.purchaseSubscription(packageName: Self.package, productId: "premium", options: options)
            let gems = try play.purchaseProduct(
                packageName: Self.package, productId: "gems", quantity: 4, options: options)
            let lifetime = try play.purchaseProduct(packageName: Self.package, productId: "lifetime", options: options)
            try await h.settle()
            #expect(try await h.balances("rita")["coins"] == 40)
            #expect(try await h.entitlements("rita")["lifetime"]?.active == true)
            try await h.advance(days: 1)

            try play.refund(orderId: try #require(sub.orderId), revoke: true)
            try play.refund(orderId: try #require(gems.orderId), quantity: 1)
            try play.refund(orderId: try #require(lifetime.orderId))
            try await h.settle()
            let entitlements = try await h.entitlements("rita")
            #expect(entitlements["pro"]?.active == false)
            #expect(entitlements["pro"]?.state == "revoked")
            #expect(entitlements["lifetime"]?.active == false)
            #expect(try await h.balances("rita")["coins"] == 30)
        }
    }

    /// Google answers about a revoked subscription with `SUBSCRIPTION_STATE_EXPIRED`, and only the
    /// revocation's push says more. A push processed after it (a renewal's, late or redelivered)
    /// leaves the purchase revoked, as in-order delivery does, and adds no event. (It was taken for
    /// an expiry: `revoked` became `expired`, with a `subscription.expired` after the revocation.)
    @Test(arguments: StorageBackend.available) func aPushProcessedAfterTheRevocationLeavesItRevoked(
        _ backend: StorageBackend
    ) async throws {
        try await ServerHarness.run(on: backend) { h in
            let play = h.simulator.googlePlay
            let token = try await h.googlePlaySubscription("rhea")
            try await h.settle()
            try await h.advance(days: 32)  // renewed
            let orders = try #require(play.subscription(token)?.orderIds)
            #expect(orders.count == 2)
            try play.refund(orderId: try #require(orders.last), revoke: true)
            try await h.settle()
            #expect(try await h.entitlementView("rhea", "pro")?.state == .revoked)
            func eventCount() async throws -> Int {
                let (status, feed) = try await h.request(.GET, "/v1/events?after=0&limit=500")
                #expect(status == 200)
                return (feed["events"] as? [Any])?.count ?? -1
            }
            let events = try await eventCount()

            try await h.advance(days: 0.01)
            let identity = h.simulator.googleIdentity
            let authorization =
                "Bearer "
                + (try identity.makePushToken(audience: ServerHarness.pushAudience, email: ServerHarness.pushAccount))
            let late = try await h.request(
                .POST, "/v1/notifications/google-play",
                json: try Self.pushBody(packageName: Self.package, purchaseToken: token), key: nil,
                authorization: authorization)
            #expect(late.status == 200)
            try await h.settle()
            let view = try await h.entitlementView("rhea", "pro")
            #expect(view?.state == .revoked)
            #expect(view?.active == false)
            #expect(try await eventCount() == events)
        }
    }

    @Test(arguments: StorageBackend.available) func pendingPurchaseGrantsNothingUntilPaid(_ backend: StorageBackend)
        async throws
    {
        try await ServerHarness.run(on: backend) { h in
            let play = h.simulator.googlePlay
            let buyer = try await h.googlePlayBuyer("pat", pending: true)
            let token = try play.purchaseSubscription(
                packageName: Self.package, productId: "premium",
                options: buyer
            ).purchaseToken
            try await h.settle()
            // A pending subscription sends SUBSCRIPTION_PENDING_PURCHASE_CANCELED or PURCHASED later;
            // before payment the customer has no access.
            #expect(try await h.entitlements("pat")["pro"]?.active != true)
            try play.completePendingPurchase(token)
            try await h.settle()
            #expect(try await h.entitlements("pat")["pro"]?.active == true)
            #expect(play.subscription(token)?.acknowledged == true)
        }
    }

    @Test(arguments: StorageBackend.available) func pushesWithoutAValidTokenAreRefusedAndStoreNothing(
        _ backend: StorageBackend
    ) async throws {
        try await ServerHarness.run(on: backend) { h in
            let play = h.simulator.googlePlay
            let identity = h.simulator.googleIdentity
            let token = try play.purchaseSubscription(packageName: Self.package, productId: "premium").purchaseToken
            try await h.settle()
            let before = try await h.storage.transaction { try await $0.notificationCounts() }
            let body = try Self.pushBody(packageName: Self.package, purchaseToken: token)

            let unknownPackage = try Self.pushBody(packageName: "com.example.elsewhere", purchaseToken: token)
            func push(_ authorization: String?, body: String = body) async throws -> (status: Int, code: String?) {
                let (status, answer) = try await h.request(
                    .POST, "/v1/notifications/google-play", json: body,
                    key: nil, authorization: authorization)
                return (status, (answer["error"] as? [String: Any])?["code"] as? String)
            }
            let audience = ServerHarness.pushAudience
            let email = ServerHarness.pushAccount
            let forged = try identity.makeUntrustedPushToken(audience: audience, email: email)
            let wrongAudience = try identity.makePushToken(audience: "https://elsewhere.example", email: email)
            let wrongEmail = try identity.makePushToken(audience: audience, email: "someone@example.com")
            let unverified = try identity.makePushToken(audience: audience, email: email, emailVerified: false)
            let expired = try identity.makePushToken(
                audience: audience, email: email, issuedAt: ServerHarness.start.addingTimeInterval(-7200),
                expiresIn: 3600)
            for authorization in [
                nil, "Bearer", "Bearer " + forged, "Bearer " + wrongAudience, "Bearer " + wrongEmail,
                "Bearer " + unverified, "Bearer " + expired,
            ] {
                let answer = try await push(authorization)
                #expect(answer.status == 401, "\(authorization ?? "none")")
                #expect(answer.code == "invalid-push-token")
                // A package no app has: the same 401, which tells nothing about what is configured.
                let elsewhere = try await push(authorization, body: unknownPackage)
                #expect(elsewhere.status == 401, "\(authorization ?? "none")")
                #expect(elsewhere.code == "invalid-push-token")
            }
            // Garbled bodies with a valid token: 400, nothing stored.
            let valid = "Bearer " + (try identity.makePushToken(audience: audience, email: email))
            let garbled = try await h.request(
                .POST, "/v1/notifications/google-play", json: #"{"message": {"data": "%%%"}}"#, key: nil,
                authorization: valid)
            #expect(garbled.status == 400)
            let after = try await h.storage.transaction { try await $0.notificationCounts() }
            #expect(after == before)

            // The same body with a valid token is accepted; to Google's own push (a token the
            // configured app accepts), a package no app has is named as such.
            #expect(try await push(valid).status == 200)
            let unknown = try await push(valid, body: unknownPackage)
            #expect(unknown.status == 422 && unknown.code == "unknown-app")
        }
    }

    @Test func aNotificationThatCannotBeProcessedIsListedThenProcessedWhenTheStoreRecovers() async throws {
        try await ServerHarness.run { h in
            let play = h.simulator.googlePlay
            let buyer = try await h.googlePlayBuyer("fiona")
            // Google's API fails (every retry of every attempt) while the push arrives.
            h.simulator.faults.add([APIFault(pathPrefix: "/androidpublisher/", status: 500, times: 1_000)])
            _ = try play.purchaseSubscription(
                packageName: Self.package, productId: "premium",
                options: buyer)
            try await play.deliveriesSettled()
            var listed: [[String: Any]] = []
            let deadline = ContinuousClock.now.advanced(by: .seconds(60))
            while listed.isEmpty, ContinuousClock.now < deadline {
                listed = try await h.request(.GET, "/v1/inbox").body["notifications"] as? [[String: Any]] ?? []
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(listed.count == 1)
            #expect(listed.first?["store"] as? String == "google_play")
            #expect(listed.first?["status"] as? String == "failed")
            #expect((listed.first?["lastError"] as? String)?.contains("store-unavailable") == true)
            #expect(try await h.entitlements("fiona")["pro"]?.active != true)
            // Read-only keys may list; a bad status is refused.
            let readOnly = try await h.request(.GET, "/v1/inbox?status=failed", key: ServerHarness.readOnlyKey)
            #expect(readOnly.status == 200)
            let bad = try await h.request(.GET, "/v1/inbox?status=lost")
            #expect(bad.status == 400)
            #expect((bad.body["error"] as? [String: Any])?["code"] as? String == "invalid-query")

            h.simulator.faults.clear()
            // The retry is due a backoff later on the server's (simulated, stopped) clock.
            try await h.advance(days: 0.01)
            #expect(try await h.entitlements("fiona")["pro"]?.active == true)
            let failed = try await h.request(.GET, "/v1/inbox").body["notifications"] as? [[String: Any]]
            #expect(failed?.isEmpty == true)
            let processed =
                try await h.request(.GET, "/v1/inbox?status=processed&limit=10")
                .body["notifications"] as? [[String: Any]]
            #expect(processed?.count == 1)
        }
    }

    @Test(arguments: StorageBackend.available) func deferralsCanceledPendingPurchasesAndTestNotifications(
        _ backend: StorageBackend
    ) async throws {
        try await ServerHarness.run(on: backend) { h in
            let play = h.simulator.googlePlay
            let account = try await h.createCustomer("dana")
            let options = PlayPurchaseOptions(obfuscatedExternalAccountId: account.uuidString)
            let token = try play.purchaseSubscription(packageName: Self.package, productId: "premium", options: options)
                .purchaseToken
            try await h.advance(days: 0.01)
            let before = try #require(try await h.entitlementView("dana", "pro")?.expiresAt)

            // The developer defers the renewal (SUBSCRIPTION_DEFERRED): access lasts longer.
            let account2 = try h.simulator.googleIdentity.makeServiceAccount()
            let client = AndroidPublisherClient(
                configuration: .init(baseURL: h.simulator.endpoints?.baseURL ?? ""),
                tokens: ServiceAccountTokenProvider(
                    key: try ServiceAccountKey(jsonData: account2.jsonKey), clock: h.simulator.clock))
            _ = try await client.deferSubscription(
                packageName: Self.package, token: token,
                DeferSubscriptionPurchaseRequest(deferralContext: DeferralContext(deferDuration: "864000s")))
            try await h.advance(days: 0.01)
            let after = try #require(try await h.entitlementView("dana", "pro")?.expiresAt)
            #expect(after.timeIntervalSince(before) == 10 * ServerHarness.day)

            // A pending purchase whose payment never arrives (SUBSCRIPTION_PENDING_PURCHASE_CANCELED)
            // and a pending one-time purchase canceled (ONE_TIME_PRODUCT_CANCELED) grant nothing.
            let pending = try play.purchaseSubscription(
                packageName: Self.package, productId: "premium.max",
                options: PlayPurchaseOptions(obfuscatedExternalAccountId: account.uuidString, pending: true))
            let pendingGems = try play.purchaseProduct(
                packageName: Self.package, productId: "gems",
                options: PlayPurchaseOptions(obfuscatedExternalAccountId: account.uuidString, pending: true))
            try await h.advance(days: 0.01)
            try play.cancelPendingPurchase(pending.purchaseToken)
            try play.cancelPendingPurchase(pendingGems.purchaseToken)
            try await h.advance(days: 0.01)
            #expect(try await h.entitlements("dana")["max"]?.active != true)
            #expect(try await h.balances("dana")["coins"] ?? 0 == 0)

            // The Play Console's test notification is stored and processed, changing nothing.
            try play.sendTestNotification(packageName: Self.package)
            try await h.advance(days: 0.01)

            let events = Set(play.pushes.map(\.notification.eventName))
            for event in [
                "SUBSCRIPTION_PURCHASED", "SUBSCRIPTION_DEFERRED", "SUBSCRIPTION_PENDING_PURCHASE_CANCELED",
                "ONE_TIME_PRODUCT_CANCELED", "TEST",
            ] {
                #expect(events.contains(event), "the simulator sent no \(event)")
            }
            let counts = try await h.storage.transaction { try await $0.notificationCounts() }
            #expect(counts[.processed] == play.pushes.count)
            #expect((counts[.failed] ?? 0) + (counts[.pending] ?? 0) == 0)
            #expect(try await h.entitlements("dana")["pro"]?.active == true)
        }
    }

    /// A Pub/Sub push body carrying a SUBSCRIPTION_RENEWED notification for `purchaseToken`.
    static func pushBody(packageName: String, purchaseToken: String) throws -> String {
        let notification = """
            {"version":"1.0","packageName":"\(packageName)","eventTimeMillis":"1767225600000",\
            "subscriptionNotification":{"version":"1.0","notificationType":2,"purchaseToken":"\(purchaseToken)"}}
            """
        let data = Data(notification.utf8).base64EncodedString()
        return """
            {"message":{"data":"\(data)","messageId":"manual-\(UUID().uuidString)",\
            "publishTime":"2026-01-01T00:00:00Z"},"subscription":"projects/p/subscriptions/s"}
            """
    }
}
