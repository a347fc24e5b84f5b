import Foundation
import Storekeeper
import Testing

/// Who may have an offer signed (``OfferEligibility``), each rule once.
@Suite struct OfferEligibilityTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    let catalog = Catalog([
        CatalogProduct(id: "pro.monthly", store: .appStore, kind: .subscription, group: "pro"),
        CatalogProduct(id: "max.monthly", store: .appStore, kind: .subscription, group: "pro"),
        CatalogProduct(id: "news.monthly", store: .appStore, kind: .subscription, group: "news"),
        CatalogProduct(id: "premium", store: .googlePlay, kind: .subscription, group: "pro"),
        CatalogProduct(id: "solo", store: .appStore, kind: .subscription),
        CatalogProduct(id: "coins", store: .appStore, kind: .consumable, balance: "coins", credits: 1),
    ])

    func purchase(_ product: String, _ store: Store = .appStore, state: SubscriptionState = .expired) -> Purchase {
        Purchase(
            key: PurchaseKey(store: store, id: UUID().uuidString), app: AppID("app"), productID: product,
            kind: catalog.product(product, in: store)?.kind ?? .subscription, environment: .production, state: state,
            observedAt: Self.now)
    }

    func product(_ id: String) throws -> CatalogProduct { try #require(catalog.product(id, in: .appStore)) }

    @Test func promotionalOffersGoToCurrentOrLapsedSubscribersOfTheGroup() throws {
        let pro = try product("pro.monthly")
        let rule = OfferEligibility.PromotionalRule.subscribersOfGroup
        #expect(OfferEligibility.promotional(pro, rule: rule, purchases: [purchase("max.monthly")], catalog: catalog))
        #expect(
            OfferEligibility.promotional(
                pro, rule: rule, purchases: [purchase("pro.monthly", state: .active)], catalog: catalog))
        #expect(!OfferEligibility.promotional(pro, rule: rule, purchases: [purchase("news.monthly")], catalog: catalog))
        #expect(!OfferEligibility.promotional(pro, rule: rule, purchases: [purchase("coins")], catalog: catalog))
        // Another store's subscriber of a group of the same name is not Apple's subscriber.
        #expect(
            !OfferEligibility.promotional(
                pro, rule: rule, purchases: [purchase("premium", .googlePlay)], catalog: catalog))
        #expect(
            !OfferEligibility.promotional(
                pro, rule: rule, purchases: [purchase("max.monthly", state: .pending)], catalog: catalog))
        #expect(OfferEligibility.promotional(pro, rule: .anyone, purchases: [], catalog: catalog))
    }

    @Test func anIntroductoryOfferIsForNewSubscribersOfTheGroup() throws {
        let pro = try product("pro.monthly")
        #expect(OfferEligibility.introductory(pro, acrossStores: false, purchases: [], catalog: catalog))
        #expect(
            !OfferEligibility.introductory(
                pro, acrossStores: false, purchases: [purchase("max.monthly")], catalog: catalog))
        #expect(
            OfferEligibility.introductory(
                pro, acrossStores: false, purchases: [purchase("news.monthly")], catalog: catalog))
        let google = [purchase("premium", .googlePlay, state: .active)]
        #expect(OfferEligibility.introductory(pro, acrossStores: false, purchases: google, catalog: catalog))
        #expect(!OfferEligibility.introductory(pro, acrossStores: true, purchases: google, catalog: catalog))
        // Without a group, the product itself.
        let solo = try product("solo")
        #expect(
            !OfferEligibility.introductory(solo, acrossStores: false, purchases: [purchase("solo")], catalog: catalog))
        #expect(OfferEligibility.introductory(solo, acrossStores: true, purchases: google, catalog: catalog))
    }
}
