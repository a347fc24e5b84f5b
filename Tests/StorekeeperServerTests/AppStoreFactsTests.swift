import AppStoreServer
import Foundation
import Storekeeper
import StorekeeperServer
import Testing

/// `AppStoreFacts` on hand-built payloads: DESIGN.md's App Store column, refunds, environments
/// and the ordering key, each stated once.
@Suite struct AppStoreFactsTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let day: TimeInterval = 86_400
    let catalog = Catalog([
        CatalogProduct(id: "premium.monthly", store: .appStore, kind: .subscription, entitlements: ["premium"]),
        CatalogProduct(id: "coins.100", store: .appStore, kind: .consumable, balance: "coins", credits: 100),
    ])

    static func transaction(
        product: String = "premium.monthly", type: TransactionType = .autoRenewableSubscription,
        bundleID: String? = "com.example.app", originalID: String? = "1000", transactionID: String? = "1001",
        environment: Environment = .production, expires: Date? = now.addingTimeInterval(30 * day),
        revoked: Date? = nil, revocationType: RevocationType? = nil, revocationPercentage: Int32? = nil,
        upgraded: Bool? = nil, accountToken: String? = nil
    ) -> JWSTransaction {
        JWSTransaction(
            appAccountToken: accountToken, bundleId: bundleID, environment: environment, expiresDate: expires,
            inAppOwnershipType: .purchased, isUpgraded: upgraded, originalTransactionId: originalID,
            productId: product, purchaseDate: now.addingTimeInterval(-day), quantity: 1, revocationDate: revoked,
            revocationPercentage: revocationPercentage, revocationType: revocationType, signedDate: now,
            transactionId: transactionID, type: type)
    }

    static func renewal(
        _ autoRenew: AutoRenewStatus = .on, grace: Date? = nil, billingRetry: Bool? = nil
    ) -> JWSRenewalInfo {
        JWSRenewalInfo(
            autoRenewStatus: autoRenew, gracePeriodExpiresDate: grace, isInBillingRetryPeriod: billingRetry,
            originalTransactionId: "1000", productId: "premium.monthly", signedDate: now)
    }

    func observe(
        _ transaction: JWSTransaction, _ renewalInfo: JWSRenewalInfo? = nil, status: SubscriptionStatus? = nil
    ) throws -> PurchaseFact {
        let observation = try AppStoreFacts.observation(
            transaction: transaction, renewalInfo: renewalInfo, status: status, observedAt: Self.now,
            catalog: catalog)
        guard case .purchase(let fact, _) = observation else {
            Issue.record("expected a purchase fact, got \(observation)")
            throw ServerError(.internal, "not a purchase fact")
        }
        return fact
    }

    // MARK: The state table, with a status

    @Test(arguments: [
        (SubscriptionStatus.active, AutoRenewStatus.on, Storekeeper.SubscriptionState.active),
        (.active, .off, .canceled),
        (.expired, .on, .expired),
        (.billingRetryPeriod, .on, .billingRetry),
        (.billingGracePeriod, .on, .gracePeriod),
        (.revoked, .on, .revoked),
    ])
    func aStatusDecidesTheState(
        status: SubscriptionStatus, autoRenew: AutoRenewStatus, expected: Storekeeper.SubscriptionState
    ) throws {
        let fact = try observe(Self.transaction(), Self.renewal(autoRenew), status: status)
        #expect(fact.state == expected)
        #expect(fact.autoRenew == (autoRenew == .on))
    }

    @Test func aStatusOverridesWhatTheDatesSay() throws {
        // Still within its paid period by its dates, yet the notification says expired.
        #expect(try observe(Self.transaction(), Self.renewal(), status: .expired).state == .expired)
    }

    @Test func theGracePeriodCarriesTheRenewalInfosGraceExpiry() throws {
        let grace = Self.now.addingTimeInterval(6 * Self.day)
        let inGrace = try observe(
            Self.transaction(expires: Self.now.addingTimeInterval(-Self.day)), Self.renewal(grace: grace),
            status: .billingGracePeriod)
        #expect(inGrace.state == .gracePeriod)
        #expect(inGrace.gracePeriodExpiresAt == grace)
        let active = try observe(Self.transaction(), Self.renewal(grace: grace), status: .active)
        #expect(active.gracePeriodExpiresAt == nil)
    }

    // MARK: The state table, without a status

    @Test func withoutAStatusAnUnexpiredSubscriptionIsActiveOrCanceledByAutoRenew() throws {
        #expect(try observe(Self.transaction(), Self.renewal(.on)).state == .active)
        #expect(try observe(Self.transaction(), Self.renewal(.off)).state == .canceled)
        // No renewal info: nothing says it won't renew.
        #expect(try observe(Self.transaction(), nil).state == .active)
    }

    @Test func withoutAStatusAnExpiredSubscriptionIsInGraceRetryOrExpired() throws {
        let lapsed = Self.transaction(expires: Self.now.addingTimeInterval(-Self.day))
        let grace = try observe(lapsed, Self.renewal(grace: Self.now.addingTimeInterval(Self.day)))
        #expect(grace.state == .gracePeriod)
        #expect(grace.gracePeriodExpiresAt == Self.now.addingTimeInterval(Self.day))
        #expect(
            try observe(lapsed, Self.renewal(grace: Self.now.addingTimeInterval(-1), billingRetry: true)).state
                == .billingRetry)
        #expect(try observe(lapsed, Self.renewal(billingRetry: false)).state == .expired)
        #expect(try observe(lapsed, nil).state == .expired)
    }

    @Test func anExpiryAtTheObservationTimeHasEnded() throws {
        #expect(try observe(Self.transaction(expires: Self.now), Self.renewal()).state == .expired)
    }

    // MARK: Refunds of subscriptions (a fact about one transaction)

    func billingEvent(
        _ transaction: JWSTransaction, status: SubscriptionStatus?
    ) throws -> TransactionFact? {
        let observation = try AppStoreFacts.observation(
            transaction: transaction, renewalInfo: Self.renewal(), status: status, observedAt: Self.now,
            catalog: catalog)
        guard case .billingEvent(let event, let key) = observation else { return nil }
        #expect(key == .appStore("1000"))
        return event
    }

    @Test(arguments: [RevocationType.refundFull, .refundProrated, .familyRevoke])
    func theCurrentTransactionRefundedRevokesTheSubscription(type: RevocationType) throws {
        let revoked = Self.transaction(
            revoked: Self.now.addingTimeInterval(-60), revocationType: type,
            revocationPercentage: type == .refundProrated ? 40_000 : nil)
        #expect(try observe(revoked, Self.renewal(), status: .revoked).state == .revoked)
        // A submitted transaction carries no status: its period not ended, it is the current one.
        #expect(try observe(revoked, Self.renewal()).state == .revoked)
    }

    @Test func aRefundOfAnOlderRenewalIsOnlyABillingEventOfIt() throws {
        // The status says the subscription is active: the refunded transaction is not the latest.
        let older = Self.transaction(
            transactionID: "1002", expires: Self.now.addingTimeInterval(-2 * Self.day),
            revoked: Self.now.addingTimeInterval(-60), revocationType: .refundFull)
        let event = try #require(try billingEvent(older, status: .active))
        #expect(event.id == "1002")
        #expect(event.revokedAt == Self.now.addingTimeInterval(-60))
        #expect(event.refundedFraction == 1)
        // Without a status, a period that ended tells the same.
        #expect(try billingEvent(older, status: nil)?.id == "1002")
        // Even a refund of the current period's transaction follows the status while it says active.
        let current = Self.transaction(revoked: Self.now.addingTimeInterval(-60), revocationType: .refundFull)
        #expect(try billingEvent(current, status: .active)?.id == "1001")
    }

    @Test func aReversedRefundOfAnOlderRenewalIsOnlyABillingEventOfIt() throws {
        let older = Self.transaction(transactionID: "1002", expires: Self.now.addingTimeInterval(-2 * Self.day))
        let event = try #require(try billingEvent(older, status: .active))
        #expect(event.revokedAt == nil)
        #expect(event.refundedFraction == 0)
    }

    // MARK: Prorated refunds of one-time purchases

    func oneTime(
        _ type: TransactionType, product: String, revocation: RevocationType, percentage: Int32?,
        rule: ProratedRefundRule = .revoke
    ) throws -> PurchaseFact {
        let catalog = Catalog([
            CatalogProduct(
                id: "lifetime", store: .appStore, kind: .nonConsumable, entitlements: ["lifetime"],
                proratedRefund: rule),
            CatalogProduct(
                id: "pass.year", store: .appStore, kind: .nonRenewingSubscription, entitlements: ["pass"],
                proratedRefund: rule),
            CatalogProduct(id: "coins.100", store: .appStore, kind: .consumable, balance: "coins", credits: 100),
        ])
        let observation = try AppStoreFacts.observation(
            transaction: Self.transaction(
                product: product, type: type, expires: nil, revoked: Self.now, revocationType: revocation,
                revocationPercentage: percentage),
            renewalInfo: nil, status: nil, observedAt: Self.now, catalog: catalog)
        guard case .purchase(let fact, _) = observation else { throw ServerError(.internal, "not a purchase fact") }
        return fact
    }

    @Test func aProratedRefundLeavesAConsumableActiveForItsLedgerToTakeTheShare() throws {
        let fact = try oneTime(.consumable, product: "coins.100", revocation: .refundProrated, percentage: 30_000)
        #expect(fact.state == .active)
        #expect(fact.transactions.map(\.refundedFraction) == [0.3])
        let full = try oneTime(.consumable, product: "coins.100", revocation: .refundFull, percentage: nil)
        #expect(full.state == .revoked)
    }

    @Test(arguments: [
        (ProratedRefundRule.revoke, Int32(30_000), SubscriptionState.revoked),
        (.keep, 30_000, .active),
        (.keep, 100_000, .revoked),
        (.revokeFromPercent(50), 30_000, .active),
        (.revokeFromPercent(50), 50_000, .revoked),
        (.revokeFromPercent(50), 80_000, .revoked),
    ])
    func aProratedRefundTakesAnEntitlementByTheProductsRule(
        rule: ProratedRefundRule, percentage: Int32, expected: SubscriptionState
    ) throws {
        for (type, product) in [
            (TransactionType.nonConsumable, "lifetime"), (.nonRenewingSubscription, "pass.year"),
        ] {
            let fact = try oneTime(
                type, product: product, revocation: .refundProrated, percentage: percentage, rule: rule)
            #expect(fact.state == expected, "\(product) \(rule) \(percentage)")
        }
    }

    @Test(arguments: [RevocationType.refundFull, .familyRevoke])
    func aFullRefundOrFamilyRevocationRevokesAnyOneTimePurchase(type: RevocationType) throws {
        for (kind, product) in [
            (TransactionType.nonConsumable, "lifetime"), (.nonRenewingSubscription, "pass.year"),
            (.consumable, "coins.100"),
        ] {
            let fact = try oneTime(kind, product: product, revocation: type, percentage: nil, rule: .keep)
            #expect(fact.state == .revoked, "\(product)")
            // A family member paid nothing: its revocation refunds nothing.
            #expect(fact.transactions.map(\.refundedFraction) == [type == .familyRevoke ? 0 : 1])
        }
    }

    @Test func anUpgradedTransactionIsOnlyABillingEvent() throws {
        let observation = try AppStoreFacts.observation(
            transaction: Self.transaction(upgraded: true), renewalInfo: Self.renewal(), status: .active,
            observedAt: Self.now, catalog: catalog)
        guard case .billingEvent(let event, let key) = observation else {
            Issue.record("expected a billing event, got \(observation)")
            return
        }
        #expect(key == .appStore("1000"))
        #expect(event.id == "1001")
        #expect(event.productID == "premium.monthly")
        #expect(event.observedAt == Self.now)
    }

    // MARK: Refunds

    @Test func aProratedRefundTakesTheRevocationPercentageInMilliPercent() throws {
        let refunded = try observe(
            Self.transaction(
                product: "coins.100", type: .consumable, expires: nil, revoked: Self.now,
                revocationType: .refundProrated, revocationPercentage: 25_000))
        #expect(refunded.transactions.map(\.refundedFraction) == [0.25])
        #expect(refunded.transactions.first?.revokedAt == Self.now)
    }

    @Test(arguments: [
        (RevocationType?.some(.refundFull), Int32?.none),
        (.some(.refundProrated), nil),
        (nil, nil),
        (.some(.refundProrated), 250_000),
    ])
    func otherRevocationsRefundTheWholeTransaction(type: RevocationType?, percentage: Int32?) throws {
        let refunded = try observe(
            Self.transaction(
                product: "coins.100", type: .consumable, expires: nil, revoked: Self.now, revocationType: type,
                revocationPercentage: percentage))
        #expect(refunded.transactions.map(\.refundedFraction) == [1])
    }

    @Test func anUnrevokedTransactionRefundsNothing() throws {
        let bought = try observe(Self.transaction(product: "coins.100", type: .consumable, expires: nil))
        #expect(bought.transactions.map(\.refundedFraction) == [0])
        #expect(bought.transactions.first?.revokedAt == nil)
        #expect(bought.state == .active)
        #expect(bought.kind == .consumable)
        #expect(bought.autoRenew == nil)
    }

    // MARK: Environments

    @Test func productionAndSandboxMapToTheDomain() {
        #expect(AppStoreFacts.environment(Environment.production) == .production)
        #expect(AppStoreFacts.environment(Environment.sandbox) == .sandbox)
        #expect(AppStoreFacts.environment(Environment.xcode) == nil)
        #expect(AppStoreFacts.environment(Environment.localTesting) == nil)
        #expect(AppStoreFacts.environment(Environment?.none) == nil)
        #expect(AppStoreFacts.environment(PurchaseEnvironment.production) == .production)
        #expect(AppStoreFacts.environment(PurchaseEnvironment.sandbox) == .sandbox)
    }

    @Test func aSandboxTransactionIsASandboxFact() throws {
        #expect(try observe(Self.transaction(environment: .sandbox)).environment == .sandbox)
        #expect(try observe(Self.transaction(environment: .production)).environment == .production)
    }

    @Test(arguments: [Environment.xcode, .localTesting])
    func anXcodeTransactionIsRefused(environment: Environment) {
        let error = #expect(throws: ServerError.self) {
            try AppStoreFacts.observation(
                transaction: Self.transaction(environment: environment), renewalInfo: nil, status: nil,
                observedAt: Self.now, catalog: catalog)
        }
        #expect(error?.code == .environmentNotAccepted)
    }

    // MARK: Identity

    @Test(arguments: ["originalTransactionId", "transactionId", "productId", "bundleId"])
    func aTransactionMissingAnIdIsMalformed(missing: String) {
        let base = Self.transaction()
        let transaction = JWSTransaction(
            bundleId: missing == "bundleId" ? nil : base.bundleId, environment: base.environment,
            expiresDate: base.expiresDate,
            originalTransactionId: missing == "originalTransactionId" ? nil : base.originalTransactionId,
            productId: missing == "productId" ? nil : base.productId, purchaseDate: base.purchaseDate,
            signedDate: base.signedDate, transactionId: missing == "transactionId" ? nil : base.transactionId,
            type: base.type)
        let error = #expect(throws: ServerError.self) {
            try AppStoreFacts.observation(
                transaction: transaction, renewalInfo: nil, status: nil, observedAt: Self.now, catalog: catalog)
        }
        #expect(error?.code == .malformedPayload)
    }

    @Test func theFactsAppIsTheTransactionsBundleID() throws {
        let fact = try observe(Self.transaction(bundleID: "com.example.other"))
        #expect(fact.app == AppID("com.example.other"))
        #expect(fact.key == .appStore("1000"))
        #expect(fact.transactions.map(\.id) == ["1001"])
    }

    @Test func theAccountTokenIsTheLowercasedHint() throws {
        let token = "5A3B1C2D-0000-4000-8000-00000000ABCD"
        #expect(try observe(Self.transaction(accountToken: token)).accountHint == token.lowercased())
    }

    @Test func theCatalogsKindWinsOverTheTransactionType() throws {
        // The catalog says premium.monthly is a subscription even if the payload calls it otherwise.
        let fact = try observe(Self.transaction(type: .nonConsumable), Self.renewal(.off))
        #expect(fact.kind == .subscription)
        #expect(fact.state == .canceled)
        let unknown = try observe(Self.transaction(product: "not.in.catalog", type: .nonRenewingSubscription))
        #expect(unknown.kind == .nonRenewingSubscription)
    }

    // MARK: Ordering

    @Test func observedAtIsTheNewestGivenDate() {
        let early = Date(timeIntervalSince1970: 1_000)
        let late = Date(timeIntervalSince1970: 2_000)
        #expect(AppStoreFacts.observedAt(early, late) == late)
        #expect(AppStoreFacts.observedAt(late, early) == late)
        #expect(AppStoreFacts.observedAt(nil, early, nil) == early)
        #expect(AppStoreFacts.observedAt(late, nil, early) == late)
    }

    @Test func observedAtOfNoDatesIsNil() {
        #expect(AppStoreFacts.observedAt() == nil)
        #expect(AppStoreFacts.observedAt(nil, nil) == nil)
    }
}
