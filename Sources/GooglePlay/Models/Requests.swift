public import Foundation

/// Body of `purchases.products.acknowledge`.
public struct ProductPurchasesAcknowledgeRequest: Codable, Hashable, Sendable {
    /// Payload to attach to the purchase.
    public var developerPayload: String?

    /// Creates a `ProductPurchasesAcknowledgeRequest`; every field defaults to `nil`.
    public init(
        developerPayload: String? = nil
    ) {
        self.developerPayload = developerPayload
    }
}

/// Body of `purchases.subscriptions.acknowledge`.
public struct SubscriptionPurchasesAcknowledgeRequest: Codable, Hashable, Sendable {
    /// Payload to attach to the purchase.
    public var developerPayload: String?

    /// Creates a `SubscriptionPurchasesAcknowledgeRequest`; every field defaults to `nil`.
    public init(
        developerPayload: String? = nil
    ) {
        self.developerPayload = developerPayload
    }
}

/// Body of the v1 `purchases.subscriptions.defer`.
public struct SubscriptionPurchasesDeferRequest: Codable, Hashable, Sendable {
    /// The requested new expiry time.
    public var deferralInfo: SubscriptionDeferralInfo?

    /// Creates a `SubscriptionPurchasesDeferRequest`; every field defaults to `nil`.
    public init(
        deferralInfo: SubscriptionDeferralInfo? = nil
    ) {
        self.deferralInfo = deferralInfo
    }
}

/// Data to defer a v1 subscription to a later expiry time.
public struct SubscriptionDeferralInfo: Codable, Hashable, Sendable {
    /// Current expiry time in epoch millis; the deferral fails if it differs.
    public var expectedExpiryTimeMillis: Int64String?
    /// Desired new expiry time in epoch millis; must be later than the current one.
    public var desiredExpiryTimeMillis: Int64String?

    /// Creates a `SubscriptionDeferralInfo`; every field defaults to `nil`.
    public init(
        expectedExpiryTimeMillis: Int64String? = nil,
        desiredExpiryTimeMillis: Int64String? = nil
    ) {
        self.expectedExpiryTimeMillis = expectedExpiryTimeMillis
        self.desiredExpiryTimeMillis = desiredExpiryTimeMillis
    }

    /// `expectedExpiryTimeMillis` as a `Date`; `nil` when absent.
    public var expectedExpiryDate: Date? { expectedExpiryTimeMillis?.dateFromMilliseconds }

    /// `desiredExpiryTimeMillis` as a `Date`; `nil` when absent.
    public var desiredExpiryDate: Date? { desiredExpiryTimeMillis?.dateFromMilliseconds }
}

/// Response of the v1 `purchases.subscriptions.defer`.
public struct SubscriptionPurchasesDeferResponse: Codable, Hashable, Sendable {
    /// New expiry time in epoch millis.
    public var newExpiryTimeMillis: Int64String?

    /// Creates a `SubscriptionPurchasesDeferResponse`; every field defaults to `nil`.
    public init(
        newExpiryTimeMillis: Int64String? = nil
    ) {
        self.newExpiryTimeMillis = newExpiryTimeMillis
    }

    /// `newExpiryTimeMillis` as a `Date`; `nil` when absent.
    public var newExpiryDate: Date? { newExpiryTimeMillis?.dateFromMilliseconds }
}

/// Body of `purchases.subscriptionsv2.defer`.
public struct DeferSubscriptionPurchaseRequest: Codable, Hashable, Sendable {
    /// Details of the deferral.
    public var deferralContext: DeferralContext?

    /// Creates a `DeferSubscriptionPurchaseRequest`; every field defaults to `nil`.
    public init(
        deferralContext: DeferralContext? = nil
    ) {
        self.deferralContext = deferralContext
    }
}

/// Deferral details of `purchases.subscriptionsv2.defer`.
public struct DeferralContext: Codable, Hashable, Sendable {
    /// Etag from `subscriptionsv2.get`; the call fails if it is not the latest.
    public var etag: String?
    /// Duration to defer every item by, protobuf Duration format (for example `"86400s"`).
    public var deferDuration: String?
    /// When true, a dry run that does not change the subscription.
    public var validateOnly: Bool?

    /// Creates a `DeferralContext`; every field defaults to `nil`.
    public init(
        etag: String? = nil,
        deferDuration: String? = nil,
        validateOnly: Bool? = nil
    ) {
        self.etag = etag
        self.deferDuration = deferDuration
        self.validateOnly = validateOnly
    }
}

/// Response of `purchases.subscriptionsv2.defer`.
public struct DeferSubscriptionPurchaseResponse: Codable, Hashable, Sendable {
    /// New expiry time of each item.
    public var itemExpiryTimeDetails: [ItemExpiryTimeDetails]?

    /// Creates a `DeferSubscriptionPurchaseResponse`; every field defaults to `nil`.
    public init(
        itemExpiryTimeDetails: [ItemExpiryTimeDetails]? = nil
    ) {
        self.itemExpiryTimeDetails = itemExpiryTimeDetails
    }
}

/// Expiry time of one subscription item.
public struct ItemExpiryTimeDetails: Codable, Hashable, Sendable {
    /// Product id of the item.
    public var productId: String?
    /// RFC 3339 new expiry time of the item.
    public var expiryTime: String?

