public import Foundation

/// A Real-time developer notification, the decoded `data` of a Pub/Sub message.
public struct DeveloperNotification: Codable, Hashable, Sendable {
    /// Version of the notification format, initially `"1.0"`.
    public var version: String?
    /// Package name of the app.
    public var packageName: String?
    /// Event time in milliseconds since the epoch (a JSON string or number).
    public var eventTimeMillis: Int64String?
    /// Set for subscription events.
    public var subscriptionNotification: SubscriptionNotification?
    /// Set for one-time product events.
    public var oneTimeProductNotification: OneTimeProductNotification?
    /// Set for voided purchases.
    public var voidedPurchaseNotification: VoidedPurchaseNotification?
    /// Set for pending refund reviews; kept as raw JSON.
    public var pendingRefundReviewNotification: JSONValue?
    /// Set for test notifications from the Play Console.
    public var testNotification: TestNotification?

    /// Creates a `DeveloperNotification`; every field defaults to `nil`.
    public init(
        version: String? = nil,
        packageName: String? = nil,
        eventTimeMillis: Int64String? = nil,
        subscriptionNotification: SubscriptionNotification? = nil,
        oneTimeProductNotification: OneTimeProductNotification? = nil,
        voidedPurchaseNotification: VoidedPurchaseNotification? = nil,
        pendingRefundReviewNotification: JSONValue? = nil,
        testNotification: TestNotification? = nil
    ) {
        self.version = version
        self.packageName = packageName
        self.eventTimeMillis = eventTimeMillis
        self.subscriptionNotification = subscriptionNotification
        self.oneTimeProductNotification = oneTimeProductNotification
        self.voidedPurchaseNotification = voidedPurchaseNotification
        self.pendingRefundReviewNotification = pendingRefundReviewNotification
        self.testNotification = testNotification
    }

    /// `eventTimeMillis` as a `Date`; `nil` when absent.
    public var eventDate: Date? { eventTimeMillis?.dateFromMilliseconds }
}

/// A subscription event of a developer notification.
public struct SubscriptionNotification: Codable, Hashable, Sendable {
    /// Version of this notification, initially `"1.0"`.
    public var version: String?
    /// The kind of event.
    public var notificationType: NotificationType?
    /// Purchase token of the subscription.
    public var purchaseToken: String?
    /// Deprecated: product id of the subscription.
    public var subscriptionId: String?

    /// Creates a `SubscriptionNotification`; every field defaults to `nil`.
    public init(
        version: String? = nil,
        notificationType: NotificationType? = nil,
        purchaseToken: String? = nil,
        subscriptionId: String? = nil
    ) {
        self.version = version
        self.notificationType = notificationType
        self.purchaseToken = purchaseToken
        self.subscriptionId = subscriptionId
    }
}

extension SubscriptionNotification {
    /// Kind of a subscription notification. Open: unknown values decode and keep their raw value.
    public struct NotificationType: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The raw value Google sends.
        public let rawValue: Int
        /// Wraps any raw value, including ones this type does not name.
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// Recovered from account hold or resumed from pause.
        public static let recovered = Self(rawValue: 1)
        /// An active subscription renewed.
        public static let renewed = Self(rawValue: 2)
        /// Canceled voluntarily or involuntarily.
        public static let canceled = Self(rawValue: 3)
        /// A new subscription was purchased.
        public static let purchased = Self(rawValue: 4)
        /// Entered account hold.
        public static let onHold = Self(rawValue: 5)
        /// Entered grace period.
        public static let inGracePeriod = Self(rawValue: 6)
        /// The user restored a canceled, unexpired subscription.
        public static let restarted = Self(rawValue: 7)
        /// Deprecated: the user confirmed a price change.
        public static let priceChangeConfirmed = Self(rawValue: 8)
        /// The renewal time was extended.
        public static let deferred = Self(rawValue: 9)
        /// The subscription was paused.
        public static let paused = Self(rawValue: 10)
        /// The pause schedule changed.
        public static let pauseScheduleChanged = Self(rawValue: 11)
        /// Revoked before its expiry time.
        public static let revoked = Self(rawValue: 12)
        /// The subscription expired.
        public static let expired = Self(rawValue: 13)
        /// A price change of an item was updated.
        public static let priceChangeUpdated = Self(rawValue: 19)
        /// A pending transaction was canceled.
        public static let pendingPurchaseCanceled = Self(rawValue: 20)
        /// A price step-up consent was updated.
        public static let priceStepUpConsentUpdated = Self(rawValue: 22)
        /// The raw value as text.
        public var description: String { String(rawValue) }
    }
}

/// A one-time product event of a developer notification.
public struct OneTimeProductNotification: Codable, Hashable, Sendable {
    /// Version of this notification, initially `"1.0"`.
    public var version: String?
    /// The kind of event.
    public var notificationType: NotificationType?
    /// Purchase token of the purchase.
    public var purchaseToken: String?
    /// Product id of the purchased product.
    public var sku: String?

