public import Foundation

/// A one-time product purchase (`purchases.productsv2.getproductpurchasev2`).
public struct ProductPurchaseV2: Codable, Hashable, Sendable {
    /// Item-level info of the purchase.
    public var productLineItem: [ProductLineItem]?
    /// Resource kind, `androidpublisher#productPurchaseV2`.
    public var kind: String?
    /// Purchase state of the purchase.
    public var purchaseStateContext: PurchaseStateContext?
    /// Set only for test purchases.
    public var testPurchaseContext: TestPurchaseContext?
    /// Order id of the purchase; absent when there is no order.
    public var orderId: String?
    /// Obfuscated account id set with `setObfuscatedAccountId`.
    public var obfuscatedExternalAccountId: String?
    /// Obfuscated profile id set with `setObfuscatedProfileId`.
    public var obfuscatedExternalProfileId: String?
    /// ISO 3166-1 alpha-2 billing region when the product was granted.
    public var regionCode: String?
    /// RFC 3339 time the purchase became PURCHASED.
    public var purchaseCompletionTime: String?
    /// Acknowledgement state of the purchase.
    public var acknowledgementState: AcknowledgementState?

    /// Creates a `ProductPurchaseV2`; every field defaults to `nil`.
    public init(
        productLineItem: [ProductLineItem]? = nil,
        kind: String? = nil,
        purchaseStateContext: PurchaseStateContext? = nil,
        testPurchaseContext: TestPurchaseContext? = nil,
        orderId: String? = nil,
        obfuscatedExternalAccountId: String? = nil,
        obfuscatedExternalProfileId: String? = nil,
        regionCode: String? = nil,
        purchaseCompletionTime: String? = nil,
        acknowledgementState: AcknowledgementState? = nil
    ) {
        self.productLineItem = productLineItem
        self.kind = kind
        self.purchaseStateContext = purchaseStateContext
        self.testPurchaseContext = testPurchaseContext
        self.orderId = orderId
        self.obfuscatedExternalAccountId = obfuscatedExternalAccountId
        self.obfuscatedExternalProfileId = obfuscatedExternalProfileId
        self.regionCode = regionCode
        self.purchaseCompletionTime = purchaseCompletionTime
        self.acknowledgementState = acknowledgementState
    }

    /// `purchaseCompletionTime` parsed as an RFC 3339 timestamp; `nil` when absent or malformed.
    public var purchaseCompletionDate: Date? { purchaseCompletionTime.flatMap(RFC3339.date(from:)) }
}

/// Item-level info of a one-time product purchase.
public struct ProductLineItem: Codable, Hashable, Sendable {
    /// Purchased product id.
    public var productId: String?
    /// Offer details of this item.
    public var productOfferDetails: ProductOfferDetails?

    /// Creates a `ProductLineItem`; every field defaults to `nil`.
    public init(
        productId: String? = nil,
        productOfferDetails: ProductOfferDetails? = nil
    ) {
        self.productId = productId
        self.productOfferDetails = productOfferDetails
    }
}

/// Offer details of a one-time product line item.
public struct ProductOfferDetails: Codable, Hashable, Sendable {
    /// Latest offer tags, including tags inherited from the purchase option.
    public var offerTags: [String]?
    /// Offer id; only present for offers.
    public var offerId: String?
    /// Purchase option id.
    public var purchaseOptionId: String?
    /// Set for rental offers.
    public var rentOfferDetails: RentOfferDetails?
    /// Set for pre-orders.
    public var preorderOfferDetails: PreorderOfferDetails?
    /// Per-transaction offer token used for this line item.
    public var offerToken: String?
    /// Quantity purchased.
    public var quantity: Int?
    /// Quantity not yet refunded.
    public var refundableQuantity: Int?
    /// Consumption state of the purchase.
    public var consumptionState: ConsumptionState?

