import AppStoreServer
import Crypto
import Foundation
import StoreSimulator
import Testing

/// The real `AppStoreServerAPIClient`, with the real token provider, against the simulator's App Store
/// Server API over loopback: every call, paging, and each error class with retries and giving up.
@Suite struct AppStoreAPIClientTests {
    struct Client {
        let api: AppStoreServerAPIClient
        let tokens: AppStoreServerAPITokenProvider
    }

    func client(_ h: Harness, retry: RetryPolicy = RetryPolicy(maxAttempts: 1), timeout: Int64 = 10) throws -> Client {
        let privateKey = P256.Signing.PrivateKey()
        let key = try AppStoreSigningKey(pemRepresentation: privateKey.pemRepresentation, keyId: "SIMKEY0001")
        h.appStore.registerAPIKey(keyId: "SIMKEY0001", publicKey: privateKey.publicKey)
        let tokens = try AppStoreServerAPITokenProvider(
            key: key, issuerId: "57246542-96fe-1a63-e053-0824d011072a", bundleId: Harness.bundleId,
            clock: h.simulator.clock)
        let api = AppStoreServerAPIClient(
            configuration: .init(baseURL: h.endpoints.baseURL, retryPolicy: retry, requestTimeout: .seconds(timeout)),
            authorization: tokens, verifier: h.verifier)
        return Client(api: api, tokens: tokens)
    }

    /// A deterministic retry policy with short waits.
    static let quickRetries = RetryPolicy(
        maxAttempts: 4, initialBackoff: 0.05, maxBackoff: 0.2, budget: 5, random: { $0.upperBound })

    @Test func refundHistoryAppTransactionAndOrderLookup() async throws {
        try await Harness.run { h in
            let api = try client(h).api
            let first = try h.appStore.purchase(customer: "ana", product: "coins.100")
            let second = try h.appStore.purchase(customer: "ana", product: "coins.100")
            try h.appStore.refund(transactionId: second.transactionId)

            var refunded: [JWSTransaction] = []
            for try await transaction in api.refundHistory(transactionId: first.transactionId) {
                refunded.append(transaction)
            }
            #expect(refunded.map(\.transactionId) == [second.transactionId])
            #expect(refunded.first?.revocationDate != nil)

            let appTransaction = try await api.getAppTransactionInfo(transactionId: first.transactionId)
            #expect(appTransaction.bundleId == Harness.bundleId)
            #expect(appTransaction.appTransactionId != nil)
            #expect(appTransaction.receiptType == .sandbox)

            let order = try await api.lookUpOrderId(AppStoreSimulation.orderId(forTransactionId: first.transactionId))
            #expect(order.status == .valid)
            #expect(order.transactions.map(\.transactionId) == [first.transactionId])
            let unknown = try await api.lookUpOrderId("NOSUCHORDER")
            #expect(unknown.status == .invalid)
            #expect(unknown.transactions.isEmpty)
        }
    }

