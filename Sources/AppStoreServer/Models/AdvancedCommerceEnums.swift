/// The duration of one cycle of an Advanced Commerce subscription (`advancedCommercePeriod`).
public struct AdvancedCommercePeriod: RawRepresentable, Hashable, Sendable, Codable,
    CustomStringConvertible
{
    /// The raw ISO 8601 duration Apple sends.
    public let rawValue: String

    /// Wraps any raw value, including ones this type does not name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// One week.
    public static let oneWeek = Self(rawValue: "P1W")
    /// One month.
    public static let oneMonth = Self(rawValue: "P1M")
    /// Two months.
    public static let twoMonths = Self(rawValue: "P2M")
    /// Three months.
    public static let threeMonths = Self(rawValue: "P3M")
    /// Six months.
    public static let sixMonths = Self(rawValue: "P6M")
    /// One year.
    public static let oneYear = Self(rawValue: "P1Y")

    /// The raw value.
    public var description: String { rawValue }
}

/// The duration of one period of an Advanced Commerce offer (`advancedCommerceOfferPeriod`).
public struct AdvancedCommerceOfferPeriod: RawRepresentable, Hashable, Sendable, Codable,
    CustomStringConvertible
{
    /// The raw ISO 8601 duration Apple sends.
    public let rawValue: String

    /// Wraps any raw value, including ones this type does not name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Three days.
    public static let threeDays = Self(rawValue: "P3D")
    /// One week.
    public static let oneWeek = Self(rawValue: "P1W")
    /// Two weeks.
    public static let twoWeeks = Self(rawValue: "P2W")
    /// One month.
    public static let oneMonth = Self(rawValue: "P1M")
    /// Two months.
    public static let twoMonths = Self(rawValue: "P2M")
    /// Three months.
    public static let threeMonths = Self(rawValue: "P3M")
    /// Six months.
    public static let sixMonths = Self(rawValue: "P6M")
    /// Nine months.
    public static let nineMonths = Self(rawValue: "P9M")
    /// One year.
    public static let oneYear = Self(rawValue: "P1Y")

    /// The raw value.
    public var description: String { rawValue }
}

/// Why an Advanced Commerce offer applies (`advancedCommerceOfferReason`).
public struct AdvancedCommerceOfferReason: RawRepresentable, Hashable, Sendable, Codable,
    CustomStringConvertible
{
    /// The raw string Apple sends.
    public let rawValue: String

    /// Wraps any raw value, including ones this type does not name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// An offer to acquire a new customer.
    public static let acquisition = Self(rawValue: "ACQUISITION")
    /// An offer to win back a lapsed customer.
    public static let winBack = Self(rawValue: "WIN_BACK")
    /// An offer to retain an existing customer.
    public static let retention = Self(rawValue: "RETENTION")

    /// The raw value.
    public var description: String { rawValue }
}

/// Why an Advanced Commerce item was refunded (`advancedCommerceRefundReason`).
public struct AdvancedCommerceRefundReason: RawRepresentable, Hashable, Sendable, Codable,
    CustomStringConvertible
{
    /// The raw string Apple sends.
    public let rawValue: String

    /// Wraps any raw value, including ones this type does not name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The customer didn't intend to make the purchase.
    public static let unintendedPurchase = Self(rawValue: "UNINTENDED_PURCHASE")
    /// The customer had a problem receiving the purchase.
    public static let fulfillmentIssue = Self(rawValue: "FULFILLMENT_ISSUE")
    /// The customer wasn't satisfied with the purchase.
    public static let unsatisfiedWithPurchase = Self(rawValue: "UNSATISFIED_WITH_PURCHASE")
    /// A refund for a legal reason.
    public static let legal = Self(rawValue: "LEGAL")
    /// Some other reason.
    public static let other = Self(rawValue: "OTHER")
    /// A refund issued when the subscription's items were modified.
    public static let modifyItemsRefund = Self(rawValue: "MODIFY_ITEMS_REFUND")
    /// Sandbox only: simulates a declined refund.
    public static let simulateRefundDecline = Self(rawValue: "SIMULATE_REFUND_DECLINE")

    /// The raw value.
    public var description: String { rawValue }
}

/// How much of an Advanced Commerce item was refunded (`advancedCommerceRefundType`).
public struct AdvancedCommerceRefundType: RawRepresentable, Hashable, Sendable, Codable,
    CustomStringConvertible
{
    /// The raw string Apple sends.
    public let rawValue: String

    /// Wraps any raw value, including ones this type does not name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The full amount.
    public static let full = Self(rawValue: "FULL")
    /// An amount prorated to the unused time.
    public static let prorated = Self(rawValue: "PRORATED")
    /// A custom amount.
    public static let custom = Self(rawValue: "CUSTOM")

    /// The raw value.
    public var description: String { rawValue }
}

/// The state of an Advanced Commerce price increase (`advancedCommercePriceIncreaseInfoStatus`).
public struct AdvancedCommercePriceIncreaseStatus: RawRepresentable, Hashable, Sendable, Codable,
    CustomStringConvertible
{
    /// The raw string Apple sends.
    public let rawValue: String

    /// Wraps any raw value, including ones this type does not name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The price increase is scheduled.
    public static let scheduled = Self(rawValue: "SCHEDULED")
    /// The customer hasn't yet accepted the price increase.
    public static let pending = Self(rawValue: "PENDING")
    /// The customer accepted the price increase.
    public static let accepted = Self(rawValue: "ACCEPTED")

    /// The raw value.
    public var description: String { rawValue }
}
