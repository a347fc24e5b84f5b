import AppStoreServer
import AsyncHTTPClient
import Crypto
import Foundation
import Hummingbird
import NIOCore
import NIOHTTP1
import StoreSimulator
import Synchronization
import Testing

/// The test's notification endpoint (playing the server's role): records every POSTed
/// `signedPayload` and answers with planned statuses, then 200.
final class NotificationReceiver: Sendable {
    struct Body: Decodable {
        var signedPayload: String
    }

    private let bodies = Mutex<[String]>([])
    private let plannedStatuses = Mutex<[Int]>([])
    private let task = Mutex<Task<Void, any Error>?>(nil)
    private let port = Mutex<Int>(0)

    var url: String { "http://127.0.0.1:\(port.withLock { $0 })/notifications" }
    var received: [String] { bodies.withLock { $0 } }

    /// The next answers, in order; 200 once they are used up.
    func plan(_ statuses: [Int]) { plannedStatuses.withLock { $0.append(contentsOf: statuses) } }

    func start() async throws {
        let router = Router()
        router.post("notifications") { [self] request, context -> Response in
            let body = try await request.decode(as: Body.self, context: context)
            bodies.withLock { $0.append(body.signedPayload) }
            let status = plannedStatuses.withLock { $0.isEmpty ? 200 : $0.removeFirst() }
            return Response(status: HTTPResponse.Status(code: status))
        }
        let (stream, continuation) = AsyncStream.makeStream(of: Int?.self)
        let application = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port)
                continuation.finish()
            })
        let running = Task {
            defer { continuation.finish() }
            try await application.runService(gracefulShutdownSignals: [])
        }
        task.withLock { $0 = running }
        var iterator = stream.makeAsyncIterator()
        let bound = try #require(await iterator.next() ?? nil)
        port.withLock { $0 = bound }
    }

    func stop() async {
        let running = task.withLock { $0 }
        running?.cancel()
        _ = await running?.result
    }
}

/// A simulator on a stopped clock, a receiver, and a verifier trusting the simulator's root.
struct Harness {
    static let start = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01T00:00:00Z
    static let bundleId = "com.example.simulated"
    static let day: TimeInterval = 86_400

    let simulator: StoreSimulator
    let endpoints: StoreSimulator.Endpoints
    let receiver: NotificationReceiver
    let verifier: SignedDataVerifier
    var appStore: AppStoreSimulation { simulator.appStore }

    static func run(
        gracePeriodDays: Int? = nil, _ body: (Harness) async throws -> Void
    ) async throws {
        let receiver = NotificationReceiver()
        try await receiver.start()
        do {
            try await StoreSimulator.withRunning(configuration: .init(start: start, rate: 0)) { simulator, endpoints in
                let roots = try TrustedRoots(appleRootFiles: [], allowedRootFiles: [endpoints.rootCertificatePath])
                let verifier = try SignedDataVerifier(
                    configuration: .init(trustedRoots: roots, bundleId: bundleId, environment: .sandbox))
                let appStore = simulator.appStore
                appStore.addApp(
                    SimulatedApp(
                        bundleId: bundleId, appAppleId: 1_234_567_890, environment: .sandbox,
                        notificationURL: receiver.url, gracePeriodDays: gracePeriodDays))
                try appStore.addProduct(
                    .autoRenewable(
                        "pro.monthly", bundleId: bundleId, group: "pro", level: 2, period: "P1M", price: 9_990))
                try appStore.addProduct(
                    .autoRenewable(
                        "max.monthly", bundleId: bundleId, group: "pro", level: 1, period: "P1M", price: 19_990))
                try appStore.addProduct(
                    .autoRenewable(
                        "pro.yearly", bundleId: bundleId, group: "pro", level: 2, period: "P1Y", price: 99_990))
                try appStore.addProduct(.oneTime("coins.100", bundleId: bundleId, kind: .consumable, price: 990))
                try await body(
                    Harness(simulator: simulator, endpoints: endpoints, receiver: receiver, verifier: verifier))
            }
        } catch {
            await receiver.stop()
            throw error
        }
        await receiver.stop()
    }

    /// Waits for deliveries, then verifies every payload received after the first `from`.
    func received(from index: Int) async throws -> [VerifiedNotification] {
        try await appStore.deliveriesSettled()
        var result: [VerifiedNotification] = []
        for payload in receiver.received.dropFirst(index) {
            result.append(try await verifier.verifyNotification(payload))
        }
        return result
    }

    /// Waits for deliveries and returns the single notification received after the first `index`.
    func next(after index: Int) async throws -> VerifiedNotification {
        let new = try await received(from: index)
        #expect(new.count == 1, "expected one new notification, got \(new.map(\.payload.notificationType))")
        return try #require(new.first)
    }

    func date(_ base: Date, months: Int = 0, years: Int = 0, days: Int = 0) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        return calendar.date(byAdding: DateComponents(year: years, month: months, day: days), to: base) ?? base
    }
}

@Suite struct AppStoreSimulationTests {
    /// A product priced per storefront reports the price and currency of the app's storefront;
    /// elsewhere its own price.
    @Test func aPurchaseIsPricedInTheAppsStorefrontCurrency() async throws {
        var product = SimulatedProduct.autoRenewable(
            "pro.regional", bundleId: Harness.bundleId, group: "regional", level: 1, period: "P1M", price: 9_990)
        product.storefrontPrices = [
            "USA": StorefrontPrice(price: 8_990, currency: "EUR"),
            "JPN": StorefrontPrice(price: 1_500_000, currency: "JPY"),
        ]
        #expect(product.price(in: "JPN") == StorefrontPrice(price: 1_500_000, currency: "JPY"))
        #expect(product.price(in: "GBR") == StorefrontPrice(price: 9_990, currency: "USD"))
        try await Harness.run { h in
            try h.appStore.addProduct(product)
            _ = try h.appStore.purchase(customer: "eve", product: "pro.regional", appAccountToken: UUID())
            let bought = try #require(try await h.next(after: 0).transaction)
            // The harness's app is in the USA storefront.
            #expect(bought.storefront == "USA")
            #expect(bought.price == 8_990 && bought.currency == "EUR")
        }
    }

