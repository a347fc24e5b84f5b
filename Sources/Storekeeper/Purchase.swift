public import Foundation

/// How the customer came to own a purchase.
public enum Ownership: String, Sendable, Hashable, Codable {
    case purchased
    /// Shared by a family member (App Store Family Sharing); revoked when the purchaser stops sharing.
    case familyShared = "family_shared"
}

/// One store-side thing a customer owns (DESIGN.md, "Purchase"), as last observed.
public struct Purchase: Sendable, Hashable, Codable {
    public var key: PurchaseKey
    /// The customer it is linked to; nil while nobody has claimed it.
    public var customerID: CustomerID?
    /// The app it belongs to; nil only for a purchase stored before apps were recorded and not
    /// yet backfilled (see ``StorageTransaction/assignApp(_:toPurchasesOf:)``): store calls for it
    /// are refused until a fact names its app.
    public var app: AppID?
    public var productID: String
    /// Google Play: the base plan of the subscription's product it was bought on
    /// (`offerDetails.basePlanId`: a monthly and a yearly plan of one product, say). Nil on the App
    /// Store, whose products have none, and for a one-time product.
    public var basePlanID: String?
    public var kind: ProductKind
    public var environment: PurchaseEnvironment
    /// The normalized state. One-time purchases use `active` (owned), `pending` and `revoked`.
    public var state: SubscriptionState
    public var expiresAt: Date?
    public var gracePeriodExpiresAt: Date?
    public var autoRenew: Bool?
    public var ownership: Ownership
    public var quantity: Int
    /// The customer's id as the store knows it (`appAccountToken` / `obfuscatedExternalAccountId`),
    /// used to link a purchase whose customer was unknown when it arrived.
    public var accountHint: String?
    /// The purchase this one replaced (Google: `linkedPurchaseToken`).
    public var replaces: PurchaseKey?
    /// The App Store's id of the Apple Account's download of the app (`appTransactionId`): links a
    /// purchase without an account token (a family member's, one made outside the app) to the
    /// customer who submitted that app transaction.
    public var appTransactionID: String?
    /// The offers its store reports (App Store subscriptions); nil when it reports none.
    public var offers: SubscriptionOffers?
    /// When the facts now applied were true: the ordering key (DESIGN.md, "Ordering").
    public var observedAt: Date
    /// Whether the store still waits for an acknowledgement (Google: refunded after 3 days).
    public var needsAcknowledgement: Bool

    public init(
        key: PurchaseKey, customerID: CustomerID? = nil, app: AppID?, productID: String, kind: ProductKind,
        environment: PurchaseEnvironment, state: SubscriptionState, expiresAt: Date? = nil,
        gracePeriodExpiresAt: Date? = nil,
        autoRenew: Bool? = nil, ownership: Ownership = .purchased, quantity: Int = 1, accountHint: String? = nil,
        replaces: PurchaseKey? = nil, observedAt: Date, needsAcknowledgement: Bool = false
    ) {
        self.key = key
        self.customerID = customerID
        self.app = app
        self.productID = productID
        self.kind = kind
        self.environment = environment
        self.state = state
        self.expiresAt = expiresAt
        self.gracePeriodExpiresAt = gracePeriodExpiresAt
        self.autoRenew = autoRenew
        self.ownership = ownership
        self.quantity = quantity
        self.accountHint = accountHint
        self.replaces = replaces
        self.observedAt = observedAt
        self.needsAcknowledgement = needsAcknowledgement
    }

    /// Whether the purchase grants access at `now`, decided against `now` every time.
    public func grantsAccess(at now: Date) -> Bool {
        switch kind {
        case .subscription:
            return subscriptionAccess.grantsAccess(at: now)
        case .nonConsumable, .consumable, .nonRenewingSubscription:
            guard state == .active else { return false }
            guard let expiresAt else { return true }
            return now < expiresAt
        }
    }

    /// Until when access lasts, if granted at `now` (nil for a one-time purchase owned for good).
    public func accessEnds(at now: Date) -> Date? {
        kind == .subscription ? subscriptionAccess.accessEnds(at: now) : (grantsAccess(at: now) ? expiresAt : nil)
    }

    /// The app with its store, when recorded.
    public var storeApp: StoreApp? { app.map { StoreApp(key.store, $0) } }

    var subscriptionAccess: SubscriptionAccess {
        SubscriptionAccess(state: state, expiresAt: expiresAt, gracePeriodExpiresAt: gracePeriodExpiresAt)
    }
}