    @Test func answersToTheAppStore() async throws {
        try await Harness.run { h in
            let api = try client(h).api
            let coins = try h.appStore.purchase(customer: "bo", product: "coins.100")
            let consumption = ConsumptionRequest(
                customerConsented: true, consumptionPercentage: 25_000, deliveryStatus: .delivered,
                refundPreference: .grantProrated, sampleContentProvided: false)
            try await api.sendConsumptionInformation(transactionId: coins.transactionId, consumption)
            #expect(h.appStore.consumptionInformation(transactionId: coins.transactionId) == consumption)
            // Without the customer's consent Apple refuses the request.
            var refused = consumption
            refused.customerConsented = false
            await #expect(throws: AppStoreServerAPIError.self) {
                try await api.sendConsumptionInformation(transactionId: coins.transactionId, refused)
            }

            let token = UUID()
            let subscription = try h.appStore.purchase(customer: "bo", product: "pro.monthly")
            try await api.setAppAccountToken(
                originalTransactionId: subscription.originalTransactionId, appAccountToken: token)
            let info = try await api.getTransactionInfo(transactionId: subscription.transactionId)
            #expect(info.appAccountToken == token.uuidString.lowercased())

            try await api.finishTransaction(transactionId: coins.transactionId)
            #expect(h.appStore.isFinished(transactionId: coins.transactionId))
        }
    }

    @Test func renewalDateExtensions() async throws {
        try await Harness.run { h in
            let api = try client(h).api
            let subscription = try h.appStore.purchase(customer: "cy", product: "pro.monthly")
            let before = try #require(h.appStore.subscription(subscription.originalTransactionId)?.expiresDate)
            try await h.appStore.deliveriesSettled()
            let seen = h.receiver.received.count
            let request = ExtendRenewalDateRequest(
                extendByDays: 7, extendReasonCode: .serviceIssueOrOutage, requestIdentifier: UUID().uuidString)
            let extended = try await api.extendSubscriptionRenewalDate(
                originalTransactionId: subscription.originalTransactionId, request)
            #expect(extended.success == true)
            #expect(extended.effectiveDate == before.addingTimeInterval(7 * Harness.day))
            // Idempotent per request identifier.
            let again = try await api.extendSubscriptionRenewalDate(
                originalTransactionId: subscription.originalTransactionId, request)
            #expect(again.effectiveDate == extended.effectiveDate)
            let notification = try await h.next(after: seen)
            #expect(notification.payload.notificationType == .renewalExtended)
            #expect(notification.transaction?.expiresDate == extended.effectiveDate)

            await #expect(throws: AppStoreServerAPIError.self) {
                try await api.extendSubscriptionRenewalDate(
                    originalTransactionId: subscription.originalTransactionId,
                    ExtendRenewalDateRequest(extendByDays: 91, extendReasonCode: .other, requestIdentifier: "x"))
            }

            let mass = MassExtendRenewalDateRequest(
                extendByDays: 3, extendReasonCode: .customerSatisfaction, requestIdentifier: UUID().uuidString,
                productId: "pro.monthly")
            let seenBeforeMass = h.receiver.received.count
            #expect(
                try await api.extendRenewalDateForAllActiveSubscribers(mass).requestIdentifier == mass.requestIdentifier
            )
            let status = try await api.getStatusOfSubscriptionRenewalDateExtensions(
                productId: "pro.monthly", requestIdentifier: mass.requestIdentifier)
            #expect(status.complete == true)
            #expect(status.succeededCount == 1)
            // The subscription's own RENEWAL_EXTENDED, then the request's SUMMARY.
            let sent = try await h.received(from: seenBeforeMass)
            #expect(sent.map(\.payload.notificationType) == [.renewalExtended, .renewalExtension])
            let summary = try #require(sent.last)
            #expect(summary.payload.notificationType == .renewalExtension)
            #expect(summary.payload.subtype == .summary)
            #expect(summary.payload.summary?.succeededCount == 1)
        }
    }

    @Test func notFoundAndInvalidAreNotRetried() async throws {
        try await Harness.run { h in
            let api = try client(h, retry: Self.quickRetries).api
            do {
                _ = try await api.getTransactionInfo(transactionId: "2000009999999999")
                Issue.record("an unknown transaction was found")
            } catch let error as AppStoreServerAPIError {
                #expect(error.httpStatus == 404)
                #expect(error.code == .transactionIdNotFound)
                #expect(!error.isRetryable)
                #expect(error.attempts == 1)
            }
            // An identifier that would change the path never leaves the client.
            await #expect(throws: AppStoreServerAPIError.self) {
                _ = try await api.getTransactionInfo(transactionId: "../history/1")
            }
        }
    }

    @Test func rateLimitWithRetryAfterIsRetriedThenSucceeds() async throws {
        try await Harness.run { h in
            let api = try client(h, retry: Self.quickRetries).api
            let coins = try h.appStore.purchase(customer: "di", product: "coins.100")
            h.simulator.faults.add([APIFault(pathPrefix: "/inApps/", status: 429, retryAfterSeconds: 1, times: 1)])
            let clock = ContinuousClock()
            let started = clock.now
            let info = try await api.getTransactionInfo(transactionId: coins.transactionId)
            #expect(info.transactionId == coins.transactionId)
            #expect(h.simulator.faults.injectedCount == 1)
            // The client honoured Retry-After (a lower bound on correctness, not a speed claim).
            #expect(clock.now - started >= .seconds(1))
        }
    }

    @Test func serverErrorsAndTimeoutsAreRetriedWithBackoff() async throws {
        try await Harness.run { h in
            // 3 s per attempt: the attempt after the faults must finish within it while the whole
            // suite runs beside it (1 s was once too little in a clean-clone CI run).
            let api = try client(h, retry: Self.quickRetries, timeout: 3).api
            let coins = try h.appStore.purchase(customer: "ed", product: "coins.100")
            h.simulator.faults.add([
                APIFault(pathPrefix: "/inApps/", status: 500, times: 1),
                APIFault(pathPrefix: "/inApps/", status: 503, times: 1),
                APIFault(pathPrefix: "/inApps/", delaySeconds: 6, times: 1),  // past the 3 s timeout
            ])
            let info = try await api.getTransactionInfo(transactionId: coins.transactionId)
            #expect(info.transactionId == coins.transactionId)
            #expect(h.simulator.faults.injectedCount == 3)
        }
    }

    @Test func givesUpAfterItsAttemptsAndWhenRetryAfterExceedsTheBudget() async throws {
        try await Harness.run { h in
            let api = try client(h, retry: Self.quickRetries).api
            let coins = try h.appStore.purchase(customer: "fa", product: "coins.100")
            h.simulator.faults.add([APIFault(pathPrefix: "/inApps/", status: 500, times: 10)])
            do {
                _ = try await api.getTransactionInfo(transactionId: coins.transactionId)
                Issue.record("succeeded through a persistent 500")
            } catch let error as AppStoreServerAPIError {
                #expect(error.httpStatus == 500)
                #expect(error.attempts == 4)
                #expect(error.isRetryable)
            }
            #expect(h.simulator.faults.injectedCount == 4)
            h.simulator.faults.clear()

            // A Retry-After beyond the budget ends the call at once.
            h.simulator.faults.add([APIFault(pathPrefix: "/inApps/", status: 429, retryAfterSeconds: 600, times: 1)])
            do {
                _ = try await api.getTransactionInfo(transactionId: coins.transactionId)
                Issue.record("waited out a Retry-After beyond the budget")
            } catch let error as AppStoreServerAPIError {
                #expect(error.httpStatus == 429)
                #expect(error.retryAfter == 600)
                #expect(error.attempts == 1)
                #expect(error.message.contains("budget"))
            }
        }
    }

    @Test func anExpiredTokenIsRenewedOnceOn401() async throws {
        try await Harness.run { h in
            let (api, tokens) = try {
                let c = try client(h)
                return (c.api, c.tokens)
            }()
            let coins = try h.appStore.purchase(customer: "gu", product: "coins.100")
            _ = try await api.getTransactionInfo(transactionId: coins.transactionId)
            let cached = try tokens.token()
            // The App Store stops accepting the cached token (here: its key is replaced).
            let newKey = P256.Signing.PrivateKey()
            h.appStore.registerAPIKey(keyId: "SIMKEY0001", publicKey: newKey.publicKey)
            do {
                _ = try await api.getTransactionInfo(transactionId: coins.transactionId)
                Issue.record("a token signed with a replaced key was accepted")
            } catch let error as AppStoreServerAPIError {
                #expect(error.httpStatus == 401)
            }
            // The failed call dropped the cached token and asked for a new one (renewed once, not looped).
            #expect(try tokens.token() != cached)
        }
    }
}