    @Test func subscriptionRenewsTwiceThenExpiresAfterAutoRenewIsTurnedOff() async throws {
        try await Harness.run { h in
            let token = UUID()
            let purchase = try h.appStore.purchase(customer: "alice", product: "pro.monthly", appAccountToken: token)
            #expect(purchase.originalTransactionId == purchase.transactionId)
            #expect(purchase.transactionId.hasPrefix("2000000") && purchase.transactionId.count == 16)

            let bought = try await h.next(after: 0)
            #expect(bought.payload.notificationType == .subscribed)
            #expect(bought.payload.subtype == .initialBuy)
            #expect(bought.payload.version == "2.0")
            #expect(bought.payload.signedDate == Harness.start)
            #expect(bought.payload.data?.status == .active)
            #expect(bought.payload.data?.appAppleId == 1_234_567_890)
            #expect(bought.payload.data?.bundleId == Harness.bundleId)
            #expect(bought.payload.data?.environment == .sandbox)
            let first = try #require(bought.transaction)
            #expect(first.transactionId == purchase.transactionId)
            #expect(first.originalTransactionId == purchase.originalTransactionId)
            #expect(first.purchaseDate == Harness.start)
            #expect(first.expiresDate == h.date(Harness.start, months: 1))
            #expect(first.transactionReason == .purchase)
            #expect(first.type == .autoRenewableSubscription)
            #expect(first.inAppOwnershipType == .purchased)
            #expect(first.appAccountTokenUUID == token)
            #expect(first.price == 9_990 && first.currency == "USD" && first.storefront == "USA")
            #expect(first.subscriptionGroupIdentifier == "pro")
            #expect(bought.renewalInfo?.autoRenewStatus == .on)
            #expect(bought.renewalInfo?.autoRenewProductId == "pro.monthly")
            #expect(bought.renewalInfo?.renewalDate == first.expiresDate)

            // Two renewals, each continuing where the previous period ended.
            var previous = first
            for renewal in 1...2 {
                try h.appStore.advance(by: 31 * Harness.day)
                let renewed = try await h.next(after: renewal)
                #expect(renewed.payload.notificationType == .didRenew)
                #expect(renewed.payload.subtype == nil)
                #expect(renewed.payload.data?.status == .active)
                let transaction = try #require(renewed.transaction)
                #expect(transaction.originalTransactionId == purchase.originalTransactionId)
                #expect(transaction.transactionId != previous.transactionId)
                #expect(transaction.webOrderLineItemId != previous.webOrderLineItemId)
                #expect(transaction.purchaseDate == previous.expiresDate)
                #expect(transaction.expiresDate == h.date(Harness.start, months: renewal + 1))
                #expect(transaction.originalPurchaseDate == Harness.start)
                #expect(transaction.transactionReason == .renewal)
                #expect(renewed.payload.signedDate == previous.expiresDate)
                previous = transaction
            }

            try h.appStore.setAutoRenew(purchase.originalTransactionId, on: false)
            let disabled = try await h.next(after: 3)
            #expect(disabled.payload.notificationType == .didChangeRenewalStatus)
            #expect(disabled.payload.subtype == .autoRenewDisabled)
            #expect(disabled.renewalInfo?.autoRenewStatus == .off)
            #expect(disabled.transaction?.transactionId == previous.transactionId)
            // Turning it off again changes nothing and says nothing.
            try h.appStore.setAutoRenew(purchase.originalTransactionId, on: false)

            try h.appStore.advance(by: 31 * Harness.day)
            let expired = try await h.next(after: 4)
            #expect(expired.payload.notificationType == .expired)
            #expect(expired.payload.subtype == .voluntary)
            #expect(expired.payload.data?.status == .expired)
            #expect(expired.payload.signedDate == previous.expiresDate)
            #expect(expired.renewalInfo?.expirationIntent == .customerCanceled)
            #expect(expired.transaction?.transactionId == previous.transactionId)
            #expect(h.appStore.subscription(purchase.originalTransactionId)?.status == .expired)

            // Nothing else happens, and every notification was delivered once.
            try h.appStore.advance(by: 90 * Harness.day)
            #expect(try await h.received(from: 5).isEmpty)
            let history = h.appStore.notifications
            #expect(history.count == 5)
            #expect(history.allSatisfy { $0.status == .delivered && $0.attempts.count == 1 })
            #expect(Set(history.map(\.notificationUUID)).count == 5)

            // Buying again in the group resubscribes the same subscription.
            let again = try h.appStore.purchase(customer: "alice", product: "pro.monthly")
            #expect(again.originalTransactionId == purchase.originalTransactionId)
            let resubscribed = try await h.next(after: 5)
            #expect(resubscribed.payload.subtype == .resubscribe)
            #expect(resubscribed.payload.data?.status == .active)
            #expect(throws: AppStoreSimulationError.self) {
                try h.appStore.purchase(customer: "alice", product: "max.monthly")
            }
        }
    }

    @Test func billingFailureEntersGracePeriodThenRecovers() async throws {
        try await Harness.run(gracePeriodDays: 16) { h in
            let purchase = try h.appStore.purchase(customer: "bob", product: "pro.monthly")
            _ = try await h.next(after: 0)
            let renewalDate = h.date(Harness.start, months: 1)
            try h.appStore.failBilling(purchase.originalTransactionId)
            try h.appStore.advance(by: 31 * Harness.day)

            let failed = try await h.next(after: 1)
            #expect(failed.payload.notificationType == .didFailToRenew)
            #expect(failed.payload.subtype == .gracePeriod)
            #expect(failed.payload.data?.status == .billingGracePeriod)
            #expect(failed.renewalInfo?.isInBillingRetryPeriod == true)
            #expect(failed.renewalInfo?.expirationIntent == .billingError)
            #expect(failed.renewalInfo?.gracePeriodExpiresDate == renewalDate.addingTimeInterval(16 * Harness.day))
            #expect(failed.transaction?.transactionId == purchase.transactionId)

            try h.appStore.advance(by: 3 * Harness.day)
            try h.appStore.recoverBilling(purchase.originalTransactionId)
            let recovered = try await h.next(after: 2)
            #expect(recovered.payload.notificationType == .didRenew)
            #expect(recovered.payload.subtype == .billingRecovery)
            #expect(recovered.payload.data?.status == .active)
            #expect(recovered.renewalInfo?.isInBillingRetryPeriod == false)
            #expect(recovered.renewalInfo?.gracePeriodExpiresDate == nil)
            let transaction = try #require(recovered.transaction)
            #expect(transaction.transactionId != purchase.transactionId)
            #expect(transaction.purchaseDate == h.simulator.clock.now())
            // Recovered within grace: the period still counts from the failed renewal date.
            #expect(transaction.expiresDate == h.date(renewalDate, months: 1))

            // Billing works again: the next renewal is ordinary.
            try h.appStore.advance(by: 31 * Harness.day)
            let renewed = try await h.next(after: 3)
            #expect(renewed.payload.notificationType == .didRenew)
            #expect(renewed.payload.subtype == nil)
        }
    }

    @Test func gracePeriodExpiresThenBillingRetryEndsInExpiry() async throws {
        try await Harness.run(gracePeriodDays: 3) { h in
            let purchase = try h.appStore.purchase(customer: "carol", product: "pro.monthly")
            try h.appStore.failBilling(purchase.originalTransactionId)
            try h.appStore.advance(by: 31 * Harness.day)
            try h.appStore.advance(by: 3 * Harness.day)
            let events = try await h.received(from: 0)
            #expect(events.map(\.payload.notificationType) == [.subscribed, .didFailToRenew, .gracePeriodExpired])
            let graceOver = try #require(events.last)
            #expect(graceOver.payload.subtype == nil)
            #expect(graceOver.payload.data?.status == .billingRetryPeriod)
            #expect(graceOver.renewalInfo?.isInBillingRetryPeriod == true)
            #expect(graceOver.payload.signedDate == h.date(Harness.start, months: 1, days: 3))

            try h.appStore.advance(by: 60 * Harness.day)
            let expired = try await h.next(after: 3)
            #expect(expired.payload.notificationType == .expired)
            #expect(expired.payload.subtype == .billingRetry)
            #expect(expired.payload.data?.status == .expired)
            #expect(expired.renewalInfo?.expirationIntent == .billingError)
            #expect(expired.renewalInfo?.isInBillingRetryPeriod == false)
        }
    }

    @Test func billingFailureWithoutGraceGoesStraightToBillingRetry() async throws {
        try await Harness.run { h in
            let purchase = try h.appStore.purchase(customer: "dan", product: "pro.monthly")
            try h.appStore.failBilling(purchase.originalTransactionId)
            try h.appStore.advance(by: 31 * Harness.day)
            let events = try await h.received(from: 0)
            #expect(events.map(\.payload.notificationType) == [.subscribed, .didFailToRenew])
            #expect(events.last?.payload.subtype == nil)
            #expect(events.last?.payload.data?.status == .billingRetryPeriod)
            #expect(events.last?.renewalInfo?.gracePeriodExpiresDate == nil)
            // Recovery in billing retry starts a new period now.
            try h.appStore.advance(by: 10 * Harness.day)
            try h.appStore.recoverBilling(purchase.originalTransactionId)
            let recovered = try await h.next(after: 2)
            #expect(recovered.payload.subtype == .billingRecovery)
            #expect(recovered.transaction?.expiresDate == h.date(h.simulator.clock.now(), months: 1))
        }
    }

    @Test func refundsConsumptionRequestsAndReversals() async throws {
        try await Harness.run { h in
            let coins = try h.appStore.purchase(customer: "erin", product: "coins.100")
            let charged = try await h.next(after: 0)
            #expect(charged.payload.notificationType == .oneTimeCharge)
            #expect(charged.payload.data?.status == nil)
            #expect(charged.renewalInfo == nil)
            #expect(charged.transaction?.type == .consumable)
            #expect(charged.transaction?.expiresDate == nil)
            #expect(charged.transaction?.transactionId == coins.transactionId)

            try h.appStore.requestRefund(transactionId: coins.transactionId, reason: .unsatisfiedWithPurchase)
            let request = try await h.next(after: 1)
            #expect(request.payload.notificationType == .consumptionRequest)
            #expect(request.payload.data?.consumptionRequestReason == .unsatisfiedWithPurchase)
            #expect(request.transaction?.revocationDate == nil)

            try h.appStore.advance(by: Harness.day)
            try h.appStore.refund(transactionId: coins.transactionId, revocationPercentage: 25_000, reason: .appIssue)
            let prorated = try await h.next(after: 2)
            #expect(prorated.payload.notificationType == .refund)
            #expect(prorated.transaction?.revocationDate == Harness.start.addingTimeInterval(Harness.day))
            #expect(prorated.transaction?.revocationType == .refundProrated)
            #expect(prorated.transaction?.revocationPercentage == 25_000)
            #expect(prorated.transaction?.revocationReason == .appIssue)
            #expect(throws: AppStoreSimulationError.self) {
                try h.appStore.refund(transactionId: coins.transactionId)
            }

            // A subscription's latest transaction refunded in full: revoked; reversed: active again.
            let subscription = try h.appStore.purchase(customer: "erin", product: "pro.monthly")
            _ = try await h.next(after: 3)
            try h.appStore.requestRefund(transactionId: subscription.transactionId)
            try h.appStore.declineRefund(transactionId: subscription.transactionId)
            let declined = try await h.received(from: 4)
            #expect(declined.map(\.payload.notificationType) == [.consumptionRequest, .refundDeclined])
            #expect(declined.first?.payload.data?.consumptionRequestReason == .unintendedPurchase)
            #expect(declined.last?.payload.data?.status == .active)

            try h.appStore.refund(transactionId: subscription.transactionId)
            let refunded = try await h.next(after: 6)
            #expect(refunded.payload.notificationType == .refund)
            #expect(refunded.payload.data?.status == .revoked)
            #expect(refunded.transaction?.revocationType == .refundFull)
            #expect(refunded.transaction?.revocationPercentage == 100_000)
            #expect(refunded.transaction?.revocationReason == .other)
            #expect(refunded.transaction?.revocationDate == h.simulator.clock.now())
            // Revoked subscriptions do not renew.
            #expect(h.appStore.subscription(subscription.originalTransactionId)?.status == .revoked)

            try h.appStore.reverseRefund(transactionId: subscription.transactionId)
            let reversed = try await h.next(after: 7)
            #expect(reversed.payload.notificationType == .refundReversed)
            #expect(reversed.payload.data?.status == .active)
            #expect(reversed.transaction?.revocationDate == nil)
            #expect(reversed.transaction?.revocationType == nil)
        }
    }

    @Test func upgradeIsImmediateAndDowngradeWaitsForRenewal() async throws {
        try await Harness.run { h in
            let purchase = try h.appStore.purchase(customer: "fay", product: "pro.monthly")
            try h.appStore.advance(by: 10 * Harness.day)
            try h.appStore.upgrade(purchase.originalTransactionId, to: "max.monthly")
            let events = try await h.received(from: 0)
            #expect(events.count == 2)
            let upgraded = try #require(events.last)
            #expect(upgraded.payload.notificationType == .didChangeRenewalPref)
            #expect(upgraded.payload.subtype == .upgrade)
            let now = h.simulator.clock.now()
            let transaction = try #require(upgraded.transaction)
            #expect(transaction.productId == "max.monthly")
            #expect(transaction.originalTransactionId == purchase.originalTransactionId)
            #expect(transaction.transactionId != purchase.transactionId)
            #expect(transaction.purchaseDate == now)
            #expect(transaction.expiresDate == h.date(now, months: 1))
            #expect(upgraded.renewalInfo?.autoRenewProductId == "max.monthly")
            #expect(h.appStore.transaction(purchase.transactionId)?.isUpgraded == true)
            #expect(transaction.isUpgraded == nil)

            #expect(throws: AppStoreSimulationError.self) {
                try h.appStore.upgrade(purchase.originalTransactionId, to: "pro.monthly")
            }
            try h.appStore.downgrade(purchase.originalTransactionId, to: "pro.monthly")
            let downgraded = try await h.next(after: 2)
            #expect(downgraded.payload.subtype == .downgrade)
            #expect(downgraded.transaction?.transactionId == transaction.transactionId)
            #expect(downgraded.renewalInfo?.productId == "max.monthly")
            #expect(downgraded.renewalInfo?.autoRenewProductId == "pro.monthly")

            try h.appStore.advance(by: 31 * Harness.day)
            let renewed = try await h.next(after: 3)
            #expect(renewed.payload.notificationType == .didRenew)
            #expect(renewed.transaction?.productId == "pro.monthly")
            #expect(renewed.transaction?.purchaseDate == transaction.expiresDate)
            #expect(renewed.renewalInfo?.productId == "pro.monthly")

            // A crossgrade to another period waits for the renewal too.
            #expect(try h.appStore.changeProduct(purchase.originalTransactionId, to: "pro.yearly") == .crossgrade)
            let crossgraded = try await h.next(after: 4)
            #expect(crossgraded.payload.subtype == .downgrade)
            #expect(
                try h.appStore.changeProduct(purchase.originalTransactionId, to: "pro.monthly") == .downgradeCanceled)
            let canceled = try await h.next(after: 5)
            #expect(canceled.payload.notificationType == .didChangeRenewalPref)
            #expect(canceled.payload.subtype == nil)
            #expect(canceled.renewalInfo?.autoRenewProductId == "pro.monthly")
        }
    }

    @Test func failedDeliveryIsRetriedOnTheSimulatedClock() async throws {
        try await Harness.run { h in
            h.receiver.plan([500])
            _ = try h.appStore.purchase(customer: "gus", product: "pro.monthly")
            try await h.appStore.deliveriesSettled()
            #expect(h.receiver.received.count == 1)
            let pending = try #require(h.appStore.notifications.first)
            #expect(pending.status == .pending)
            #expect(pending.attempts.map(\.sendAttemptResult) == ["UNSUCCESSFUL_HTTP_RESPONSE_CODE"])
            #expect(pending.attempts.first?.httpStatus == 500)
            #expect(pending.nextAttemptDate == Harness.start.addingTimeInterval(3_600))

            try h.appStore.advance(by: 3_599)
            try await h.appStore.deliveriesSettled()
            #expect(h.receiver.received.count == 1)
            try h.appStore.advance(by: 1)
            try await h.appStore.deliveriesSettled()
            #expect(h.receiver.received.count == 2)
            #expect(h.receiver.received[0] == h.receiver.received[1])
            let delivered = try #require(h.appStore.notifications.first)
            #expect(delivered.status == .delivered)
            #expect(delivered.attempts.map(\.sendAttemptResult) == ["UNSUCCESSFUL_HTTP_RESPONSE_CODE", "SUCCESS"])
            #expect(delivered.attempts.last?.attemptDate == Harness.start.addingTimeInterval(3_600))
        }
    }

    /// Notifications done with delivery (never to be sent, delivered) are passed over by the scans
    /// before each delivery; one still waiting for its retry, made before later ones that are
    /// delivered at once, is not.
    @Test func aRetryWaitingBehindLaterDeliveriesIsStillDelivered() async throws {
        try await Harness.run { h in
            try h.appStore.setNotificationURL(nil, bundleId: Harness.bundleId)
            for _ in 0..<3 { _ = try h.appStore.purchase(customer: "kim", product: "coins.100") }
            try h.appStore.setNotificationURL(h.receiver.url, bundleId: Harness.bundleId)
            h.receiver.plan([500])
            for _ in 0..<3 { _ = try h.appStore.purchase(customer: "kim", product: "coins.100") }
            try await h.appStore.deliveriesSettled()
            var history = h.appStore.notifications
            #expect(history.map(\.status) == [.notSent, .notSent, .notSent, .pending, .delivered, .delivered])
            #expect(h.receiver.received.count == 3)

            try h.appStore.advance(by: 3_600)
            try await h.appStore.deliveriesSettled()
            history = h.appStore.notifications
            #expect(history.map(\.status) == [.notSent, .notSent, .notSent, .delivered, .delivered, .delivered])
            #expect(h.receiver.received.last == history[3].signedPayload)
            _ = try h.appStore.purchase(customer: "kim", product: "coins.100")
            try await h.appStore.deliveriesSettled()
            #expect(h.receiver.received.count == 5)
            #expect(h.receiver.received.last == h.appStore.notifications.last?.signedPayload)
        }
    }

    @Test func deliveryGivesUpAfterFiveRetries() async throws {
        try await Harness.run { h in
            h.receiver.plan(Array(repeating: 503, count: 10))
            _ = try h.appStore.purchase(customer: "hal", product: "coins.100")
            try await h.appStore.deliveriesSettled()
            for (index, hours) in [1.0, 12, 24, 48, 72].enumerated() {
                try h.appStore.advance(by: hours * 3_600 - 1)
                try await h.appStore.deliveriesSettled()
                #expect(h.receiver.received.count == index + 1)
                try h.appStore.advance(by: 1)
                try await h.appStore.deliveriesSettled()
                #expect(h.receiver.received.count == index + 2)
            }
            try h.appStore.advance(by: 30 * Harness.day)
            try await h.appStore.deliveriesSettled()
            #expect(h.receiver.received.count == 6)
            let failed = try #require(h.appStore.notifications.first)
            #expect(failed.status == .failed)
            #expect(failed.attempts.count == 6)
            #expect(failed.nextAttemptDate == nil)
        }
    }

    @Test func deliveryFaultsDuplicateDropAndReorder() async throws {
        try await Harness.run { h in
            h.appStore.injectDeliveryFaults([.duplicate, .drop, .reorder])
            let purchase = try h.appStore.purchase(customer: "ivy", product: "pro.monthly")
            try await h.appStore.deliveriesSettled()
            let history1 = h.appStore.notifications
            #expect(h.receiver.received == [history1[0].signedPayload, history1[0].signedPayload])

            try h.appStore.setAutoRenew(purchase.originalTransactionId, on: false)  // dropped
            try await h.appStore.deliveriesSettled()
            #expect(h.receiver.received.count == 2)
            #expect(h.appStore.notifications[1].status == .dropped)

            try h.appStore.setAutoRenew(purchase.originalTransactionId, on: true)  // held back
            try await h.appStore.deliveriesSettled()
            #expect(h.receiver.received.count == 2)
            #expect(h.appStore.notifications[2].status == .pending)

            try h.appStore.requestRefund(transactionId: purchase.transactionId)
            try await h.appStore.deliveriesSettled()
            let history = h.appStore.notifications
            #expect(history.count == 4)
            #expect(h.receiver.received.count == 4)
            #expect(Array(h.receiver.received.suffix(2)) == [history[3].signedPayload, history[2].signedPayload])
            #expect(history[2].status == .delivered && history[3].status == .delivered)
            // The dropped one is never retried, but history keeps it.
            try h.appStore.advance(by: 10 * Harness.day)
            try await h.appStore.deliveriesSettled()
            #expect(h.receiver.received.count == 4)
            let dropped = try await h.verifier.verifyNotification(history[1].signedPayload)
            #expect(dropped.payload.subtype == .autoRenewDisabled)
        }
    }

    @Test func sameSeedSameIds() async throws {
        func run() async throws -> [String] {
            try await StoreSimulator.withRunning(configuration: .init(start: Harness.start, rate: 0)) { simulator, _ in
                let appStore = simulator.appStore
                appStore.addApp(SimulatedApp(bundleId: "com.example.ids", appAppleId: 1))
                try appStore.addProduct(
                    .autoRenewable("m", bundleId: "com.example.ids", group: "g", level: 1, period: "P1W", price: 1_000))
                let purchase = try appStore.purchase(customer: "x", product: "m")
                try appStore.advance(by: 8 * Harness.day)
                let snapshot = try #require(appStore.subscription(purchase.originalTransactionId))
                #expect(snapshot.transactionIds.count == 2)
                #expect(appStore.notifications.allSatisfy { $0.status == .notSent })
                return snapshot.transactionIds + appStore.notifications.map(\.notificationUUID)
            }
        }
        let first = try await run()
        #expect(try await run() == first)
    }
}

