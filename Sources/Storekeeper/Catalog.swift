/// What kind of thing a product is; decides how its purchases grant access.
public enum ProductKind: String, Sendable, Hashable, Codable, CaseIterable {
    /// Renews until canceled (App Store auto-renewable, Google Play subscription).
    case subscription
    /// Bought once, owned forever unless refunded.
    case nonConsumable = "non_consumable"
    /// Bought any number of times; credits a balance instead of granting an entitlement.
    case consumable
    /// App Store non-renewing subscription: owned, with access for a period the app decides.
    case nonRenewingSubscription = "non_renewing_subscription"
}

/// One product of the catalog: what buying it grants.
public struct CatalogProduct: Sendable, Hashable, Codable {
    /// The store's product id (App Store product id, Google Play product or subscription id).
    public var id: String
    public var store: Store
    public var kind: ProductKind
    /// Entitlement names an owning customer gets while the purchase grants access.
    public var entitlements: [String]
    /// For consumables: the balance credited, and how much one unit credits.
    public var balance: String?
    public var credits: Int
    /// The subscription group (App Store) or subscription (Google Play) this belongs to; products
    /// in one group replace each other on upgrade.
    public var group: String?
    /// What a prorated refund does to the entitlements it grants (balances lose the refunded share).
    public var proratedRefund: ProratedRefundRule
    /// Where answering a refund consumption request for this product departs from its app's policy.
    public var refundPolicy: RefundPolicyOverride?
    /// The promotional offer ids set up for this subscription in App Store Connect: the only ones
    /// the server signs.
    public var promotionalOffers: [String]

    public init(
        id: String, store: Store, kind: ProductKind, entitlements: [String] = [], balance: String? = nil,
        credits: Int = 0, group: String? = nil, proratedRefund: ProratedRefundRule = .revoke,
        refundPolicy: RefundPolicyOverride? = nil, promotionalOffers: [String] = []
    ) {
        self.id = id
        self.store = store
        self.kind = kind
        self.entitlements = entitlements
        self.balance = balance
        self.credits = credits
        self.group = group
        self.proratedRefund = proratedRefund
        self.refundPolicy = refundPolicy
        self.promotionalOffers = promotionalOffers
    }
}

/// The product catalog: product ids, per store, mapped to what they grant.
public struct Catalog: Sendable, Hashable {
    private var products: [Store: [String: CatalogProduct]]

    public init(_ products: [CatalogProduct] = []) {
        var byStore: [Store: [String: CatalogProduct]] = [:]
        for product in products { byStore[product.store, default: [:]][product.id] = product }
        self.products = byStore
    }

    public func product(_ id: String, in store: Store) -> CatalogProduct? {
        products[store]?[id]
    }

    public var allProducts: [CatalogProduct] {
        products.values.flatMap(\.values).sorted { ($0.store.rawValue, $0.id) < ($1.store.rawValue, $1.id) }
    }
}