    /// Creates a `ItemExpiryTimeDetails`; every field defaults to `nil`.
    public init(
        productId: String? = nil,
        expiryTime: String? = nil
    ) {
        self.productId = productId
        self.expiryTime = expiryTime
    }

    /// `expiryTime` parsed as an RFC 3339 timestamp; `nil` when absent or malformed.
    public var expiryDate: Date? { expiryTime.flatMap(RFC3339.date(from:)) }
}

/// Body of `purchases.subscriptionsv2.revoke`.
public struct RevokeSubscriptionPurchaseRequest: Codable, Hashable, Sendable {
    /// How to revoke and refund; exactly one field is set.
    public var revocationContext: RevocationContext?

    /// Creates a `RevokeSubscriptionPurchaseRequest`; every field defaults to `nil`.
    public init(
        revocationContext: RevocationContext? = nil
    ) {
        self.revocationContext = revocationContext
    }
}

/// Refund type of a revocation; exactly one field is set.
public struct RevocationContext: Codable, Hashable, Sendable {
    /// Refund the full amount of the latest charge of each item.
    public var fullRefund: RevocationContextFullRefund?
    /// Refund prorated to the remaining time.
    public var proratedRefund: RevocationContextProratedRefund?
    /// Revoke and refund one item of a subscription with add-ons.
    public var itemBasedRefund: RevocationContextItemBasedRefund?

    /// Creates a `RevocationContext`; every field defaults to `nil`.
    public init(
        fullRefund: RevocationContextFullRefund? = nil,
        proratedRefund: RevocationContextProratedRefund? = nil,
        itemBasedRefund: RevocationContextItemBasedRefund? = nil
    ) {
        self.fullRefund = fullRefund
        self.proratedRefund = proratedRefund
        self.itemBasedRefund = itemBasedRefund
    }

    /// A full-refund revocation context.
    public static let fullRefund = Self(fullRefund: RevocationContextFullRefund())
    /// A prorated-refund revocation context.
    public static let proratedRefund = Self(proratedRefund: RevocationContextProratedRefund())
    /// An item-based revocation context for `productId`.
    public static func itemBasedRefund(productId: String) -> Self {
        Self(itemBasedRefund: RevocationContextItemBasedRefund(productId: productId))
    }
}

/// Selects a full refund (an empty object).
public struct RevocationContextFullRefund: Codable, Hashable, Sendable {
    /// Creates a `RevocationContextFullRefund`; every field defaults to `nil`.
    public init() {}
}

/// Selects a prorated refund (an empty object).
public struct RevocationContextProratedRefund: Codable, Hashable, Sendable {
    /// Creates a `RevocationContextProratedRefund`; every field defaults to `nil`.
    public init() {}
}

/// Selects the item to revoke in a subscription with add-ons.
public struct RevocationContextItemBasedRefund: Codable, Hashable, Sendable {
    /// Product id of the item to revoke.
    public var productId: String?

    /// Creates a `RevocationContextItemBasedRefund`; every field defaults to `nil`.
    public init(
        productId: String? = nil
    ) {
        self.productId = productId
    }
}

/// Response of `purchases.subscriptionsv2.revoke` (an empty object).
public struct RevokeSubscriptionPurchaseResponse: Codable, Hashable, Sendable {
    /// Creates a `RevokeSubscriptionPurchaseResponse`; every field defaults to `nil`.
    public init() {}
}

/// Body of `purchases.subscriptionsv2.cancel`.
public struct CancelSubscriptionPurchaseRequest: Codable, Hashable, Sendable {
    /// How to cancel the subscription.
    public var cancellationContext: CancellationContext?

    /// Creates a `CancelSubscriptionPurchaseRequest`; every field defaults to `nil`.
    public init(
        cancellationContext: CancellationContext? = nil
    ) {
        self.cancellationContext = cancellationContext
    }
}

/// Cancellation details of `purchases.subscriptionsv2.cancel`.
public struct CancellationContext: Codable, Hashable, Sendable {
    /// The type of cancellation.
    public var cancellationType: CancellationType?

    /// Creates a `CancellationContext`; every field defaults to `nil`.
    public init(
        cancellationType: CancellationType? = nil
    ) {
        self.cancellationType = cancellationType
    }
}

extension CancellationContext {
    /// Type of a developer-requested cancellation. Open: unknown values decode and keep their raw value.
    public struct CancellationType: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The raw value Google sends.
        public let rawValue: String
        /// Wraps any raw value, including ones this type does not name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Unspecified.
        public static let unspecified = Self(rawValue: "CANCELLATION_TYPE_UNSPECIFIED")
        /// Requested by the user; only stops renewals and can be restored.
        public static let userRequestedStopRenewals = Self(rawValue: "USER_REQUESTED_STOP_RENEWALS")
        /// Requested by the developer; stops payments and cannot be restored.
        public static let developerRequestedStopPayments = Self(rawValue: "DEVELOPER_REQUESTED_STOP_PAYMENTS")
        /// The raw value as text.
        public var description: String { rawValue }
    }
}

/// Response of `purchases.subscriptionsv2.cancel` (an empty object).
public struct CancelSubscriptionPurchaseResponse: Codable, Hashable, Sendable {
    /// Creates a `CancelSubscriptionPurchaseResponse`; every field defaults to `nil`.
    public init() {}
}
