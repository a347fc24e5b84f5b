import Foundation
import Storekeeper
import TestSupport
import Testing

/// `CustomerView.jsonData()` must write exactly the bytes of the API's JSONEncoder: apps parse the
/// view, and its bytes must not depend on which of the two wrote it. The writer's primitives
/// (strings, dates, integers) are shared with events and checked edge by edge in EventJSONTests;
/// these tests check the view's own shape and its fields.
@Suite struct CustomerViewJSONTests {
    @discardableResult
    static func expectSameBytes(
        _ view: CustomerView, _ context: @autoclosure () -> String = "",
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> Bool {
        JSONWriterReference.expectSameBytes(view, context(), sourceLocation: sourceLocation) { $0.jsonData() }
    }

    static func decoded<Value: Decodable>(_ type: Value.Type, _ json: String) -> Value {
        do {
            return try JSONDecoder().decode(Value.self, from: Data(json.utf8))
        } catch {
            fatalError("the \(Value.self) template does not decode: \(error)")
        }
    }

    /// A purchase with every field set; PurchaseView has no public initializer but its fields are vars.
    static let purchase = decoded(
        PurchaseView.self,
        """
        {"active":true,"app":"com.example.app","autoRenew":true,"basePlanID":"monthly-p1m","environment":"production",\
        "environmentGrantsAccess":true,"expiresAt":800000000,"gracePeriodExpiresAt":800086400,\
        "kind":"subscription","offers":{"current":{"id":"spring","kind":"promotional"},\
        "eligibleWinBackOfferIDs":["back-1","back/2"]},"ownership":"purchased","productID":"monthly",\
        "purchaseID":"2000000000000001","state":"active","store":"app_store"}
        """)

    /// A view with every field set, nested optionals included.
    static let full: CustomerView = {
        var view = decoded(
            CustomerView.self,
            """
            {"appAccountToken":"0FA15B3C-D2E4-476F-8A9B-0C1D2E3FABCD","asOf":800000000.25,"balances":{},\
            "consumptionConsent":{"consented":true,"decidedAt":790000000},"customerID":"alice",\
            "entitlements":[],"oneTimePurchases":[],"subscriptions":[]}
            """)
        view.balances = ["coins": 60, "gems": -3, "Zeta": 0, "a/b": .max, "é": .min]
        view.entitlements = [
            EventJSONTests.entitlement("pro"), EventJSONTests.entitlement("ads-free", expiresAt: nil),
        ]
        var consumable = purchase
        consumable.kind = .consumable
        consumable.offers = nil
        consumable.autoRenew = nil
        consumable.expiresAt = nil
        consumable.gracePeriodExpiresAt = nil
        view.subscriptions = [purchase, purchase]
        view.subscriptions[1].purchaseID = "2000000000000002"
        view.oneTimePurchases = [consumable]
        return view
    }()

    /// A view with nothing optional: no consent, no purchases, no balances.
    static let bare: CustomerView = {
        var view = full
        view.consumptionConsent = nil
        view.balances = [:]
        view.entitlements = []
        view.subscriptions = []
        view.oneTimePurchases = []
        return view
    }()

    // MARK: Fields

    /// Every stored property the writer writes; a new one must be added to CustomerViewJSON.swift first.
    @Test func everyStoredPropertyIsKnown() throws {
        func labels(_ value: Any) -> Set<String> { Set(Mirror(reflecting: value).children.compactMap(\.label)) }
        let hint = "a stored property was added or removed: write it in CustomerViewJSON.swift, then update this list"
        #expect(
            labels(Self.full)
                == [
                    "customerID", "appAccountToken", "asOf", "entitlements", "subscriptions", "oneTimePurchases",
                    "balances", "consumptionConsent",
                ], "CustomerView: \(hint)")
        #expect(
            labels(Self.purchase)
                == [
                    "store", "purchaseID", "productID", "kind", "state", "active", "expiresAt", "gracePeriodExpiresAt",
                    "autoRenew", "ownership", "app", "environment", "environmentGrantsAccess", "offers", "basePlanID",
                ], "PurchaseView: \(hint)")
        let offers = try #require(Self.purchase.offers)
        #expect(labels(offers) == ["current", "eligibleWinBackOfferIDs"], "SubscriptionOffers: \(hint)")
        #expect(labels(try #require(offers.current)) == ["kind", "id"], "AppliedOffer: \(hint)")
        #expect(
            labels(try #require(Self.full.consumptionConsent)) == ["consented", "decidedAt"],
            "ConsumptionConsent: \(hint)")
    }

    /// Each optional field, copied from one view into another: set on the bare view, cleared on the full one.
    static let optionalFields: [(name: String, copy: @Sendable (inout CustomerView, CustomerView) -> Void)] = [
        ("consumptionConsent", { $0.consumptionConsent = $1.consumptionConsent }),
        ("balances", { $0.balances = $1.balances }),
        ("entitlements", { $0.entitlements = $1.entitlements }),
        ("subscriptions", { $0.subscriptions = $1.subscriptions }),
        ("oneTimePurchases", { $0.oneTimePurchases = $1.oneTimePurchases }),
    ]

    /// Each optional field of a purchase, cleared on the full one.
    static let purchaseOptionals: [(name: String, clear: @Sendable (inout PurchaseView) -> Void)] = [
        ("app", { $0.app = nil }),
        ("autoRenew", { $0.autoRenew = nil }),
        ("basePlanID", { $0.basePlanID = nil }),
        ("expiresAt", { $0.expiresAt = nil }),
        ("gracePeriodExpiresAt", { $0.gracePeriodExpiresAt = nil }),
        ("offers", { $0.offers = nil }),
        ("offers.current", { $0.offers?.current = nil }),
        ("offers.current.id", { $0.offers?.current?.id = nil }),
        ("offers.eligibleWinBackOfferIDs", { $0.offers?.eligibleWinBackOfferIDs = [] }),
    ]

    @Test func eachOptionalFieldPresentAndAbsent() {
        Self.expectSameBytes(Self.bare, "no optional field")
        Self.expectSameBytes(Self.full, "every optional field")
        for field in Self.optionalFields {
            var only = Self.bare
            field.copy(&only, Self.full)
            Self.expectSameBytes(only, "only \(field.name)")
            var allBut = Self.full
            field.copy(&allBut, Self.bare)
            Self.expectSameBytes(allBut, "all but \(field.name)")
        }
        for field in Self.purchaseOptionals {
            var view = Self.full
            field.clear(&view.subscriptions[0])
            Self.expectSameBytes(view, "a purchase without \(field.name)")
        }
    }

    @Test func everyEnumValue() {
        var view = Self.full
        view.subscriptions = SubscriptionState.allCases.flatMap { state in
            ProductKind.allCases.map { kind in
                var purchase = Self.purchase
                purchase.state = state
                purchase.kind = kind
                return purchase
            }
        }
        view.oneTimePurchases = PurchaseEnvironment.allCases.flatMap { environment in
            Store.allCases.map { store in
                var purchase = Self.purchase
                purchase.environment = environment
                purchase.store = store
                purchase.ownership = .familyShared
                purchase.offers?.current = AppliedOffer(kind: OfferKind("a kind the store added"), id: nil)
                return purchase
            }
        }
        Self.expectSameBytes(view, "every state, kind, environment and store")
    }

    /// Balance names in the order JSONEncoder sorts a dictionary's keys, escapes included.
    @Test(arguments: [
        ["b": 1, "a": 2, "B": 3, "_": 4, "aa": 5, "": 6],
        ["é": 1, "\u{301}e": 2, "z": 3, "😀": 4, "中": 5, "\u{7F}": 6],
        ["a/b": 1, "a\"b": 2, "a\\b": 3, "a\u{1}b": 4, "a\nb": 5, "a b": 6],
        Dictionary(uniqueKeysWithValues: (0..<200).map { ("balance-\($0)", $0 * 37 - 1000) }),
    ])
    func balanceOrder(balances: [String: Int]) {
        var view = Self.bare
        view.balances = balances
        Self.expectSameBytes(view, "balances \(balances.keys.sorted())")
    }

    /// More purchases than the first buffer holds.
    @Test func manyPurchases() {
        var view = Self.full
        view.subscriptions = (0..<300).map { index in
            var purchase = Self.purchase
            purchase.purchaseID = "\(2_000_000_000_000_000 + index)"
            return purchase
        }
        Self.expectSameBytes(view, "300 subscriptions")
    }

    // MARK: Random views

    static let seeds = RandomJSONValues.seeds(
        [0x5EED_0000_0000_0011, 0x5EED_0000_0000_0012], addingFrom: "CUSTOMER_VIEW_JSON_SEED")

    @Test(arguments: seeds)
    func randomViews(seed: UInt64) {
        var generator = RandomJSONValues(seed: seed)
        for index in 0..<1_000 {
            let view = generator.customerView()
            let context =
                "seed \(seed) (replay: CUSTOMER_VIEW_JSON_SEED=\(seed) swift test --filter CustomerViewJSONTests), view \(index)"
            guard Self.expectSameBytes(view, context) else { return }
        }
    }
}