@Suite struct AppStoreControlAPITests {
    func post(_ url: String, _ json: String) async throws -> HTTPResult {
        try await loopbackRequest(.POST, url, json: json)
    }

    func get(_ url: String) async throws -> HTTPResult {
        try await loopbackRequest(.GET, url)
    }

    @Test func scenarioOverHTTP() async throws {
        try await Harness.run { h in
            let base = h.endpoints.controlURL + "/appstore"
            let product = try await post(
                base + "/products",
                #"{"productId": "http.weekly", "bundleId": "\#(Harness.bundleId)", "kind": "autoRenewable", "#
                    + #""price": 1990, "currency": "EUR", "subscriptionGroupIdentifier": "http", "groupLevel": 1, "#
                    + #""period": "P1W"}"#)
            #expect(product.status == 200)
            let purchase = try await post(
                base + "/purchases", #"{"customerId": "jo", "productId": "http.weekly"}"#)
            #expect(purchase.status == 200)
            let id = try #require(purchase.body["originalTransactionId"] as? String)
            #expect(try await post(base + "/advance", #"{"seconds": 691200}"#).status == 200)
            #expect(try await post(base + "/subscriptions/\(id)/auto-renew", #"{"on": false}"#).status == 200)
            #expect(try await post(base + "/subscriptions/\(id)/fail-billing", "{}").status == 200)
            #expect(try await post(base + "/settle", "{}").status == 200)
            let snapshot = try await get(base + "/subscriptions/\(id)")
            #expect(snapshot.body["autoRenew"] as? Bool == false)
            #expect((snapshot.body["transactionIds"] as? [String])?.count == 2)
            let notifications = try await get(base + "/notifications")
            let items = try #require(notifications.body["notifications"] as? [[String: Any]])
            #expect(
                items.compactMap { $0["notificationType"] as? String } == [
                    "SUBSCRIBED", "DID_RENEW", "DID_CHANGE_RENEWAL_STATUS",
                ])
            #expect(items.allSatisfy { $0["status"] as? String == "delivered" })
            #expect(h.receiver.received.count == 3)

            #expect(try await get(base + "/subscriptions/nope").status == 404)
            #expect(try await post(base + "/transactions/nope/refund", "{}").status == 404)
            #expect(try await post(base + "/purchases", #"{"customerId": "jo"}"#).status == 400)
            let refund = try await post(
                base + "/transactions/\(id)/refund", #"{"revocationPercentage": 50000, "revocationReason": 1}"#)
            #expect(refund.status == 200)
            #expect(h.appStore.transaction(id)?.revocationType == .refundProrated)
        }
    }
}

/// An App Store Connect API key on the test's side: mints the ES256 bearer tokens Apple expects.
struct TestAPIKey: AppStoreAPIAuthorization {
    let key = P256.Signing.PrivateKey()
    let keyId = "SIMKEY0001"
    let bundleId: String
    let clock: SimulatorClock
    var audience = "appstoreconnect-v1"
    var lifetime: TimeInterval = 1_200

    func bearerToken() throws -> String {
        let now = Int(clock.now().timeIntervalSince1970)
        let header = try JSONSerialization.data(
            withJSONObject: ["alg": "ES256", "kid": keyId, "typ": "JWT"], options: [.sortedKeys])
        let claims = try JSONSerialization.data(
            withJSONObject: [
                "iss": "57246542-96fe-1a63-e053-0824d011072a", "iat": now, "exp": now + Int(lifetime),
                "aud": audience, "bid": bundleId,
            ], options: [.sortedKeys])
        let input = Base64URL.encode(header) + "." + Base64URL.encode(claims)
        return input + "." + Base64URL.encode(try key.signature(for: Data(input.utf8)).rawRepresentation)
    }
}

@Suite struct AppStoreServerAPITests {
    func client(_ h: Harness, key: TestAPIKey) -> AppStoreServerAPIClient {
        AppStoreServerAPIClient(
            configuration: .init(baseURL: h.endpoints.baseURL, retryPolicy: RetryPolicy(maxAttempts: 1)),
            authorization: key, verifier: h.verifier)
    }

    func get(_ url: String, token: String?) async throws -> HTTPResult {
        try await loopbackRequest(.GET, url, bearer: token)
    }

    @Test func transactionsHistoryAndStatusesThroughTheRealClient() async throws {
        try await Harness.run { h in
            let key = TestAPIKey(bundleId: Harness.bundleId, clock: h.simulator.clock)
            h.appStore.registerAPIKey(keyId: key.keyId, publicKey: key.key.publicKey)
            try h.appStore.addProduct(
                .autoRenewable(
                    "weekly", bundleId: Harness.bundleId, group: "weekly", level: 1, period: "P1W", price: 990))
            let weekly = try h.appStore.purchase(customer: "kim", product: "weekly")
            let coins = try h.appStore.purchase(customer: "kim", product: "coins.100")
            try h.appStore.advance(by: 7 * 24 * Harness.day)  // 24 renewals
            let api = client(h, key: key)

            let info = try await api.getTransactionInfo(transactionId: coins.transactionId)
            #expect(info.transactionId == coins.transactionId)
            #expect(info.type == .consumable)
            #expect(info.signedDate == h.simulator.clock.now())

            var history: [JWSTransaction] = []
            for try await transaction in api.transactionHistory(transactionId: coins.transactionId) {
                history.append(transaction)
            }
            #expect(history.count == 26)
            #expect(Set(history.compactMap(\.transactionId)).count == 26)
            #expect(history.compactMap(\.purchaseDate) == history.compactMap(\.purchaseDate).sorted())
            let firstPage = try await api.getTransactionHistory(transactionId: weekly.transactionId)
            #expect(firstPage.transactions.count == 20)
            #expect(firstPage.hasMore)

            let groups = try await api.getAllSubscriptionStatuses(transactionId: weekly.transactionId)
            #expect(groups.map(\.subscriptionGroupIdentifier) == ["weekly"])
            let status = try #require(groups.first?.subscriptions.first)
            #expect(status.status == .active)
            #expect(status.originalTransactionId == weekly.originalTransactionId)
            #expect(status.transaction?.expiresDate == Harness.start.addingTimeInterval(25 * 7 * Harness.day))
            #expect(status.renewalInfo?.autoRenewStatus == .on)
            #expect(
                try await api.getAllSubscriptionStatuses(transactionId: weekly.transactionId, status: [.expired])
                    .isEmpty)

            do {
                _ = try await api.getTransactionInfo(transactionId: "9999999999999999")
                Issue.record("found a transaction that does not exist")
            } catch let error as AppStoreServerAPIError {
                #expect(error.httpStatus == 404)
                #expect(error.code == .transactionIdNotFound)
            }
        }
    }

    @Test func notificationHistoryKeepsWhatWasLost() async throws {
        try await Harness.run { h in
            let key = TestAPIKey(bundleId: Harness.bundleId, clock: h.simulator.clock)
            h.appStore.registerAPIKey(keyId: key.keyId, publicKey: key.key.publicKey)
            h.appStore.injectDeliveryFaults([.drop])
            let purchase = try h.appStore.purchase(customer: "lee", product: "pro.monthly")
            try h.appStore.advance(by: 31 * Harness.day)
            _ = try h.appStore.purchase(customer: "max", product: "coins.100")
            try await h.appStore.deliveriesSettled()
            #expect(h.receiver.received.count == 2)
            let api = client(h, key: key)
            let window = NotificationHistoryRequest(
                startDate: Harness.start, endDate: h.simulator.clock.now().addingTimeInterval(1))

            var all: [NotificationHistoryPage.Entry] = []
            for try await entry in api.notificationHistory(window) { all.append(entry) }
            #expect(all.map(\.notification.payload.notificationType) == [.subscribed, .didRenew, .oneTimeCharge])
            #expect(all.first?.sendAttempts.map(\.sendAttemptResult) == [.noResponse])
            #expect(all.last?.sendAttempts.map(\.sendAttemptResult) == [.success])

            var failures = window
            failures.onlyFailures = true
            let lost = try await api.getNotificationHistory(failures)
            #expect(lost.entries.map(\.notification.payload.subtype) == [.initialBuy])

            var bySubscription = window
            bySubscription.transactionId = purchase.transactionId
            let subscriptionOnly = try await api.getNotificationHistory(bySubscription)
            #expect(subscriptionOnly.entries.count == 2)

            let token = try await api.requestTestNotification()
            try await h.appStore.deliveriesSettled()
            let test = try await api.getTestNotificationStatus(token: token)
            #expect(test.notification.payload.notificationType == .test)
            #expect(test.sendAttempts.map(\.sendAttemptResult) == [.success])
            #expect(h.receiver.received.count == 3)
        }
    }

    /// The production token provider's tokens are accepted as they are; its expiry is judged on the
    /// simulated clock it is given.
    @Test func productionTokenProviderIsAccepted() async throws {
        try await Harness.run { h in
            let privateKey = P256.Signing.PrivateKey()
            h.appStore.registerAPIKey(keyId: "PRODKEY001", publicKey: privateKey.publicKey)
            let provider = try AppStoreServerAPITokenProvider(
                key: AppStoreSigningKey(pemRepresentation: privateKey.pemRepresentation, keyId: "PRODKEY001"),
                issuerId: "57246542-96fe-1a63-e053-0824d011072a", bundleId: Harness.bundleId,
                clock: h.simulator.clock)
            let api = AppStoreServerAPIClient(
                configuration: .init(baseURL: h.endpoints.baseURL, retryPolicy: .never), authorization: provider,
                verifier: h.verifier)
            let purchase = try h.appStore.purchase(customer: "quinn", product: "pro.monthly")
            let transaction = try await api.getTransactionInfo(transactionId: purchase.transactionId)
            #expect(transaction.originalTransactionId == purchase.originalTransactionId)
            let token = try provider.bearerToken()
            try h.appStore.advance(by: 31 * Harness.day)
            #expect(try provider.bearerToken() != token)
            let statuses = try await api.getAllSubscriptionStatuses(transactionId: purchase.transactionId)
            #expect(statuses.first?.subscriptions.first?.transaction?.transactionReason == .renewal)
        }
    }

    @Test func requestsAreAuthenticatedLikeApple() async throws {
        try await Harness.run { h in
            let key = TestAPIKey(bundleId: Harness.bundleId, clock: h.simulator.clock)
            h.appStore.registerAPIKey(keyId: key.keyId, publicKey: key.key.publicKey)
            let purchase = try h.appStore.purchase(customer: "mo", product: "coins.100")
            let url = h.endpoints.baseURL + "/inApps/v1/transactions/\(purchase.transactionId)"

            #expect(try await get(url, token: key.bearerToken()).status == 200)
            #expect(try await get(url, token: nil).status == 401)
            var wrongAudience = key
            wrongAudience.audience = "appstoreconnect-v2"
            #expect(try await get(url, token: wrongAudience.bearerToken()).status == 401)
            var tooLong = key
            tooLong.lifetime = 3_601
            #expect(try await get(url, token: tooLong.bearerToken()).status == 401)
            let otherApp = TestAPIKey(bundleId: "com.example.unknown", clock: h.simulator.clock)
            h.appStore.registerAPIKey(keyId: "OTHERKEY01", publicKey: otherApp.key.publicKey)
            #expect(try await get(url, token: otherApp.bearerToken()).status == 401)
            let unregistered = TestAPIKey(bundleId: Harness.bundleId, clock: h.simulator.clock)
            #expect(try await get(url, token: unregistered.bearerToken()).status == 401)
            // Expiry is judged on the simulated clock.
            let token = try key.bearerToken()
            try h.appStore.advance(by: 1_201)
            #expect(try await get(url, token: token).status == 401)

            let fresh = try key.bearerToken()
            let missing = try await get(h.endpoints.baseURL + "/inApps/v1/transactions/1234", token: fresh)
            #expect(missing.status == 404)
            #expect(missing.body["errorCode"] as? Int == 4_040_010)
            let invalid = try await get(h.endpoints.baseURL + "/inApps/v1/transactions/abc", token: fresh)
            #expect(invalid.status == 400)
            #expect(invalid.body["errorCode"] as? Int == 4_000_006)
            // The API sits behind the fault injector.
            h.simulator.faults.add([APIFault(pathPrefix: "/inApps/", status: 429, retryAfterSeconds: 3, times: 1)])
            #expect(try await get(url, token: fresh).status == 429)
            #expect(try await get(url, token: fresh).status == 200)
        }
    }
}

@Suite struct AppStoreLifecycleExtrasTests {
    @Test func familySharingRevocation() async throws {
        try await Harness.run { h in
            let shared = try h.appStore.purchase(customer: "nia", product: "pro.monthly", ownership: .familyShared)
            let owned = try h.appStore.purchase(customer: "nia", product: "coins.100")
            #expect(throws: AppStoreSimulationError.self) {
                try h.appStore.revokeFamilySharing(transactionId: owned.transactionId)
            }
            try h.appStore.revokeFamilySharing(transactionId: shared.transactionId)
            let events = try await h.received(from: 0)
            #expect(events.count == 3)
            let revoked = try #require(events.last)
            #expect(revoked.payload.notificationType == .revoke)
            #expect(revoked.payload.data?.status == .revoked)
            #expect(revoked.transaction?.inAppOwnershipType == .familyShared)
            #expect(revoked.transaction?.revocationType == .familyRevoke)
            #expect(revoked.transaction?.revocationDate == h.simulator.clock.now())
        }
    }

