public import Foundation

/// A user's subscription purchase (`purchases.subscriptionsv2.get`).
public struct SubscriptionPurchaseV2: Codable, Hashable, Sendable {
    /// Resource kind, `androidpublisher#subscriptionPurchaseV2`.
    public var kind: String?
    /// ISO 3166-1 alpha-2 billing region of the user when the subscription was granted.
    public var regionCode: String?
    /// Item-level info; all items are either auto-renewing or prepaid.
    public var lineItems: [SubscriptionPurchaseLineItem]?
    /// RFC 3339 time the subscription was granted; not set for pending subscriptions.
    public var startTime: String?
    /// Current state of the subscription.
    public var subscriptionState: SubscriptionState?
    /// Latest order id of the purchase. No longer a field of `SubscriptionPurchaseV2` in Google's
    /// discovery document: it was replaced by `lineItems[].latestSuccessfulOrderId`, which current
    /// answers carry instead. Kept only so an older answer that still sends it decodes; read it as
    /// a fallback after `latestSuccessfulOrderId`, and don't send it.
    public var latestOrderId: String?
    /// Purchase token of the old subscription this one replaces (re-signup, upgrade, downgrade, conversion, top-up).
    public var linkedPurchaseToken: String?
    /// Present only in `SUBSCRIPTION_STATE_PAUSED`.
    public var pausedStateContext: PausedStateContext?
    /// Present only in `SUBSCRIPTION_STATE_CANCELED` or `SUBSCRIPTION_STATE_EXPIRED`.
    public var canceledStateContext: CanceledStateContext?
    /// Present only in `SUBSCRIPTION_STATE_IN_GRACE_PERIOD`.
    public var inGracePeriodStateContext: InGracePeriodStateContext?
    /// Present only in `SUBSCRIPTION_STATE_ON_HOLD`.
    public var onHoldStateContext: OnHoldStateContext?
    /// Present only if this is a test purchase.
    public var testPurchase: TestPurchase?
    /// Acknowledgement state of the subscription.
    public var acknowledgementState: AcknowledgementState?
    /// User account identifiers in the third-party service.
    public var externalAccountIdentifiers: ExternalAccountIdentifiers?
    /// User profile for purchases made with Subscribe with Google.
    public var subscribeWithGoogleInfo: SubscribeWithGoogleInfo?
    /// Context of a purchase made outside the app (for example, in the Play Store).
    public var outOfAppPurchaseContext: OutOfAppPurchaseContext?
    /// Entity tag of the current subscription state; required by `subscriptionsv2.defer`.
    public var etag: String?

    /// Creates a `SubscriptionPurchaseV2`; every field defaults to `nil`.
    public init(
        kind: String? = nil,
        regionCode: String? = nil,
        lineItems: [SubscriptionPurchaseLineItem]? = nil,
        startTime: String? = nil,
        subscriptionState: SubscriptionState? = nil,
        latestOrderId: String? = nil,
        linkedPurchaseToken: String? = nil,
        pausedStateContext: PausedStateContext? = nil,
        canceledStateContext: CanceledStateContext? = nil,
        inGracePeriodStateContext: InGracePeriodStateContext? = nil,
        onHoldStateContext: OnHoldStateContext? = nil,
        testPurchase: TestPurchase? = nil,
        acknowledgementState: AcknowledgementState? = nil,
        externalAccountIdentifiers: ExternalAccountIdentifiers? = nil,
        subscribeWithGoogleInfo: SubscribeWithGoogleInfo? = nil,
        outOfAppPurchaseContext: OutOfAppPurchaseContext? = nil,
        etag: String? = nil
    ) {
        self.kind = kind
        self.regionCode = regionCode
        self.lineItems = lineItems
        self.startTime = startTime
        self.subscriptionState = subscriptionState
        self.latestOrderId = latestOrderId
        self.linkedPurchaseToken = linkedPurchaseToken
        self.pausedStateContext = pausedStateContext
        self.canceledStateContext = canceledStateContext
        self.inGracePeriodStateContext = inGracePeriodStateContext
        self.onHoldStateContext = onHoldStateContext
        self.testPurchase = testPurchase
        self.acknowledgementState = acknowledgementState
        self.externalAccountIdentifiers = externalAccountIdentifiers
        self.subscribeWithGoogleInfo = subscribeWithGoogleInfo
        self.outOfAppPurchaseContext = outOfAppPurchaseContext
        self.etag = etag
    }

    /// `startTime` parsed as an RFC 3339 timestamp; `nil` when absent or malformed.
    public var startDate: Date? { startTime.flatMap(RFC3339.date(from:)) }
}

/// State of a subscription (`SubscriptionPurchaseV2.subscriptionState`). Open: unknown values decode and keep their raw value.
public struct SubscriptionState: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The raw value Google sends.
    public let rawValue: String
    /// Wraps any raw value, including ones this type does not name.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Unspecified state.
    public static let unspecified = Self(rawValue: "SUBSCRIPTION_STATE_UNSPECIFIED")
    /// Created but awaiting payment during signup.
    public static let pending = Self(rawValue: "SUBSCRIPTION_STATE_PENDING")
    /// Active: an auto-renewing item is enabled and unexpired, or a prepaid item is unexpired.
    public static let active = Self(rawValue: "SUBSCRIPTION_STATE_ACTIVE")
    /// Paused (auto-renewing plans only).
    public static let paused = Self(rawValue: "SUBSCRIPTION_STATE_PAUSED")
    /// In grace period after a failed renewal (auto-renewing plans only).
    public static let inGracePeriod = Self(rawValue: "SUBSCRIPTION_STATE_IN_GRACE_PERIOD")
    /// On hold / suspended (auto-renewing plans only).
    public static let onHold = Self(rawValue: "SUBSCRIPTION_STATE_ON_HOLD")
    /// Canceled but not yet expired (auto-renewing plans only).
    public static let canceled = Self(rawValue: "SUBSCRIPTION_STATE_CANCELED")
    /// Expired: every item's expiry time is in the past.
    public static let expired = Self(rawValue: "SUBSCRIPTION_STATE_EXPIRED")
    /// The pending transaction was canceled.
    public static let pendingPurchaseCanceled = Self(rawValue: "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED")
    /// The raw value as text.
    public var description: String { rawValue }
}

/// Acknowledgement state of a v2 subscription or one-time purchase. Open: unknown values decode and keep their raw value.
public struct AcknowledgementState: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The raw value Google sends.
    public let rawValue: String
    /// Wraps any raw value, including ones this type does not name.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Unspecified acknowledgement state.
    public static let unspecified = Self(rawValue: "ACKNOWLEDGEMENT_STATE_UNSPECIFIED")
    /// Not acknowledged yet.
    public static let pending = Self(rawValue: "ACKNOWLEDGEMENT_STATE_PENDING")
    /// Acknowledged.
    public static let acknowledged = Self(rawValue: "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED")
    /// The raw value as text.
    public var description: String { rawValue }
}
