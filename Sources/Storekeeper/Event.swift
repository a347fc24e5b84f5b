public import Foundation

/// What kind of change an event describes (docs/events.md has the reference table).
///
/// Open like the stores' enums: a type this build does not know (written by a newer one) keeps its
/// raw value. Adding a type is one constant here and one row in ``all`` and in docs/events.md.
public struct EventType: StringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A purchase the server had not seen: a new subscription or a one-time purchase.
    public static let purchaseStarted = Self("purchase.started")
    /// A subscription's paid period moved on (a renewal, or a resubscription after it ended).
    public static let subscriptionRenewed = Self("subscription.renewed")
    /// A subscription's paid period was extended without a payment: the App Store's renewal date
    /// extension (`RENEWAL_EXTENDED`), Google's deferred billing.
    public static let subscriptionRenewalExtended = Self("subscription.renewal_extended")
    /// The subscription changed product (an upgrade, downgrade or crossgrade), in place (App Store)
    /// or through a new purchase replacing the old one (Google Play).
    public static let subscriptionProductChanged = Self("subscription.product_changed")
    public static let subscriptionAutoRenewDisabled = Self("subscription.auto_renew_disabled")
    public static let subscriptionAutoRenewEnabled = Self("subscription.auto_renew_enabled")
    /// A renewal failed and the store retries without access (App Store billing retry).
    public static let subscriptionBillingRetry = Self("subscription.billing_retry")
    /// A renewal failed and the store keeps access open for a while.
    public static let subscriptionGracePeriod = Self("subscription.grace_period")
    /// A renewal failed and the store retries without access (Google Play account hold).
    public static let subscriptionOnHold = Self("subscription.on_hold")
    public static let subscriptionPaused = Self("subscription.paused")
    /// Back to active after billing retry, grace, hold or a pause.
    public static let subscriptionRecovered = Self("subscription.recovered")
    public static let subscriptionExpired = Self("subscription.expired")
    /// The store took the purchase back without a refund the server saw (e.g. family sharing ended).
    public static let purchaseRevoked = Self("purchase.revoked")
    /// A billing event was refunded, in full or in part (`refundedShare`).
    public static let purchaseRefunded = Self("purchase.refunded")
    /// The store reversed a refund: what it took is restored.
    public static let purchaseRefundReversed = Self("purchase.refund_reversed")
    /// The purchase moved from one customer to another under the ownership policy.
    public static let purchaseTransferred = Self("purchase.transferred")
    public static let entitlementGranted = Self("entitlement.granted")
    public static let entitlementRevoked = Self("entitlement.revoked")
    public static let balanceChanged = Self("balance.changed")
    /// A store's refund consumption request was settled: answered (with the values sent), skipped
    /// (and why), refused by the store, or left unanswered past its window.
    public static let refundRequestSettled = Self("refund_request.settled")

    /// Every type this build produces: what a filter may name.
    public static let all: [EventType] = [
        .purchaseStarted, .subscriptionRenewed, .subscriptionRenewalExtended, .subscriptionProductChanged,
        .subscriptionAutoRenewDisabled, .subscriptionAutoRenewEnabled, .subscriptionBillingRetry,
        .subscriptionGracePeriod, .subscriptionOnHold, .subscriptionPaused, .subscriptionRecovered,
        .subscriptionExpired, .purchaseRevoked, .purchaseRefunded, .purchaseRefundReversed, .purchaseTransferred,
        .entitlementGranted, .entitlementRevoked, .balanceChanged, .refundRequestSettled,
    ]

    /// Whether this build produces the type.
    public var isKnown: Bool { Self.all.contains(self) }
}

/// One change as the app's backend is told it: the payload of the feed and of webhooks.
public struct Event: Sendable, Hashable, Codable {
    /// Stable across redeliveries: the receiver drops what it has seen by this id.
    public var id: UUID
    public var type: EventType
    /// When the server recorded the change.
    public var occurredAt: Date
    /// The customer the purchase belongs to; nil while nobody has claimed it.
    public var customerID: CustomerID?
    public var store: Store?
    public var app: AppID?
    public var environment: PurchaseEnvironment?
    public var purchaseID: String?
    public var productID: String?
    /// What this type says beyond the purchase (states, amounts, …).
    public var details: EventDetails
    /// The customer's entitlements after the change (empty without a customer).
    public var entitlements: [EntitlementView]