/// Random customer views for the property test.
extension RandomJSONValues {
    mutating func purchaseView() -> PurchaseView {
        var purchase = CustomerViewJSONTests.purchase
        purchase.store = element(Store.allCases)
        purchase.purchaseID = string()
        purchase.productID = string()
        purchase.kind = element(ProductKind.allCases)
        purchase.state = element(SubscriptionState.allCases)
        purchase.active = chance(0.5)
        purchase.expiresAt = maybe { $0.date() }
        purchase.gracePeriodExpiresAt = maybe { $0.date() }
        purchase.autoRenew = maybe { $0.chance(0.5) }
        purchase.ownership = element([.purchased, .familyShared])
        purchase.app = maybe { AppID($0.string()) }
        purchase.environment = element(PurchaseEnvironment.allCases)
        purchase.environmentGrantsAccess = chance(0.5)
        purchase.offers = maybe { values in
            SubscriptionOffers(
                current: values.maybe {
                    AppliedOffer(
                        kind: $0.chance(0.8)
                            ? $0.element([.introductory, .promotional, .offerCode, .winBack]) : OfferKind($0.string()),
                        id: $0.maybe { $0.string() })
                },
                eligibleWinBackOfferIDs: (0..<Int.random(in: 0...3, using: &values.random)).map { _ in values.string() }
            )
        }
        return purchase
    }

    mutating func customerView() -> CustomerView {
        var view = CustomerViewJSONTests.bare
        view.customerID = CustomerID(string())
        view.appAccountToken = uuid()
        view.asOf = date()
        view.consumptionConsent = maybe { ConsumptionConsent(consented: $0.chance(0.5), decidedAt: $0.date()) }
        view.balances = Dictionary(
            (0..<Int.random(in: 0...4, using: &random)).map { _ in (string(), integer()) }, uniquingKeysWith: { $1 })
        view.entitlements = (0..<Int.random(in: 0...3, using: &random)).map { _ in entitlement() }
        view.subscriptions = (0..<Int.random(in: 0...4, using: &random)).map { _ in purchaseView() }
        view.oneTimePurchases = (0..<Int.random(in: 0...3, using: &random)).map { _ in purchaseView() }
        return view
    }
}
