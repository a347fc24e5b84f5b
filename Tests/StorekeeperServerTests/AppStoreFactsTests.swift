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

    @Test func aRevocationDateRevokesWhateverTheStatus() throws {
        let revoked = Self.transaction(revoked: Self.now.addingTimeInterval(-60), revocationType: .refundFull)
        #expect(try observe(revoked, Self.renewal(), status: .active).state == .revoked)
        #expect(try observe(revoked, Self.renewal()).state == .revoked)
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
        (.some(.familyRevoke), nil),
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