    public init(
        id: UUID, type: EventType, occurredAt: Date, customerID: CustomerID?, store: Store? = nil, app: AppID? = nil,
        environment: PurchaseEnvironment? = nil, purchaseID: String? = nil, productID: String? = nil,
        details: EventDetails = EventDetails(), entitlements: [EntitlementView] = []
    ) {
        self.id = id
        self.type = type
        self.occurredAt = occurredAt
        self.customerID = customerID
        self.store = store
        self.app = app
        self.environment = environment
        self.purchaseID = purchaseID
        self.productID = productID
        self.details = details
        self.entitlements = entitlements
    }

    /// What orders delivery: a customer's events are delivered one after another; a purchase
    /// nobody claimed yet is ordered on its own.
    public var orderingKey: String {
        if let customerID { return "customer:\(customerID.rawValue)" }
        if let store, let purchaseID { return "purchase:\(store.rawValue):\(purchaseID)" }
        return "event:\(id.uuidString.lowercased())"
    }
}

/// The parts of an event that only some types carry; absent fields are left out of the JSON.
public struct EventDetails: Sendable, Hashable, Codable {
    public var state: SubscriptionState?
    public var previousState: SubscriptionState?
    public var expiresAt: Date?
    public var autoRenew: Bool?
    /// A Google Play subscription's lifecycle events: its base plan (``Purchase/basePlanID``).
    public var basePlanID: String?
    /// `subscription.product_changed`: the product before, and on Google Play its base plan (a
    /// change of base plan within one product is a change of product too).
    public var previousProductID: String?
    public var previousBasePlanID: String?
    /// `subscription.product_changed` on Google Play: the purchase replaced.
    public var replacesPurchaseID: String?
    /// `purchase.refunded`, `purchase.refund_reversed`: the billing event (Apple transactionId,
    /// Google orderId).
    public var transactionID: String?
    /// `purchase.refunded`: the refunded share, 0...1 (1 for a full refund).
    public var refundedShare: Double?
    /// `purchase.transferred`: the customers it moved between (the event's customer is `toCustomer`).
    public var fromCustomerID: CustomerID?
    public var toCustomerID: CustomerID?
    /// `entitlement.*`: the entitlement.
    public var entitlement: String?
    /// `balance.changed`: the balance, the change and the balance after it.
    public var balance: String?
    public var amount: Int?
    public var balanceAfter: Int?
    /// `balance.changed`: purchase, refund_adjustment, debit or transfer; `refund_request.settled`:
    /// why nothing was sent (`no-consent`, …) or the store's refusal.
    public var reason: String?
    /// `refund_request.settled`: how it was settled (`sent`, `skipped`, `failed`, `expired`) and the
    /// values sent, when sent.
    public var refundRequestStatus: RefundRequestStatus?
    public var consumptionAnswer: ConsumptionAnswer?

    public init(
        state: SubscriptionState? = nil, previousState: SubscriptionState? = nil, expiresAt: Date? = nil,
        autoRenew: Bool? = nil, previousProductID: String? = nil, replacesPurchaseID: String? = nil,
        transactionID: String? = nil, refundedShare: Double? = nil, fromCustomerID: CustomerID? = nil,
        toCustomerID: CustomerID? = nil, entitlement: String? = nil, balance: String? = nil, amount: Int? = nil,
        balanceAfter: Int? = nil, reason: String? = nil
    ) {
        self.state = state
        self.previousState = previousState
        self.expiresAt = expiresAt
        self.autoRenew = autoRenew
        self.previousProductID = previousProductID
        self.replacesPurchaseID = replacesPurchaseID
        self.transactionID = transactionID
        self.refundedShare = refundedShare
        self.fromCustomerID = fromCustomerID
        self.toCustomerID = toCustomerID
        self.entitlement = entitlement
        self.balance = balance
        self.amount = amount
        self.balanceAfter = balanceAfter
        self.reason = reason
    }
}

/// An event as the outbox keeps it: its position in the feed (nil until sequenced), the columns
/// it is filtered and ordered by, and the exact JSON body delivered (signed over, so kept as bytes).
public struct StoredEvent: Sendable, Hashable {
    /// The global cursor: events are read in this order; nil until the sequencer numbered it.
    public var position: Int?
    public var id: UUID
    public var type: EventType
    public var customerID: CustomerID?
    public var environment: PurchaseEnvironment?
    public var orderingKey: String
    public var occurredAt: Date
    public var body: Data

    public init(
        position: Int? = nil, id: UUID, type: EventType, customerID: CustomerID?, environment: PurchaseEnvironment?,
        orderingKey: String, occurredAt: Date, body: Data
    ) {
        self.position = position
        self.id = id
        self.type = type
        self.customerID = customerID
        self.environment = environment
        self.orderingKey = orderingKey
        self.occurredAt = occurredAt
        self.body = body
    }
}