extension AppStoreAPIClientTests {
    @Test func historyFiltersReachTheStore() async throws {
        try await Harness.run { h in
            let api = try client(h).api
            let subscription = try h.appStore.purchase(customer: "hu", product: "pro.monthly")
            try h.appStore.advance(by: 2 * Harness.day)
            let coins = try h.appStore.purchase(customer: "hu", product: "coins.100")
            let refundedCoins = try h.appStore.purchase(customer: "hu", product: "coins.100")
            try h.appStore.refund(transactionId: refundedCoins.transactionId)

            func ids(_ request: TransactionHistoryRequest) async throws -> [String] {
                var ids: [String] = []
                for try await transaction in api.transactionHistory(
                    transactionId: subscription.transactionId, request: request)
                {
                    ids.append(transaction.transactionId ?? "")
                }
                return ids
            }
            #expect(
                try await ids(.init(productTypes: [.consumable])) == [coins.transactionId, refundedCoins.transactionId])
            #expect(try await ids(.init(productIds: ["pro.monthly"])) == [subscription.transactionId])
            #expect(try await ids(.init(subscriptionGroupIdentifiers: ["pro"])) == [subscription.transactionId])
            #expect(try await ids(.init(productTypes: [.consumable], revoked: true)) == [refundedCoins.transactionId])
            #expect(try await ids(.init(productTypes: [.consumable], revoked: false)) == [coins.transactionId])
            #expect(
                try await ids(
                    .init(startDate: Harness.start.addingTimeInterval(Harness.day), productTypes: [.autoRenewable])
                ).isEmpty)
            #expect(
                try await ids(.init(productTypes: [.consumable], sort: .descending))
                    == [refundedCoins.transactionId, coins.transactionId])
            #expect(try await ids(.init(inAppOwnershipType: .familyShared)).isEmpty)
            await #expect(throws: AppStoreServerAPIError.self) {
                _ = try await ids(.init(startDate: Harness.start.addingTimeInterval(10), endDate: Harness.start))
            }
        }
    }

    @Test func clientSideRateLimitSpacesRequests() async throws {
        // A correctness bound (at most the configured rate leaves the client), not a speed claim.
        let limiter = RateLimiter(requestsPerSecond: 20, burst: 2)
        let clock = ContinuousClock()
        let started = clock.now
        for _ in 0..<8 { try await limiter.acquire() }
        // 2 may go at once, the other 6 at 50 ms intervals.
        #expect(clock.now - started >= .milliseconds(290))
    }
}

extension AppStoreAPIClientTests {
    @available(*, deprecated, message: "exercises Apple's deprecated Send Consumption Information V1")
    @Test func deprecatedConsumptionV1IsStillSent() async throws {
        try await Harness.run { h in
            let api = try client(h).api
            let coins = try h.appStore.purchase(customer: "io", product: "coins.100")
            try await api.sendConsumptionInformationV1(
                originalTransactionId: coins.originalTransactionId,
                ConsumptionRequestV1(
                    customerConsented: true, consumptionStatus: 1, platform: 1, sampleContentProvided: false,
                    deliveryStatus: 0, accountTenure: 0, playTime: 0, lifetimeDollarsRefunded: 0,
                    lifetimeDollarsPurchased: 1, userStatus: 1, refundPreference: 0))
            await #expect(throws: AppStoreServerAPIError.self) {
                try await api.sendConsumptionInformationV1(
                    originalTransactionId: "2000009999999999", ConsumptionRequestV1(customerConsented: true))
            }
        }
    }
}
