/// Whether an auto-renewable subscription renews at the end of its period (`autoRenewStatus`).
public struct AutoRenewStatus: RawRepresentable, Hashable, Sendable, Codable,
    CustomStringConvertible
{
    /// The raw integer Apple sends.
    public let rawValue: Int32

    /// Wraps any raw value, including ones this type does not name.
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// Automatic renewal is off; the subscription won't renew.
    public static let off = Self(rawValue: 0)
    /// Automatic renewal is on; the subscription renews at the end of the period.
    public static let on = Self(rawValue: 1)

    /// The raw value.
    public var description: String { String(rawValue) }
}

/// Why an auto-renewable subscription expired (`expirationIntent`).
public struct ExpirationIntent: RawRepresentable, Hashable, Sendable, Codable,
    CustomStringConvertible
{
    /// The raw integer Apple sends.
    public let rawValue: Int32

    /// Wraps any raw value, including ones this type does not name.
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The customer canceled the subscription.
    public static let customerCanceled = Self(rawValue: 1)
    /// A billing error, such as invalid payment information.
    public static let billingError = Self(rawValue: 2)
    /// The customer didn't consent to a price increase or offer conversion that required consent.
    public static let didNotConsentToPriceIncrease = Self(rawValue: 3)
    /// The product wasn't available for purchase at renewal.
    public static let productUnavailable = Self(rawValue: 4)
    /// The subscription expired for some other reason.
    public static let other = Self(rawValue: 5)

    /// The raw value.
    public var description: String { String(rawValue) }
}

/// Whether a subscription is subject to a price increase the customer must respond to (`priceIncreaseStatus`).
public struct PriceIncreaseStatus: RawRepresentable, Hashable, Sendable, Codable,
    CustomStringConvertible
{
    /// The raw integer Apple sends.
    public let rawValue: Int32

    /// Wraps any raw value, including ones this type does not name.
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The customer hasn't yet responded to a price increase that requires consent.
    public static let notResponded = Self(rawValue: 0)
    /// The customer consented to the increase, or was notified of one that needs no consent.
    public static let accepted = Self(rawValue: 1)

    /// The raw value.
    public var description: String { String(rawValue) }
}
