/// The status of an auto-renewable subscription as of a notification's `signedDate` (`status`).
public struct SubscriptionStatus: RawRepresentable, Hashable, Sendable, Codable,
    CustomStringConvertible
{
    /// The raw integer Apple sends.
    public let rawValue: Int32

    /// Wraps any raw value, including ones this type does not name.
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The subscription is active.
    public static let active = Self(rawValue: 1)
    /// The subscription is expired.
    public static let expired = Self(rawValue: 2)
    /// The subscription is in the billing retry period.
    public static let billingRetryPeriod = Self(rawValue: 3)
    /// The subscription is in the billing grace period.
    public static let billingGracePeriod = Self(rawValue: 4)
    /// The subscription was refunded or revoked from Family Sharing.
    public static let revoked = Self(rawValue: 5)

    /// The raw value.
    public var description: String { String(rawValue) }
}

/// The customer's stated reason for a refund request (`consumptionRequestReason`).
public struct ConsumptionRequestReason: RawRepresentable, Hashable, Sendable, Codable,
    CustomStringConvertible
{
    /// The raw string Apple sends.
    public let rawValue: String

    /// Wraps any raw value, including ones this type does not name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The customer didn't intend to make the purchase.
    public static let unintendedPurchase = Self(rawValue: "UNINTENDED_PURCHASE")
    /// The customer had a problem receiving or using the purchase.
    public static let fulfillmentIssue = Self(rawValue: "FULFILLMENT_ISSUE")
    /// The customer wasn't satisfied with the purchase.
    public static let unsatisfiedWithPurchase = Self(rawValue: "UNSATISFIED_WITH_PURCHASE")
    /// The customer asked for a refund for a legal reason.
    public static let legal = Self(rawValue: "LEGAL")
    /// The customer gave some other reason.
    public static let other = Self(rawValue: "OTHER")

    /// The raw value.
    public var description: String { rawValue }
}

/// The kind of custom link external purchase token (`tokenType`).
public struct ExternalPurchaseTokenType: RawRepresentable, Hashable, Sendable, Codable,
    CustomStringConvertible
{
    /// The raw string Apple sends.
    public let rawValue: String

    /// Wraps any raw value, including ones this type does not name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A token for services purchased through a custom link.
    public static let services = Self(rawValue: "SERVICES")
    /// A token for customer acquisition through a custom link.
    public static let acquisition = Self(rawValue: "ACQUISITION")

    /// The raw value.
    public var description: String { rawValue }
}
