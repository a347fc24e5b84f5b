/// The product type of an In-App Purchase (`type`).
public struct TransactionType: RawRepresentable, Hashable, Sendable, Codable,
    CustomStringConvertible
{
    /// The raw string Apple sends.
    public let rawValue: String

    /// Wraps any raw value, including ones this type does not name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// An auto-renewable subscription.
    public static let autoRenewableSubscription = Self(rawValue: "Auto-Renewable Subscription")
    /// A non-consumable In-App Purchase.
    public static let nonConsumable = Self(rawValue: "Non-Consumable")
    /// A consumable In-App Purchase.
    public static let consumable = Self(rawValue: "Consumable")
    /// A non-renewing subscription.
    public static let nonRenewingSubscription = Self(rawValue: "Non-Renewing Subscription")

    /// The raw value.
    public var description: String { rawValue }
}

/// Whether the customer bought the transaction or has it through Family Sharing (`inAppOwnershipType`).
public struct InAppOwnershipType: RawRepresentable, Hashable, Sendable, Codable,
    CustomStringConvertible
{
    /// The raw string Apple sends.
    public let rawValue: String

    /// Wraps any raw value, including ones this type does not name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The transaction belongs to a family member who benefits from the service.
    public static let familyShared = Self(rawValue: "FAMILY_SHARED")
    /// The transaction belongs to the purchaser.
    public static let purchased = Self(rawValue: "PURCHASED")

    /// The raw value.
    public var description: String { rawValue }
}

/// The type of offer applied to a transaction or renewal (`offerType`).
public struct OfferType: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The raw integer Apple sends.
    public let rawValue: Int32

    /// Wraps any raw value, including ones this type does not name.
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// An introductory offer.
    public static let introductory = Self(rawValue: 1)
    /// A promotional offer.
    public static let promotional = Self(rawValue: 2)
    /// An offer redeemed with an offer code.
    public static let offerCode = Self(rawValue: 3)
    /// A win-back offer.
    public static let winBack = Self(rawValue: 4)

    /// The raw value.
    public var description: String { String(rawValue) }
}

/// The payment mode of a discount offer (`offerDiscountType`).
public struct OfferDiscountType: RawRepresentable, Hashable, Sendable, Codable,
    CustomStringConvertible
{
    /// The raw string Apple sends.
    public let rawValue: String

    /// Wraps any raw value, including ones this type does not name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A free trial of an auto-renewable subscription.
    public static let freeTrial = Self(rawValue: "FREE_TRIAL")
    /// A discount paid over one or more billing periods.
    public static let payAsYouGo = Self(rawValue: "PAY_AS_YOU_GO")
    /// A discount paid up front.
    public static let payUpFront = Self(rawValue: "PAY_UP_FRONT")
    /// A one-time discount on a consumable, non-consumable or non-renewing subscription.
    public static let oneTime = Self(rawValue: "ONE_TIME")

    /// The raw value.
    public var description: String { rawValue }
}

/// Why the App Store refunded or revoked a transaction (`revocationReason`).
public struct RevocationReason: RawRepresentable, Hashable, Sendable, Codable,
    CustomStringConvertible
{
    /// The raw integer Apple sends.
    public let rawValue: Int32

    /// Wraps any raw value, including ones this type does not name.
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// Refunded for another reason, such as an accidental purchase (also Family Sharing revocations).
    public static let other = Self(rawValue: 0)
    /// Refunded because of an actual or perceived issue within the app.
    public static let appIssue = Self(rawValue: 1)

    /// The raw value.
    public var description: String { String(rawValue) }
}

/// The kind of refund or revocation that applies to a transaction (`revocationType`).
public struct RevocationType: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The raw string Apple sends.
    public let rawValue: String

    /// Wraps any raw value, including ones this type does not name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The transaction has a full refund.
    public static let refundFull = Self(rawValue: "REFUND_FULL")
    /// The transaction has a prorated refund; see `revocationPercentage`.
    public static let refundProrated = Self(rawValue: "REFUND_PRORATED")
    /// The transaction is revoked from Family Sharing.
    public static let familyRevoke = Self(rawValue: "FAMILY_REVOKE")

    /// The raw value.
    public var description: String { rawValue }
}

/// Whether a transaction is a customer purchase or a system-initiated renewal (`transactionReason`).
public struct TransactionReason: RawRepresentable, Hashable, Sendable, Codable,
    CustomStringConvertible
{
    /// The raw string Apple sends.
    public let rawValue: String

    /// Wraps any raw value, including ones this type does not name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The customer initiated the purchase (including an immediate upgrade).
    public static let purchase = Self(rawValue: "PURCHASE")
    /// The App Store renewed an auto-renewable subscription (including a downgrade at renewal).
    public static let renewal = Self(rawValue: "RENEWAL")

    /// The raw value.
    public var description: String { rawValue }
}

/// How a subscription with a 12-month commitment is billed (`billingPlanType`, `renewalBillingPlanType`).
public struct BillingPlanType: RawRepresentable, Hashable, Sendable, Codable,
    CustomStringConvertible
{
    /// The raw string Apple sends.
    public let rawValue: String

    /// Wraps any raw value, including ones this type does not name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The whole period is billed up front.
    public static let billedUpfront = Self(rawValue: "BILLED_UPFRONT")
    /// Billed monthly across a 12-month commitment.
    public static let monthly = Self(rawValue: "MONTHLY")

    /// The raw value.
    public var description: String { rawValue }
}
