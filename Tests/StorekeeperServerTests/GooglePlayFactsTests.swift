import Foundation
import GooglePlay
import Storekeeper
import StorekeeperServer
import Testing

@Suite struct GooglePlayFactsTests {
    let app = AppID("com.example.app")
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let catalog = Catalog([
        CatalogProduct(id: "premium.monthly", store: .googlePlay, kind: .subscription, entitlements: ["premium"]),
        CatalogProduct(id: "coins.100", store: .googlePlay, kind: .consumable, balance: "coins", credits: 100),
    ])

    func subscription(
        _ state: GooglePlay.SubscriptionState, acknowledged: Bool = false, linked: String? = nil,
        account: String? = nil
    ) -> SubscriptionPurchaseV2 {
        SubscriptionPurchaseV2(
            lineItems: [
                SubscriptionPurchaseLineItem(
                    productId: "premium.monthly", expiryTime: "2027-01-15T08:00:00Z",
                    autoRenewingPlan: AutoRenewingPlan(autoRenewEnabled: state != .canceled),
                    latestSuccessfulOrderId: "GPA.1111-2222-3333-44444..2")
            ],
            startTime: "2026-10-15T08:00:00Z", subscriptionState: state, latestOrderId: "GPA.1111-2222-3333-44444..2",
            linkedPurchaseToken: linked, acknowledgementState: acknowledged ? .acknowledged : .pending,
            externalAccountIdentifiers: account.map { ExternalAccountIdentifiers(obfuscatedExternalAccountId: $0) }
        )
    }

    @Test(arguments: [
        (GooglePlay.SubscriptionState.active, Storekeeper.SubscriptionState.active),
        (.canceled, .canceled), (.inGracePeriod, .gracePeriod), (.onHold, .billingRetry), (.paused, .paused),
        (.pending, .pending), (.expired, .expired), (.pendingPurchaseCanceled, .expired),
    ])
    func statesFollowTheDesignTable(google: GooglePlay.SubscriptionState, expected: Storekeeper.SubscriptionState)
        throws
    {
        let fact = try GooglePlayFacts.subscription(
            subscription(google), app: app, token: "tok", observedAt: now, catalog: catalog)
        #expect(fact.state == expected)
        // Google's expired may be a revocation only its notification told of (Applying keeps it).
        #expect(fact.expiredMayMeanRevoked)
        #expect(fact.key == .googlePlay("tok"))
        #expect(fact.expiresAt == ISO8601DateFormatter().date(from: "2027-01-15T08:00:00Z"))
        #expect(fact.transactions.map(\.id) == ["GPA.1111-2222-3333-44444..2"])
    }

    @Test func anUnknownStateIsJudgedByExpiry() throws {
        let future = try GooglePlayFacts.subscription(
            subscription(GooglePlay.SubscriptionState(rawValue: "SUBSCRIPTION_STATE_NEW_IN_2027")), app: app,
            token: "t",
            observedAt: now.addingTimeInterval(-86_400), catalog: catalog)
        #expect(future.state == .active)
        let past = try GooglePlayFacts.subscription(
            subscription(GooglePlay.SubscriptionState(rawValue: "SUBSCRIPTION_STATE_NEW_IN_2027")), app: app,
            token: "t",
            observedAt: Date(timeIntervalSince1970: 1_900_000_000), catalog: catalog)
        #expect(past.state == .expired)
    }

    @Test func acknowledgementLinkAndAccountHint() throws {
        let pending = try GooglePlayFacts.subscription(
            subscription(.active, linked: "old-token", account: "6F1B8B6A-6B7C-4B1A-9D7A-2E4C1B9A0F11"), app: app,
            token: "new",
            observedAt: now, catalog: catalog)
        #expect(pending.needsAcknowledgement)
        #expect(pending.replaces == .googlePlay("old-token"))
        #expect(pending.accountHint == "6f1b8b6a-6b7c-4b1a-9d7a-2e4c1b9a0f11")
        let done = try GooglePlayFacts.subscription(
            subscription(.active, acknowledged: true), app: app, token: "t", observedAt: now, catalog: catalog)
        #expect(!done.needsAcknowledgement)
        let revoked = try GooglePlayFacts.subscription(
            subscription(.expired), app: app, token: "t", observedAt: now, revoked: true, catalog: catalog)
        #expect(revoked.state == .revoked && revoked.transactions.first?.refundedFraction == 1)
        #expect(!revoked.needsAcknowledgement)
    }

    /// The base plan the subscription was bought on is its line item's `offerDetails.basePlanId`;
    /// an empty or missing one is none.
    @Test(arguments: [("yearly", "yearly"), ("", nil), (nil, nil)] as [(String?, String?)])
    func theBasePlanIsTheLineItems(given: String?, expected: String?) throws {
        var purchase = subscription(.active)
        purchase.lineItems?[0].offerDetails = given.map { OfferDetails(basePlanId: $0, offerTags: ["annual"]) }
        let fact = try GooglePlayFacts.subscription(purchase, app: app, token: "t", observedAt: now, catalog: catalog)
        #expect(fact.basePlanID == expected)
    }