    /// Creates a `ProductOfferDetails`; every field defaults to `nil`.
    public init(
        offerTags: [String]? = nil,
        offerId: String? = nil,
        purchaseOptionId: String? = nil,
        rentOfferDetails: RentOfferDetails? = nil,
        preorderOfferDetails: PreorderOfferDetails? = nil,
        offerToken: String? = nil,
        quantity: Int? = nil,
        refundableQuantity: Int? = nil,
        consumptionState: ConsumptionState? = nil
    ) {
        self.offerTags = offerTags
        self.offerId = offerId
        self.purchaseOptionId = purchaseOptionId
        self.rentOfferDetails = rentOfferDetails
        self.preorderOfferDetails = preorderOfferDetails
        self.offerToken = offerToken
        self.quantity = quantity
        self.refundableQuantity = refundableQuantity
        self.consumptionState = consumptionState
    }
}

extension ProductOfferDetails {
    /// Consumption state of a v2 one-time purchase. Open: unknown values decode and keep their raw value.
    public struct ConsumptionState: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The raw value Google sends.
        public let rawValue: String
        /// Wraps any raw value, including ones this type does not name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Unspecified.
        public static let unspecified = Self(rawValue: "CONSUMPTION_STATE_UNSPECIFIED")
        /// Yet to be consumed.
        public static let yetToBeConsumed = Self(rawValue: "CONSUMPTION_STATE_YET_TO_BE_CONSUMED")
        /// Consumed already.
        public static let consumed = Self(rawValue: "CONSUMPTION_STATE_CONSUMED")
        /// The raw value as text.
        public var description: String { rawValue }
    }
}

/// Details of a rental offer (an empty object).
public struct RentOfferDetails: Codable, Hashable, Sendable {
    /// Creates a `RentOfferDetails`; every field defaults to `nil`.
    public init() {}
}

/// Details of a pre-order offer.
public struct PreorderOfferDetails: Codable, Hashable, Sendable {
    /// RFC 3339 time the pre-ordered item is released.
    public var preorderReleaseTime: String?

    /// Creates a `PreorderOfferDetails`; every field defaults to `nil`.
    public init(
        preorderReleaseTime: String? = nil
    ) {
        self.preorderReleaseTime = preorderReleaseTime
    }

    /// `preorderReleaseTime` parsed as an RFC 3339 timestamp; `nil` when absent or malformed.
    public var preorderReleaseDate: Date? { preorderReleaseTime.flatMap(RFC3339.date(from:)) }
}

/// Purchase state of a v2 one-time purchase.
public struct PurchaseStateContext: Codable, Hashable, Sendable {
    /// The purchase state.
    public var purchaseState: PurchaseState?

    /// Creates a `PurchaseStateContext`; every field defaults to `nil`.
    public init(
        purchaseState: PurchaseState? = nil
    ) {
        self.purchaseState = purchaseState
    }
}

extension PurchaseStateContext {
    /// Purchase state of a v2 one-time purchase. Open: unknown values decode and keep their raw value.
    public struct PurchaseState: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The raw value Google sends.
        public let rawValue: String
        /// Wraps any raw value, including ones this type does not name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Unspecified.
        public static let unspecified = Self(rawValue: "PURCHASE_STATE_UNSPECIFIED")
        /// Purchased successfully.
        public static let purchased = Self(rawValue: "PURCHASED")
        /// Purchase canceled.
        public static let cancelled = Self(rawValue: "CANCELLED")
        /// Pending and not yet completed.
        public static let pending = Self(rawValue: "PENDING")
        /// The raw value as text.
        public var description: String { rawValue }
    }
}

/// Context of a test purchase.
public struct TestPurchaseContext: Codable, Hashable, Sendable {
    /// Form of payment of the test purchase.
    public var fopType: FopType?

    /// Creates a `TestPurchaseContext`; every field defaults to `nil`.
    public init(
        fopType: FopType? = nil
    ) {
        self.fopType = fopType
    }
}

extension TestPurchaseContext {
    /// Form of payment of a test purchase. Open: unknown values decode and keep their raw value.
    public struct FopType: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The raw value Google sends.
        public let rawValue: String
        /// Wraps any raw value, including ones this type does not name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Unspecified.
        public static let unspecified = Self(rawValue: "FOP_TYPE_UNSPECIFIED")
        /// Made with a test card.
        public static let test = Self(rawValue: "TEST")
        /// The raw value as text.
        public var description: String { rawValue }
    }
}
