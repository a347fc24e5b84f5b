import AsyncHTTPClient
import Foundation
import GooglePlay
import StoreCore
import StoreSimulator
import Synchronization
import Testing

/// The Android Publisher client against the store simulator over loopback HTTP: every call, the
/// voided purchases pages, the 401 refresh, retries, 410 and the client-side quota as seen by the
/// simulator's request log.
@Suite struct AndroidPublisherClientTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)
    static let package = "com.example.play"
    static let day: TimeInterval = 86_400

    struct Context {
        let simulator: StoreSimulator
        let client: AndroidPublisherClient
        var play: GooglePlaySimulation { simulator.googlePlay }
    }

    /// Fast retries: tests must not sleep for seconds.
    static let quickRetries = RetryPolicy(maxAttempts: 3, initialBackoff: 0.01, maxBackoff: 0.05, budget: 5)

    func withClient(
        quota: (any RequestQuota)? = nil, retryPolicy: RetryPolicy = quickRetries,
        _ body: (Context) async throws -> Void
    ) async throws {
        try await StoreSimulator.withRunning(configuration: .init(start: Self.start, rate: 0)) { simulator, endpoints in
            let play = simulator.googlePlay
            play.addApp(SimulatedPlayApp(packageName: Self.package))
            try play.addSubscription(
                SimulatedPlaySubscription(
                    packageName: Self.package, productId: "premium",
                    basePlans: [SimulatedBasePlan(basePlanId: "monthly", billingPeriod: .iso8601("P1M"))]))
            try play.addProduct(SimulatedPlayProduct(packageName: Self.package, productId: "coins", maxQuantity: 10))
            try play.addProduct(
                SimulatedPlayProduct(packageName: Self.package, productId: "lifetime", consumable: false))
            let account = try simulator.googleIdentity.makeServiceAccount()
            let tokens = ServiceAccountTokenProvider(
                key: try ServiceAccountKey(jsonData: account.jsonKey), clock: simulator.clock)
            let client = AndroidPublisherClient(
                configuration: .init(baseURL: endpoints.baseURL, retryPolicy: retryPolicy, quota: quota),
                tokens: tokens)
            try await body(Context(simulator: simulator, client: client))
        }
    }

    func publisherError(_ call: () async throws -> Void) async -> AndroidPublisherError? {
        do {
            try await call()
        } catch let error as AndroidPublisherError {
            return error
        } catch {
            Issue.record("unexpected error \(error)")
            return nil
        }
        Issue.record("the call succeeded")
        return nil
    }

    @Test func subscriptionCalls() async throws {
        try await withClient { c in
            let purchase = try c.play.purchaseSubscription(packageName: Self.package, productId: "premium")
            let token = purchase.purchaseToken
            var state = try await c.client.subscription(packageName: Self.package, token: token)
            #expect(state.subscriptionState == .active)
            #expect(state.acknowledgementState == .pending)
            #expect(state.lineItems?.first?.latestSuccessfulOrderId == purchase.orderId)

            try await c.client.acknowledgeSubscription(
                packageName: Self.package, subscriptionId: "premium", token: token, developerPayload: "p")
            state = try await c.client.subscription(packageName: Self.package, token: token)
            #expect(state.acknowledgementState == .acknowledged)

            let expiry = try #require(state.lineItems?.first?.expiryDate)
            let deferred = try await c.client.deferSubscription(
                packageName: Self.package, token: token,
                DeferSubscriptionPurchaseRequest(deferralContext: DeferralContext(deferDuration: "86400s")))
            #expect(deferred.itemExpiryTimeDetails?.first?.productId == "premium")
            state = try await c.client.subscription(packageName: Self.package, token: token)
            #expect(state.lineItems?.first?.expiryDate == expiry.addingTimeInterval(Self.day))

            try await c.client.cancelSubscription(
                packageName: Self.package, token: token,
                context: CancellationContext(cancellationType: .userRequestedStopRenewals))
            state = try await c.client.subscription(packageName: Self.package, token: token)
            #expect(state.subscriptionState == .canceled)
            #expect(state.canceledStateContext?.userInitiatedCancellation != nil)

            try await c.client.revokeSubscription(packageName: Self.package, token: token, context: .proratedRefund)
            state = try await c.client.subscription(packageName: Self.package, token: token)
            #expect(state.subscriptionState == .expired)
            #expect(c.play.subscription(token)?.subscriptionState == "SUBSCRIPTION_STATE_EXPIRED")

            // Google's refusals arrive as mapped errors, not retried.
            let again = await publisherError {
                try await c.client.revokeSubscription(packageName: Self.package, token: token, context: .fullRefund)
            }
            #expect(again?.reason == .invalidRequest)
            #expect(again?.googleReason == "subscriptionNotRevocable")
            #expect(again?.attempts == 1)
            let missing = await publisherError {
                _ = try await c.client.subscription(packageName: Self.package, token: "no-such-token")
            }
            #expect(missing?.reason == .notFound)
        }
    }

    @Test func productCallsAndOrders() async throws {
        try await withClient { c in
            let lifetime = try c.play.purchaseProduct(packageName: Self.package, productId: "lifetime")
            var product = try await c.client.product(
                packageName: Self.package, productId: "lifetime", token: lifetime.purchaseToken)
            #expect(product.purchaseState == .purchased)
            #expect(product.acknowledgementState == .yetToBeAcknowledged)
            try await c.client.acknowledgeProduct(
                packageName: Self.package, productId: "lifetime", token: lifetime.purchaseToken)
            product = try await c.client.product(
                packageName: Self.package, productId: "lifetime", token: lifetime.purchaseToken)
            #expect(product.acknowledgementState == .acknowledged)

            let coins = try c.play.purchaseProduct(packageName: Self.package, productId: "coins", quantity: 3)
            let v2 = try await c.client.productV2(packageName: Self.package, token: coins.purchaseToken)
            #expect(v2.productLineItem?.first?.productId == "coins")
            #expect(v2.orderId == coins.orderId)
            try await c.client.consumeProduct(packageName: Self.package, productId: "coins", token: coins.purchaseToken)
            product = try await c.client.product(
                packageName: Self.package, productId: "coins", token: coins.purchaseToken)
            #expect(product.consumptionState == .consumed)
            #expect(product.quantity == 3)

            let order = try await c.client.order(packageName: Self.package, orderId: try #require(coins.orderId))
            #expect(order.orderId == coins.orderId)
            #expect(order.purchaseToken == coins.purchaseToken)

            // Identifiers that would change the path never leave the client.
            let before = c.play.apiRequests.count
            let bad = await publisherError {
                _ = try await c.client.product(packageName: Self.package, productId: "../x", token: "t")
            }
            #expect(bad?.reason == .invalidArgument)
            #expect(c.play.apiRequests.count == before)
        }
    }

    @Test func voidedPurchasesArriveAcrossPages() async throws {
        try await withClient { c in
            var orders: [String] = []
            for _ in 0..<5 {
                let purchase = try c.play.purchaseProduct(packageName: Self.package, productId: "lifetime")
                try await c.client.acknowledgeProduct(
                    packageName: Self.package, productId: "lifetime", token: purchase.purchaseToken)
                orders.append(try #require(purchase.orderId))
            }
            let coins = try c.play.purchaseProduct(packageName: Self.package, productId: "coins", quantity: 4)
            c.play.advance(by: Self.day)
            for order in orders {
                try c.play.refund(orderId: order)
                c.play.advance(by: 60)
            }
            try c.play.refund(orderId: try #require(coins.orderId), quantity: 1)

            let before = c.play.apiRequests.count
            var seen: [VoidedPurchase] = []
            for try await voided in c.client.voidedPurchases(
                packageName: Self.package, VoidedPurchasesQuery(maxResults: 2))
            {
                seen.append(voided)
            }
            #expect(seen.compactMap(\.orderId) == orders)
            #expect(c.play.apiRequests.count - before == 3)  // pages of 2, 2 and 1

            let partial = c.client.voidedPurchases(
                packageName: Self.package,
                VoidedPurchasesQuery(maxResults: 4, includeQuantityBasedPartialRefund: true))
            var withPartial: [VoidedPurchase] = []
            for try await voided in partial { withPartial.append(voided) }
            #expect(withPartial.count == 6)
            #expect(withPartial.last?.voidedQuantity == 1)

            // A window that holds only the last two full refunds.
            let windowStart = Self.start.addingTimeInterval(Self.day + 2 * 60 + 30)
            var windowed: [String] = []
            for try await voided in c.client.voidedPurchases(
                packageName: Self.package, VoidedPurchasesQuery(startTime: windowStart))
            {
                windowed += voided.orderId.map { [$0] } ?? []
            }
            #expect(windowed == Array(orders.suffix(2)))
        }
    }

    @Test func anExpiredOrRevokedAccessTokenIsRefreshedOnceAndTheCallRetried() async throws {
        try await withClient { c in
            let token = try c.play.purchaseSubscription(packageName: Self.package, productId: "premium").purchaseToken
            _ = try await c.client.subscription(packageName: Self.package, token: token)
            #expect(c.simulator.googleIdentity.issuedAccessTokenCount == 1)
            c.simulator.googleIdentity.revokeAllAccessTokens()
            let before = c.play.apiRequests.count
            _ = try await c.client.subscription(packageName: Self.package, token: token)
            #expect(c.simulator.googleIdentity.issuedAccessTokenCount == 2)
            #expect(c.play.apiRequests.dropFirst(before).map(\.status) == [401, 200])

            // The cached token is used until shortly before it expires.
            _ = try await c.client.subscription(packageName: Self.package, token: token)
            #expect(c.simulator.googleIdentity.issuedAccessTokenCount == 2)
            c.simulator.clock.advance(by: 3600)
            _ = try await c.client.subscription(packageName: Self.package, token: token)
            #expect(c.simulator.googleIdentity.issuedAccessTokenCount == 3)
        }
    }

    @Test func rateLimitsAndServerErrorsAreRetriedThenReported() async throws {
        try await withClient { c in
            let token = try c.play.purchaseSubscription(packageName: Self.package, productId: "premium").purchaseToken
            c.simulator.faults.add([
                APIFault(pathPrefix: "/androidpublisher/", status: 429, retryAfterSeconds: 0),
                APIFault(pathPrefix: "/androidpublisher/", status: 503),
            ])
            let state = try await c.client.subscription(packageName: Self.package, token: token)
            #expect(state.subscriptionState == .active)
            #expect(c.play.apiRequests.map(\.status) == [429, 503, 200])

            c.simulator.faults.add([APIFault(pathPrefix: "/androidpublisher/", status: 500, times: 3)])
            let error = await publisherError {
                _ = try await c.client.subscription(packageName: Self.package, token: token)
            }
            #expect(error?.reason == .serverError)
            #expect(error?.attempts == 3)
            #expect(error?.isRetryable == true)
        }
    }

    @Test func aPurchaseExpiredTooLongAgoIsGoneAndNotRetried() async throws {
        try await withClient { c in
            let token = try c.play.purchaseSubscription(packageName: Self.package, productId: "premium").purchaseToken
            try await c.client.acknowledgeSubscription(
                packageName: Self.package, subscriptionId: "premium", token: token)
            try c.play.cancelSubscription(token)
            c.play.advance(by: 31 * Self.day + 61 * Self.day)
            let before = c.play.apiRequests.count
            let error = await publisherError {
                _ = try await c.client.subscription(packageName: Self.package, token: token)
            }
            #expect(error?.isGone == true)
            #expect(error?.httpStatus == 410)
            #expect(error?.isRetryable == false)
            #expect(c.play.apiRequests.count - before == 1)
        }
    }

    @Test func noMoreThanTheConfiguredRateReachesTheSimulator() async throws {
        // The limiter runs on a clock that moves only when the test moves it, so what reaches the
        // simulator in each window is exact, however slow the machine.
        let clock = SteppedClock()
        let limits = QuotaLimits(
            buckets: [.subscriptions: [QuotaLimit(requests: 3, per: .seconds(60))]], maxWait: .seconds(600))
        try await withClient(quota: QuotaLimiter(limits: limits, clock: clock)) { c in
            let token = try c.play.purchaseSubscription(packageName: Self.package, productId: "premium").purchaseToken
            let client = c.client
            let calls = Task {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<9 {
                        group.addTask { _ = try await client.subscription(packageName: Self.package, token: token) }
                    }
                    try await group.waitForAll()
                }
            }
            func arrived() -> Int { c.play.apiRequests.filter { $0.bucket == "purchases.subscriptionsv2" }.count }
            for window in 1...3 {
                try await waitUntil { arrived() >= 3 * window }
                try await Task.sleep(for: .milliseconds(300))  // time for any request the limiter let through
                #expect(arrived() == 3 * window)
                clock.advance(by: .seconds(60))
            }
            try await calls.value
            #expect(arrived() == 9)
        }
    }

    /// Polls `condition` for up to 20 seconds of real time.
    func waitUntil(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now.advanced(by: .seconds(20))
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("condition not met in time")
                return
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    @Test func aUsedUpQuotaFailsWithoutReachingTheSimulator() async throws {
        let limits = QuotaLimits(
            buckets: [.voidedPurchases: [QuotaLimit(requests: 2, per: .seconds(86_400))]], maxWait: .seconds(1))
        try await withClient(quota: QuotaLimiter(limits: limits)) { c in
            _ = try await c.client.voidedPurchasesPage(packageName: Self.package)
            _ = try await c.client.voidedPurchasesPage(packageName: Self.package)
            let error = await publisherError { _ = try await c.client.voidedPurchasesPage(packageName: Self.package) }
            #expect(error?.reason == .quotaExhausted)
            #expect(c.play.apiRequests.count == 2)
            // Other buckets are unaffected.
            let token = try c.play.purchaseSubscription(packageName: Self.package, productId: "premium").purchaseToken
            _ = try await c.client.subscription(packageName: Self.package, token: token)
            #expect(c.play.apiRequests.count == 3)
        }
    }
}

/// A clock that stands still until the test advances it; sleepers wake once it passed their deadline.
final class SteppedClock: Clock, Sendable {
    typealias Instant = JumpingClock.Instant
    private let current = Mutex(Instant(offset: .zero))
    var now: Instant { current.withLock { $0 } }
    var minimumResolution: Duration { .nanoseconds(1) }
    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        while now < deadline { try await Task.sleep(for: .milliseconds(2)) }
    }
    func advance(by duration: Duration) { current.withLock { $0 = $0.advanced(by: duration) } }
}