    /// Creates a `OneTimeProductNotification`; every field defaults to `nil`.
    public init(
        version: String? = nil,
        notificationType: NotificationType? = nil,
        purchaseToken: String? = nil,
        sku: String? = nil
    ) {
        self.version = version
        self.notificationType = notificationType
        self.purchaseToken = purchaseToken
        self.sku = sku
    }
}

extension OneTimeProductNotification {
    /// Kind of a one-time product notification. Open: unknown values decode and keep their raw value.
    public struct NotificationType: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The raw value Google sends.
        public let rawValue: Int
        /// Wraps any raw value, including ones this type does not name.
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// A one-time product was purchased.
        public static let purchased = Self(rawValue: 1)
        /// A pending one-time purchase was canceled.
        public static let canceled = Self(rawValue: 2)
        /// The raw value as text.
        public var description: String { String(rawValue) }
    }
}

/// A voided purchase event of a developer notification.
public struct VoidedPurchaseNotification: Codable, Hashable, Sendable {
    /// Purchase token of the voided purchase.
    public var purchaseToken: String?
    /// Order id of the voided transaction.
    public var orderId: String?
    /// Whether a subscription or a one-time product was voided.
    public var productType: ProductType?
    /// Whether the refund was full or quantity-based partial.
    public var refundType: RefundType?

    /// Creates a `VoidedPurchaseNotification`; every field defaults to `nil`.
    public init(
        purchaseToken: String? = nil,
        orderId: String? = nil,
        productType: ProductType? = nil,
        refundType: RefundType? = nil
    ) {
        self.purchaseToken = purchaseToken
        self.orderId = orderId
        self.productType = productType
        self.refundType = refundType
    }
}

extension VoidedPurchaseNotification {
    /// Product type of a voided purchase. Open: unknown values decode and keep their raw value.
    public struct ProductType: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The raw value Google sends.
        public let rawValue: Int
        /// Wraps any raw value, including ones this type does not name.
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// A subscription.
        public static let subscription = Self(rawValue: 1)
        /// A one-time product.
        public static let oneTime = Self(rawValue: 2)
        /// The raw value as text.
        public var description: String { String(rawValue) }
    }
}

extension VoidedPurchaseNotification {
    /// Refund type of a voided purchase. Open: unknown values decode and keep their raw value.
    public struct RefundType: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The raw value Google sends.
        public let rawValue: Int
        /// Wraps any raw value, including ones this type does not name.
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// The purchase was fully voided.
        public static let fullRefund = Self(rawValue: 1)
        /// Part of the quantity was voided.
        public static let quantityBasedPartialRefund = Self(rawValue: 2)
        /// The raw value as text.
        public var description: String { String(rawValue) }
    }
}

/// A test notification sent from the Play Console.
public struct TestNotification: Codable, Hashable, Sendable {
    /// Version of this notification, initially `"1.0"`.
    public var version: String?

    /// Creates a `TestNotification`; every field defaults to `nil`.
    public init(
        version: String? = nil
    ) {
        self.version = version
    }
}

extension SubscriptionNotification.NotificationType {
    /// Google's name without the `SUBSCRIPTION_` prefix (`RENEWED`), or the number for a type this
    /// library does not name.
    public var name: String {
        let names: [Int: String] = [
            1: "RECOVERED", 2: "RENEWED", 3: "CANCELED", 4: "PURCHASED", 5: "ON_HOLD", 6: "IN_GRACE_PERIOD",
            7: "RESTARTED", 8: "PRICE_CHANGE_CONFIRMED", 9: "DEFERRED", 10: "PAUSED", 11: "PAUSE_SCHEDULE_CHANGED",
            12: "REVOKED", 13: "EXPIRED", 19: "PRICE_CHANGE_UPDATED", 20: "PENDING_PURCHASE_CANCELED",
            22: "PRICE_STEP_UP_CONSENT_UPDATED",
        ]
        return names[rawValue] ?? String(rawValue)
    }
}

extension DeveloperNotification {
    /// What happened, in Google's words: `SUBSCRIPTION_RENEWED`, `ONE_TIME_PRODUCT_PURCHASED`,
    /// `VOIDED_PURCHASE`, `TEST`; `UNKNOWN` for a kind this library does not know.
    public var eventName: String {
        if let subscription = subscriptionNotification {
            return "SUBSCRIPTION_" + (subscription.notificationType?.name ?? "UNKNOWN")
        }
        if let product = oneTimeProductNotification {
            return product.notificationType == .canceled ? "ONE_TIME_PRODUCT_CANCELED" : "ONE_TIME_PRODUCT_PURCHASED"
        }
        if voidedPurchaseNotification != nil { return "VOIDED_PURCHASE" }
        if pendingRefundReviewNotification != nil { return "PENDING_REFUND_REVIEW" }
        if testNotification != nil { return "TEST" }
        return "UNKNOWN"
    }
}
