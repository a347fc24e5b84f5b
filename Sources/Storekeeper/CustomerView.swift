public import Foundation

/// Everything an app needs to know about a customer, at one moment: the answer to "what may this
/// customer use right now?".
public struct CustomerView: Sendable, Hashable, Codable {
    public var customerID: CustomerID
    public var appAccountToken: UUID
    /// The moment the view was computed for.
    public var asOf: Date
    public var entitlements: [EntitlementView]
    public var subscriptions: [PurchaseView]
    /// Non-consumables and non-renewing subscriptions. Consumables are not listed: what they
    /// credit is in `balances`, and a customer may hold thousands of them (the purchase history,
    /// `GET /v1/customers/{id}/purchases`, pages through every purchase).
    public var oneTimePurchases: [PurchaseView]
    public var balances: [String: Int]
    /// Whether the customer consented to share consumption data in refund requests; nil when
    /// never asked (nothing is then sent).
    public var consumptionConsent: ConsumptionConsent?

    /// - Parameters:
    ///   - purchases: the customer's purchases; consumables among them are left out (they grant
    ///     no entitlement, and the view lists none).
    ///   - access: which environments' purchases grant access in this deployment; a purchase it
    ///     does not admit is listed, never granting anything.
    public init(
        customer: Customer, purchases: [Purchase], balances: [String: Int], catalog: Catalog,
        access: EnvironmentAccess, consumptionConsent: ConsumptionConsent? = nil, at now: Date
    ) {
        customerID = customer.id
        self.consumptionConsent = consumptionConsent
        appAccountToken = customer.appAccountToken
        asOf = now
        let listed = purchases.filter { $0.kind != .consumable }.sorted { $0.key < $1.key }
        let views = listed.map { PurchaseView($0, access: access, at: now) }
        subscriptions = views.filter { $0.kind == .subscription }
        oneTimePurchases = views.filter { $0.kind != .subscription }
        self.balances = balances
        entitlements = Self.entitlements(of: listed.filter(access.admits), catalog: catalog, at: now)
    }

    /// The union of what the customer's purchases grant; where several grant one entitlement,
    /// an active one that lasts longest is shown (owned for good beats any expiry).
    static func entitlements(of purchases: [Purchase], catalog: Catalog, at now: Date) -> [EntitlementView] {
        entitlements(of: purchases, catalog: catalog) { _ in now }
    }

    /// The same, each purchase's access as at its own time.
    static func entitlements(
        of purchases: [Purchase], catalog: Catalog, at time: (Purchase) -> Date
    ) -> [EntitlementView] {
        var best: [String: EntitlementView] = [:]
        for purchase in purchases {
            guard let product = catalog.product(purchase.productID, in: purchase.key.store) else { continue }
            for name in product.entitlements {
                let candidate = EntitlementView(name: name, purchase: purchase, at: time(purchase))
                if let current = best[name], !candidate.isBetter(than: current) { continue }
                best[name] = candidate
            }
        }
        return best.values.sorted { $0.name < $1.name }
    }
}

/// One entitlement of a customer and the purchase behind it.
public struct EntitlementView: Sendable, Hashable, Codable {
    public var name: String
    public var active: Bool
    /// When access ends (nil: owned for good, or not active).
    public var expiresAt: Date?
    public var productID: String
    public var store: Store
    public var purchaseID: String
    public var state: SubscriptionState

    init(name: String, purchase: Purchase, at now: Date) {
        self.name = name
        active = purchase.grantsAccess(at: now)
        expiresAt = active ? purchase.accessEnds(at: now) : (purchase.gracePeriodExpiresAt ?? purchase.expiresAt)
        productID = purchase.productID
        store = purchase.key.store
        purchaseID = purchase.key.id
        state = purchase.state
    }

    func isBetter(than other: EntitlementView) -> Bool {
        if active != other.active { return active }
        switch (expiresAt, other.expiresAt) {
        case (nil, nil): return purchaseID < other.purchaseID
        case (nil, _): return active
        case (_, nil): return !other.active
        case (let mine?, let theirs?): return mine != theirs ? mine > theirs : purchaseID < other.purchaseID
        }
    }
}

/// A purchase as the customer view shows it.
public struct PurchaseView: Sendable, Hashable, Codable {
    public var store: Store
    public var purchaseID: String
    public var productID: String
    /// Google Play: the subscription's base plan (``Purchase/basePlanID``).
    public var basePlanID: String?
    public var kind: ProductKind
    public var state: SubscriptionState
    public var active: Bool
    public var expiresAt: Date?
    public var gracePeriodExpiresAt: Date?
    public var autoRenew: Bool?
    public var ownership: Ownership
    /// The app it belongs to (nil: stored before apps were recorded, not yet known).
    public var app: AppID?
    public var environment: PurchaseEnvironment
    /// False for a sandbox purchase this deployment does not let grant access (it never is
    /// `active` then).
    public var environmentGrantsAccess: Bool
    /// The offer the current period was bought with, and the win-back offers the store says the
    /// customer may redeem (App Store subscriptions; absent when the store reports none).
    public var offers: SubscriptionOffers?

    public init(_ purchase: Purchase, access: EnvironmentAccess, at now: Date) {
        store = purchase.key.store
        purchaseID = purchase.key.id
        productID = purchase.productID
        basePlanID = purchase.basePlanID
        kind = purchase.kind
        state = purchase.state
        environmentGrantsAccess = access.admits(purchase)
        active = environmentGrantsAccess && purchase.grantsAccess(at: now)
        expiresAt = purchase.expiresAt
        gracePeriodExpiresAt = purchase.gracePeriodExpiresAt
        autoRenew = purchase.autoRenew
        ownership = purchase.ownership
        offers = purchase.offers
        app = purchase.app
        environment = purchase.environment
    }
}
