public import Foundation

/// What a store said about one purchase at one moment, in store-neutral terms. Each store's
/// mapping produces these; ``Purchase/applying(_:)`` is the only way they change a purchase.
///
/// A fact is a whole snapshot of the purchase as of ``observedAt`` (Apple: the payload's
/// `signedDate`; Google: when the state was fetched from the API), so applying only newer facts
/// makes the result independent of delivery order and repetition.
public struct PurchaseFact: Sendable, Hashable, Codable {
    public var key: PurchaseKey
    /// The app the store says the purchase belongs to (every fact knows it).
    public var app: AppID
    public var productID: String
    /// Google Play: the subscription's base plan (``Purchase/basePlanID``).
    public var basePlanID: String?
    public var kind: ProductKind
    public var environment: PurchaseEnvironment
    public var state: SubscriptionState
    public var expiresAt: Date?
    public var gracePeriodExpiresAt: Date?
    public var autoRenew: Bool?
    public var ownership: Ownership
    public var quantity: Int
    public var accountHint: String?
    public var replaces: PurchaseKey?
    /// The App Store's `appTransactionId` of the transaction, when it carries one.
    public var appTransactionID: String?
    /// The offers the store reports with this fact (App Store subscriptions).
    public var offers: SubscriptionOffers?
    public var observedAt: Date
    public var needsAcknowledgement: Bool
    /// Billing events the fact reports (each one is merged, never removed).
    public var transactions: [TransactionFact]
    /// The store shows a revoked purchase as expired (Google's API answers
    /// `SUBSCRIPTION_STATE_EXPIRED` for a revoked subscription, and only the revocation's own
    /// notification says more): an `expired` fact then keeps a purchase known to be revoked revoked.
    public var expiredMayMeanRevoked = false

    public init(
        key: PurchaseKey, app: AppID, productID: String, kind: ProductKind, environment: PurchaseEnvironment,
        state: SubscriptionState,
        expiresAt: Date? = nil, gracePeriodExpiresAt: Date? = nil, autoRenew: Bool? = nil,
        ownership: Ownership = .purchased, quantity: Int = 1, accountHint: String? = nil, replaces: PurchaseKey? = nil,
        observedAt: Date, needsAcknowledgement: Bool = false, transactions: [TransactionFact] = []
    ) {
        self.key = key
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
        self.transactions = transactions
    }
}

/// One billing event as a store reported it (Apple `transactionId`, Google `orderId`).
public struct TransactionFact: Sendable, Hashable, Codable {
    public var id: String
    public var productID: String
    public var purchasedAt: Date
    public var quantity: Int
    /// When it was refunded or revoked, if it was.
    public var revokedAt: Date?
    /// The refunded share, 0...1 (1 for a full refund; less for a prorated or partial one).
    public var refundedFraction: Double
    /// When the store said so; the newer word about a transaction wins (a refund can be reversed).
    public var observedAt: Date
    /// What the store says it cost, when it says so (nil: not reported).
    public var price: Price?
    /// The offer it was bought under, when the store says so (nil: none reported).
    public var offer: BillingOffer?

    public init(
        id: String, productID: String, purchasedAt: Date, quantity: Int = 1, revokedAt: Date? = nil,
        refundedFraction: Double = 0, observedAt: Date, price: Price? = nil, offer: BillingOffer? = nil
    ) {
        self.id = id
        self.productID = productID
        self.purchasedAt = purchasedAt
        self.quantity = quantity
        self.revokedAt = revokedAt
        self.refundedFraction = refundedFraction
        self.observedAt = observedAt
        self.price = price
        self.offer = offer
    }
}

/// Where the word that changed a purchase came from.
public enum ChangeSource: String, Sendable, Hashable, Codable, CaseIterable {
    /// A store notification (delivered, or found in the store's history by the catch-up).
    case notification
    /// A purchase the app presented for a customer.
    case submission
    /// The catch-up's sweep of a store list (Google's voided purchases).
    case catchUp = "catch-up"
    /// The purchase's state asked of its store (an overdue subscription).
    case refresh
}

/// What the store said caused a change, kept with each state change in the history.
public struct ChangeCause: Sendable, Hashable, Codable {
    public var source: ChangeSource
    /// The store's word for it (`DID_RENEW/BILLING_RECOVERY`, `SUBSCRIPTION_RENEWED`, …).
    public var event: String?
    /// The notification or request it came from (notificationUUID, Pub/Sub messageId, …).
    public var reference: String?

    public init(source: ChangeSource, event: String? = nil, reference: String? = nil) {
        self.source = source
        self.event = event
        self.reference = reference
    }
}

/// One normalized state change of a purchase, with its cause.
public struct StateChange: Sendable, Hashable, Codable {
    public var key: PurchaseKey
    public var from: SubscriptionState?
    public var to: SubscriptionState
    public var expiresAt: Date?
    public var observedAt: Date
    public var cause: ChangeCause

    public init(
        key: PurchaseKey, from: SubscriptionState?, to: SubscriptionState, expiresAt: Date?, observedAt: Date,
        cause: ChangeCause
    ) {
        self.key = key
        self.from = from
        self.to = to
        self.expiresAt = expiresAt
        self.observedAt = observedAt
        self.cause = cause
    }
}
