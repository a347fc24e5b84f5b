public import Foundation

/// A one-time product purchase (v1 `purchases.products.get`).
public struct ProductPurchase: Codable, Hashable, Sendable {
    /// Resource kind, `androidpublisher#productPurchase`.
    public var kind: String?
    /// Purchase time in milliseconds since the epoch.
    public var purchaseTimeMillis: Int64String?
    /// Purchase state of the order.
    public var purchaseState: PurchaseState?
    /// Consumption state of the product.
    public var consumptionState: ConsumptionState?
    /// Developer-specified supplemental information.
    public var developerPayload: String?
    /// Order id of the purchase.
    public var orderId: String?
    /// Set only when not bought through the standard billing flow.
    public var purchaseType: PurchaseType?
    /// Acknowledgement state of the product.
    public var acknowledgementState: AcknowledgementState?
    /// Purchase token identifying this purchase; may be absent.
    public var purchaseToken: String?
    /// Product SKU; may be absent.
    public var productId: String?
    /// Quantity purchased; absent means 1.
    public var quantity: Int?
    /// Obfuscated account id set with `setObfuscatedAccountId`.
    public var obfuscatedExternalAccountId: String?
    /// Obfuscated profile id set with `setObfuscatedProfileId`.
    public var obfuscatedExternalProfileId: String?
    /// ISO 3166-1 alpha-2 billing region when the product was granted.
    public var regionCode: String?
    /// Quantity not yet refunded (reflects quantity-based partial and full refunds).
    public var refundableQuantity: Int?

    /// Creates a `ProductPurchase`; every field defaults to `nil`.
    public init(
        kind: String? = nil,
        purchaseTimeMillis: Int64String? = nil,
        purchaseState: PurchaseState? = nil,
        consumptionState: ConsumptionState? = nil,
        developerPayload: String? = nil,
        orderId: String? = nil,
        purchaseType: PurchaseType? = nil,
        acknowledgementState: AcknowledgementState? = nil,
        purchaseToken: String? = nil,
        productId: String? = nil,
        quantity: Int? = nil,
        obfuscatedExternalAccountId: String? = nil,
        obfuscatedExternalProfileId: String? = nil,
        regionCode: String? = nil,
        refundableQuantity: Int? = nil
    ) {
        self.kind = kind
        self.purchaseTimeMillis = purchaseTimeMillis
        self.purchaseState = purchaseState
        self.consumptionState = consumptionState
        self.developerPayload = developerPayload
        self.orderId = orderId
        self.purchaseType = purchaseType
        self.acknowledgementState = acknowledgementState
        self.purchaseToken = purchaseToken
        self.productId = productId
        self.quantity = quantity
        self.obfuscatedExternalAccountId = obfuscatedExternalAccountId
        self.obfuscatedExternalProfileId = obfuscatedExternalProfileId
        self.regionCode = regionCode
        self.refundableQuantity = refundableQuantity
    }

    /// `purchaseTimeMillis` as a `Date`; `nil` when absent.
    public var purchaseDate: Date? { purchaseTimeMillis?.dateFromMilliseconds }
}

extension ProductPurchase {
    /// Purchase state of a v1 product purchase. Open: unknown values decode and keep their raw value.
    public struct PurchaseState: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The raw value Google sends.
        public let rawValue: Int
        /// Wraps any raw value, including ones this type does not name.
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// Purchased.
        public static let purchased = Self(rawValue: 0)
        /// Canceled.
        public static let canceled = Self(rawValue: 1)
        /// Pending.
        public static let pending = Self(rawValue: 2)
        /// The raw value as text.
        public var description: String { String(rawValue) }
    }
}

extension ProductPurchase {
    /// Consumption state of a v1 product purchase. Open: unknown values decode and keep their raw value.
    public struct ConsumptionState: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The raw value Google sends.
        public let rawValue: Int
        /// Wraps any raw value, including ones this type does not name.
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// Yet to be consumed.
        public static let yetToBeConsumed = Self(rawValue: 0)
        /// Consumed.
        public static let consumed = Self(rawValue: 1)
        /// The raw value as text.
        public var description: String { String(rawValue) }
    }
}

extension ProductPurchase {
    /// How a v1 product was bought outside the standard flow. Open: unknown values decode and keep their raw value.
    public struct PurchaseType: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The raw value Google sends.
        public let rawValue: Int
        /// Wraps any raw value, including ones this type does not name.
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// Test purchase from a license testing account.
        public static let test = Self(rawValue: 0)
        /// Bought with a promo code (not Play Points).
        public static let promo = Self(rawValue: 1)
        /// Rewarded, for example by watching a video ad.
        public static let rewarded = Self(rawValue: 2)
        /// The raw value as text.
        public var description: String { String(rawValue) }
    }
}

extension ProductPurchase {
    /// Acknowledgement state of a v1 product purchase. Open: unknown values decode and keep their raw value.
    public struct AcknowledgementState: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The raw value Google sends.
        public let rawValue: Int
        /// Wraps any raw value, including ones this type does not name.
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// Yet to be acknowledged.
        public static let yetToBeAcknowledged = Self(rawValue: 0)
        /// Acknowledged.
        public static let acknowledged = Self(rawValue: 1)
        /// The raw value as text.
        public var description: String { String(rawValue) }
    }
}