    /// A plan change replaces its predecessor only once paid: pending, or with its payment
    /// canceled, it names nothing replaced, and the old subscription keeps its access.
    @Test(arguments: [
        (GooglePlay.SubscriptionState.pending, false), (.pendingPurchaseCanceled, false), (.active, true),
        (.canceled, true), (.expired, true),
    ])
    func aPlanChangeReplacesItsPredecessorOnlyOncePaid(google: GooglePlay.SubscriptionState, replaces: Bool) throws {
        let fact = try GooglePlayFacts.subscription(
            subscription(google, linked: "old-token"), app: app, token: "new", observedAt: now, catalog: catalog)
        #expect(fact.replaces == (replaces ? .googlePlay("old-token") : nil))
    }

    /// Google says which order is the latest but not when it was placed: a renewal's order, new
    /// to the server, is dated when the period stored before it ended; a recorded order keeps its
    /// date; the order of a subscription new to the server is dated when it began. Dated at the
    /// subscription's start, every renewal looked like the first order (the overview's history
    /// counted none as a renewal, and put their revenue on the first day).
    @Test func theLatestOrderIsDatedByWhatTheServerHolds() throws {
        let start = try #require(ISO8601DateFormatter().date(from: "2026-10-15T08:00:00Z"))
        func order(_ known: GooglePlayFacts.KnownSubscription) throws -> TransactionFact {
            let fact = try GooglePlayFacts.subscription(
                subscription(.active), app: app, token: "t", observedAt: now, known: known, catalog: catalog)
            return try #require(fact.transactions.first)
        }
        #expect(try order(.init()).purchasedAt == start)
        let periodEnd = now.addingTimeInterval(-3 * 86_400)
        let renewal = try order(.init(periodEnd: periodEnd))
        #expect(renewal.purchasedAt == periodEnd)
        // As of its placing: it never outweighs a void heard of later.
        #expect(renewal.observedAt == periodEnd)
        // Recorded: its date stands, whatever the stored period says now.
        let recorded = TransactionFact(
            id: "GPA.1111-2222-3333-44444..2", productID: "premium.monthly", purchasedAt: periodEnd,
            observedAt: periodEnd)
        #expect(try order(.init(latestOrder: recorded, periodEnd: now)).purchasedAt == periodEnd)
        // Another order recorded: this one is still new.
        var older = recorded
        older.id = "GPA.1111-2222-3333-44444..1"
        #expect(try order(.init(latestOrder: older, periodEnd: periodEnd)).purchasedAt == periodEnd)
        // Never before the subscription began, nor after Google's answer.
        #expect(try order(.init(periodEnd: start.addingTimeInterval(-86_400))).purchasedAt == start)
        #expect(try order(.init(periodEnd: now.addingTimeInterval(86_400))).purchasedAt == now)
        // A notification that says the order was just placed (a recovery from account hold, days
        // after the period ended) dates it then; one older than the stored period's end does not.
        let recovered = now.addingTimeInterval(-86_400)
        #expect(try order(.init(periodEnd: periodEnd, orderNoticedAt: recovered)).purchasedAt == recovered)
        #expect(try order(.init(orderNoticedAt: recovered)).purchasedAt == recovered)
        #expect(
            try order(.init(periodEnd: periodEnd, orderNoticedAt: periodEnd.addingTimeInterval(-60))).purchasedAt
                == periodEnd)
        #expect(try order(.init(latestOrder: recorded, orderNoticedAt: recovered)).purchasedAt == periodEnd)
    }

    // MARK: Voided orders of a subscription (seed 001: voids stay separate from status)

    @Test func aVoidOfAnOlderOrderRevokesThatOrderAndLeavesTheSubscriptionsState() throws {
        let active = try GooglePlayFacts.subscription(
            subscription(.active, acknowledged: true), app: app, token: "t", observedAt: now, catalog: catalog)
        let older = TransactionFact(
            id: "GPA.1111-2222-3333-44444..0", productID: "premium.monthly",
            purchasedAt: now.addingTimeInterval(-60 * 86_400),
            observedAt: now.addingTimeInterval(-60 * 86_400))
        let voided = GooglePlayFacts.voidingOrder(
            "GPA.1111-2222-3333-44444..0", of: active, known: older, at: now.addingTimeInterval(-5))
        #expect(voided.state == .active)
        #expect(voided.expiresAt == active.expiresAt)
        let order = try #require(voided.transactions.first { $0.id == "GPA.1111-2222-3333-44444..0" })
        #expect(order.revokedAt == now.addingTimeInterval(-5))
        #expect(order.refundedFraction == 1)
        #expect(order.purchasedAt == older.purchasedAt)
        // The latest order is reported unrevoked, as of its purchase: it can't outweigh the void.
        let latest = try #require(voided.transactions.first { $0.id == "GPA.1111-2222-3333-44444..2" })
        #expect(latest.revokedAt == nil)
        #expect(latest.observedAt < order.observedAt)
    }

    @Test func aVoidOfTheLatestOrderOfAnEndedSubscriptionRevokesIt() throws {
        let ended = try GooglePlayFacts.subscription(
            subscription(.expired, acknowledged: true), app: app, token: "t", observedAt: now, catalog: catalog)
        let voided = GooglePlayFacts.voidingOrder("GPA.1111-2222-3333-44444..2", of: ended, known: nil, at: now)
        #expect(voided.state == .revoked)
        #expect(voided.transactions.map(\.refundedFraction) == [1])
        // Google keeps a subscription whose latest order was refunded without revoking it running.
        let running = try GooglePlayFacts.subscription(
            subscription(.active, acknowledged: true), app: app, token: "t", observedAt: now, catalog: catalog)
        #expect(
            GooglePlayFacts.voidingOrder("GPA.1111-2222-3333-44444..2", of: running, known: nil, at: now).state
                == .active)
    }

    @Test func aSubscriptionWithoutLineItemsIsRefused() {
        #expect(throws: ServerError.self) {
            try GooglePlayFacts.subscription(
                SubscriptionPurchaseV2(), app: app, token: "t", observedAt: now, catalog: catalog)
        }
    }

    @Test func consumablesAwaitConsumptionAndPartialVoidsRefundAShare() throws {
        let bought = ProductPurchase(
            purchaseTimeMillis: Int64String(milliseconds: now), purchaseState: .purchased,
            consumptionState: .yetToBeConsumed, orderId: "GPA.9", acknowledgementState: .yetToBeAcknowledged,
            quantity: 4)
        // What Google's answer `purchase` about the four `coins.100` says now.
        func coins(_ purchase: ProductPurchase, voided: Bool = false, voidedQuantity: Int? = nil) throws
            -> PurchaseFact
        {
            try GooglePlayFacts.product(
                purchase, app: app, token: "p", productID: "coins.100", observedAt: now, voided: voided,
                voidedQuantity: voidedQuantity, catalog: catalog)
        }
        let fact = try coins(bought)
        #expect(fact.kind == .consumable && fact.state == .active && fact.needsAcknowledgement)
        #expect(fact.transactions.first?.quantity == 4)
        let partial = try coins(bought, voided: true, voidedQuantity: 1)
        #expect(partial.state == .active)
        #expect(partial.transactions.first?.refundedFraction == 0.25)
        let full = try coins(bought, voided: true)
        #expect(full.state == .revoked && full.transactions.first?.refundedFraction == 1)
        // Read again after that partial refund: Purchased, one of four units no longer refundable.
        var readAgain = bought
        readAgain.refundableQuantity = 3
        let stillPartial = try coins(readAgain)
        #expect(stillPartial.state == .active)
        #expect(stillPartial.transactions.first?.refundedFraction == 0.25)
        #expect(stillPartial.transactions.first?.revokedAt == now)
        // All still refundable: no refund read.
        readAgain.refundableQuantity = 4
        #expect(try coins(readAgain).transactions.first?.revokedAt == nil)
        // None left refundable: refunded in full, even if the purchase state still says Purchased
        // (Google documents the quantity as reflecting full refunds; whether the state turns
        // Canceled is not documented).
        readAgain.refundableQuantity = 0
        let refundedInFull = try coins(readAgain)
        #expect(refundedInFull.state == .revoked)
        #expect(refundedInFull.transactions.first?.refundedFraction == 1)
        #expect(refundedInFull.transactions.first?.revokedAt == now)
        var consumed = bought
        consumed.consumptionState = .consumed
        consumed.acknowledgementState = .acknowledged
        #expect(try !coins(consumed).needsAcknowledgement)
        var pending = bought
        pending.purchaseState = .pending
        pending.refundableQuantity = 0  // nothing paid yet, nothing refunded
        let waiting = try coins(pending)
        #expect(waiting.state == .pending && waiting.transactions.isEmpty && !waiting.needsAcknowledgement)
    }

    @Test func aLicenseTestersSubscriptionIsASandboxPurchase() throws {
        var tested = subscription(.active)
        tested.testPurchase = TestPurchase()
        let test = try GooglePlayFacts.subscription(tested, app: app, token: "t", observedAt: now, catalog: catalog)
        #expect(test.environment == .sandbox)
        let paid = try GooglePlayFacts.subscription(
            subscription(.active), app: app, token: "t", observedAt: now, catalog: catalog)
        #expect(paid.environment == .production)
    }

    @Test(arguments: [
        (ProductPurchase.PurchaseType?.some(.test), PurchaseEnvironment.sandbox),
        (nil, .production), (.some(.promo), .production), (.some(.rewarded), .production),
    ])
    func aLicenseTestersProductIsASandboxPurchase(type: ProductPurchase.PurchaseType?, expected: PurchaseEnvironment)
        throws
    {
        let bought = ProductPurchase(
            purchaseTimeMillis: Int64String(milliseconds: now), purchaseState: .purchased, orderId: "GPA.7",
            purchaseType: type, acknowledgementState: .acknowledged)
        let fact = try GooglePlayFacts.product(
            bought, app: app, token: "p", productID: "coins.100", observedAt: now, catalog: catalog)
        #expect(fact.environment == expected)
    }
}