    @Test func freeTrialOfferShapesTheFirstTransactionOnly() async throws {
        try await Harness.run { h in
            let purchase = try h.appStore.purchase(
                customer: "pia", product: "pro.monthly", offer: .freeTrial("P1W"))
            try h.appStore.advance(by: 8 * Harness.day)
            let events = try await h.received(from: 0)
            #expect(events.map(\.payload.notificationType) == [.subscribed, .didRenew])
            let trial = try #require(events.first?.transaction)
            #expect(trial.transactionId == purchase.transactionId)
            #expect(trial.offerType == .introductory)
            #expect(trial.offerDiscountType == .freeTrial)
            #expect(trial.offerPeriod == "P1W")
            #expect(trial.price == 0)
            #expect(trial.expiresDate == Harness.start.addingTimeInterval(7 * Harness.day))
            let paid = try #require(events.last?.transaction)
            #expect(paid.offerType == nil)
            #expect(paid.price == 9_990)
            #expect(paid.purchaseDate == trial.expiresDate)
            #expect(paid.expiresDate == h.date(Harness.start, months: 1, days: 7))
        }
    }

    /// With the clock running (a week per 0.2 s), the background loop renews and delivers on its own.
    @Test func backgroundLoopRenewsOnARunningClock() async throws {
        let receiver = NotificationReceiver()
        try await receiver.start()
        let configuration = StoreSimulator.Configuration(start: Harness.start, rate: 7 * 86_400 / 0.2)
        do {
            try await runFast(configuration, receiver)
        } catch {
            await receiver.stop()
            throw error
        }
        await receiver.stop()
    }

