public import Foundation

/// A purchase that was canceled, refunded or charged back.
public struct VoidedPurchase: Codable, Hashable, Sendable {
    /// Resource kind, `androidpublisher#voidedPurchase`.
    public var kind: String?
    /// Token identifying the one-time purchase or subscription.
    public var purchaseToken: String?
    /// Purchase time in milliseconds since the epoch.
    public var purchaseTimeMillis: Int64String?
    /// Time of the cancellation, refund or chargeback in milliseconds since the epoch.
    public var voidedTimeMillis: Int64String?
    /// Order id of the purchase or renewal.
    public var orderId: String?
    /// Who initiated the voiding.
    public var voidedSource: VoidedSource?
    /// Why the purchase was voided.
    public var voidedReason: VoidedReason?
    /// Voided quantity of a quantity-based partial refund.
    public var voidedQuantity: Int?

    /// Creates a `VoidedPurchase`; every field defaults to `nil`.
    public init(
        kind: String? = nil,
        purchaseToken: String? = nil,
        purchaseTimeMillis: Int64String? = nil,
        voidedTimeMillis: Int64String? = nil,
        orderId: String? = nil,
        voidedSource: VoidedSource? = nil,
        voidedReason: VoidedReason? = nil,
        voidedQuantity: Int? = nil
    ) {
        self.kind = kind
        self.purchaseToken = purchaseToken
        self.purchaseTimeMillis = purchaseTimeMillis
        self.voidedTimeMillis = voidedTimeMillis
        self.orderId = orderId
        self.voidedSource = voidedSource
        self.voidedReason = voidedReason
        self.voidedQuantity = voidedQuantity
    }

    /// `purchaseTimeMillis` as a `Date`; `nil` when absent.
    public var purchaseDate: Date? { purchaseTimeMillis?.dateFromMilliseconds }

    /// `voidedTimeMillis` as a `Date`; `nil` when absent.
    public var voidedDate: Date? { voidedTimeMillis?.dateFromMilliseconds }
}

extension VoidedPurchase {
    /// Initiator of a voided purchase. Open: unknown values decode and keep their raw value.
    public struct VoidedSource: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The raw value Google sends.
        public let rawValue: Int
        /// Wraps any raw value, including ones this type does not name.
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// The user.
        public static let user = Self(rawValue: 0)
        /// The developer.
        public static let developer = Self(rawValue: 1)
        /// Google.
        public static let google = Self(rawValue: 2)
        /// The raw value as text.
        public var description: String { String(rawValue) }
    }
}

extension VoidedPurchase {
    /// Reason a purchase was voided. Open: unknown values decode and keep their raw value.
    public struct VoidedReason: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The raw value Google sends.
        public let rawValue: Int
        /// Wraps any raw value, including ones this type does not name.
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// Other.
        public static let other = Self(rawValue: 0)
        /// Remorse.
        public static let remorse = Self(rawValue: 1)
        /// Not received.
        public static let notReceived = Self(rawValue: 2)
        /// Defective.
        public static let defective = Self(rawValue: 3)
        /// Accidental purchase.
        public static let accidentalPurchase = Self(rawValue: 4)
        /// Fraud.
        public static let fraud = Self(rawValue: 5)
        /// Friendly fraud.
        public static let friendlyFraud = Self(rawValue: 6)
        /// Chargeback.
        public static let chargeback = Self(rawValue: 7)
        /// Unacknowledged purchase.
        public static let unacknowledgedPurchase = Self(rawValue: 8)
        /// The raw value as text.
        public var description: String { String(rawValue) }
    }
}

/// Response of `purchases.voidedpurchases.list`.
public struct VoidedPurchasesListResponse: Codable, Hashable, Sendable {
    /// General pagination information.
    public var pageInfo: PageInfo?
    /// Token pagination information.
    public var tokenPagination: TokenPagination?
    /// The voided purchases of this page.
    public var voidedPurchases: [VoidedPurchase]?

    /// Creates a `VoidedPurchasesListResponse`; every field defaults to `nil`.
    public init(
        pageInfo: PageInfo? = nil,
        tokenPagination: TokenPagination? = nil,
        voidedPurchases: [VoidedPurchase]? = nil
    ) {
        self.pageInfo = pageInfo
        self.tokenPagination = tokenPagination
        self.voidedPurchases = voidedPurchases
    }
}
