import AppStoreServer
import Foundation
import GooglePlay
import Storekeeper
import StorekeeperServer
import Testing

/// Prices and offers in each store's fact mapping: what the store reports is kept with the billing
/// event, converted to micros without rounding; where it reports none, none is invented.
@Suite struct PriceFactsTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    let catalog = Catalog([
        CatalogProduct(id: "premium.monthly", store: .appStore, kind: .subscription, entitlements: ["premium"]),
        CatalogProduct(id: "premium.monthly", store: .googlePlay, kind: .subscription, entitlements: ["premium"]),
        CatalogProduct(id: "coins.100", store: .googlePlay, kind: .consumable, balance: "coins", credits: 100),
    ])

    // MARK: App Store

    static func appleTransaction(
        price: Int64?, currency: String?, offerType: OfferType? = nil, discount: OfferDiscountType? = nil
    ) -> JWSTransaction {
        JWSTransaction(
            bundleId: "com.example.app", currency: currency, environment: .production,
            expiresDate: now.addingTimeInterval(30 * 86_400), inAppOwnershipType: .purchased,
            offerDiscountType: discount, offerType: offerType, originalTransactionId: "1000", price: price,
            productId: "premium.monthly", purchaseDate: now.addingTimeInterval(-86_400), quantity: 1, signedDate: now,
            transactionId: "1001", type: .autoRenewableSubscription)
    }

    func appleFact(_ transaction: JWSTransaction) throws -> TransactionFact {
        let observation = try AppStoreFacts.observation(
            transaction: transaction, renewalInfo: nil, status: .active, observedAt: Self.now, catalog: catalog)
        guard case .purchase(let fact, _) = observation else {
            Issue.record("expected a purchase fact, got \(observation)")
            throw ServerError(.internal, "not a purchase fact")
        }
        return try #require(fact.transactions.first)
    }

    @Test func appStorePriceIsMilliunitsOfItsCurrency() throws {
        let fact = try appleFact(Self.appleTransaction(price: 9_990, currency: "EUR"))
        #expect(fact.price == Price(micros: 9_990_000, currency: CurrencyCode("EUR")))
        #expect(fact.offer == nil)
        // Without a currency (or a price) nothing is recorded: no price is made up.
        #expect(try appleFact(Self.appleTransaction(price: 9_990, currency: nil)).price == nil)
        #expect(try appleFact(Self.appleTransaction(price: nil, currency: "USD")).price == nil)
    }

    @Test(arguments: [
        (OfferType.introductory, OfferDiscountType.freeTrial, BillingOffer.freeTrial),
        (.introductory, .payAsYouGo, .introductory),
        (.introductory, .payUpFront, .introductory),
        (.promotional, .freeTrial, .other),
        (.offerCode, .payAsYouGo, .other),
    ])
    func appStoreFreeTrialIsAnIntroductoryFreeTrialOffer(
        type: OfferType, discount: OfferDiscountType, expected: BillingOffer
    ) throws {
        let fact = try appleFact(
            Self.appleTransaction(price: 0, currency: "USD", offerType: type, discount: discount))
        #expect(fact.offer == expected)
    }

    // MARK: Google Play

    func googleSubscription(recurring: Money?, phase: GooglePlay.OfferPhase?) -> SubscriptionPurchaseV2 {
        SubscriptionPurchaseV2(
            lineItems: [
                SubscriptionPurchaseLineItem(
                    productId: "premium.monthly", expiryTime: "2027-01-15T08:00:00Z",
                    autoRenewingPlan: AutoRenewingPlan(autoRenewEnabled: true, recurringPrice: recurring),
                    offerPhase: phase, latestSuccessfulOrderId: "GPA.1..2")
            ],
            startTime: "2026-10-15T08:00:00Z", subscriptionState: .active, acknowledgementState: .acknowledged)
    }

    func googleFact(_ purchase: SubscriptionPurchaseV2) throws -> TransactionFact {
        let fact = try GooglePlayFacts.subscription(
            purchase, app: AppID("com.example.app"), token: "t", observedAt: Self.now, catalog: catalog)
        return try #require(fact.transactions.first)
    }

    @Test func googlePlayRecurringPriceIsUnitsAndNanos() throws {
        let money = Money(currencyCode: "JPY", units: Int64String(1_200), nanos: 500_000_000)
        let base = try googleFact(
            googleSubscription(recurring: money, phase: OfferPhase(basePrice: BasePriceOfferPhase())))
        #expect(base.price == Price(micros: 1_200_500_000, currency: CurrencyCode("JPY")))
        #expect(base.offer == nil)
        // No phase stated: the recurring price is the order's.
        #expect(try googleFact(googleSubscription(recurring: money, phase: nil)).price == base.price)
        // No currency: nothing recorded.
        let noCurrency = Money(currencyCode: nil, units: Int64String(5), nanos: 0)
        #expect(try googleFact(googleSubscription(recurring: noCurrency, phase: nil)).price == nil)
    }

    @Test func googlePlayFreeTrialCostsNothingAndAnIntroductoryPhaseHasNoReportedPrice() throws {
        let money = Money(currencyCode: "USD", units: Int64String(4), nanos: 990_000_000)
        let trial = try googleFact(
            googleSubscription(recurring: money, phase: OfferPhase(freeTrial: FreeTrialOfferPhase())))
        #expect(trial.offer == .freeTrial)
        #expect(trial.price == Price(micros: 0, currency: CurrencyCode("USD")))
        let introductory = try googleFact(
            googleSubscription(recurring: money, phase: OfferPhase(introductoryPrice: IntroductoryPriceOfferPhase())))
        #expect(introductory.offer == .introductory)
        // recurringPrice excludes discounts: it is not what an introductory order cost.
        #expect(introductory.price == nil)
    }

    @Test func googlePlayOneTimeProductsReportNoPrice() throws {
        let bought = ProductPurchase(
            purchaseTimeMillis: Int64String(milliseconds: Self.now), purchaseState: .purchased,
            consumptionState: .yetToBeConsumed, orderId: "GPA.9", acknowledgementState: .acknowledged, quantity: 1,
            regionCode: "DE")
        let fact = try GooglePlayFacts.product(
            bought, app: AppID("com.example.app"), token: "p", productID: "coins.100", observedAt: Self.now,
            catalog: catalog)
        #expect(fact.transactions.first?.price == nil)
    }

    // MARK: Merging

    @Test func aLaterWordWithoutAPriceKeepsThePrice() {
        let price = Price(micros: 9_990_000, currency: CurrencyCode("USD"))
        let bought = TransactionRecord(
            purchaseKey: .appStore("1000"),
            fact: TransactionFact(
                id: "1001", productID: "p", purchasedAt: Self.now, observedAt: Self.now, price: price, offer: .freeTrial
            ))
        let refund = TransactionFact(
            id: "1001", productID: "p", purchasedAt: Self.now, revokedAt: Self.now, refundedFraction: 1,
            observedAt: Self.now.addingTimeInterval(60))
        let merged = bought.merging(refund)
        #expect(merged.fact.revokedAt != nil)
        #expect(merged.fact.price == price && merged.fact.offer == .freeTrial)
        #expect(price.share(0.5) == 4_995_000)
    }
}