    private func runFast(_ configuration: StoreSimulator.Configuration, _ receiver: NotificationReceiver) async throws {
        try await StoreSimulator.withRunning(configuration: configuration) { simulator, endpoints in
            let appStore = simulator.appStore
            appStore.addApp(SimulatedApp(bundleId: "com.example.fast", appAppleId: 7, notificationURL: receiver.url))
            try appStore.addProduct(
                .autoRenewable("w", bundleId: "com.example.fast", group: "g", level: 1, period: "P1W", price: 990))
            let purchase = try appStore.purchase(customer: "ola", product: "w")
            let deadline = ContinuousClock.now.advanced(by: .seconds(60))
            while receiver.received.count < 3, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            try appStore.setAutoRenew(purchase.originalTransactionId, on: false)
            let roots = try TrustedRoots(appleRootFiles: [], allowedRootFiles: [endpoints.rootCertificatePath])
            let verifier = try SignedDataVerifier(
                configuration: .init(trustedRoots: roots, bundleId: "com.example.fast", environment: .sandbox))
            let received = receiver.received
            #expect(received.count >= 3)
            var types: [NotificationType?] = []
            for payload in received.prefix(3) {
                types.append(try await verifier.verifyNotification(payload).payload.notificationType)
            }
            #expect(types == [.subscribed, .didRenew, .didRenew])
        }
    }
}
