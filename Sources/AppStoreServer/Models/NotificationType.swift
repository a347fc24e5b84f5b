/// The event an App Store Server Notification V2 reports (`notificationType`).
public struct NotificationType: RawRepresentable, Hashable, Sendable, Codable,
    CustomStringConvertible
{
    /// The raw string Apple sends.
    public let rawValue: String

    /// Wraps any raw value, including ones this type does not name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The customer requested a refund for a consumable or subscription; Apple asks for consumption data.
    public static let consumptionRequest = Self(rawValue: "CONSUMPTION_REQUEST")
    /// The customer changed the subscription plan (see the `UPGRADE`/`DOWNGRADE` subtype).
    public static let didChangeRenewalPref = Self(rawValue: "DID_CHANGE_RENEWAL_PREF")
    /// The customer or App Store changed the auto-renew status.
    public static let didChangeRenewalStatus = Self(rawValue: "DID_CHANGE_RENEWAL_STATUS")
    /// The subscription failed to renew because of a billing issue.
    public static let didFailToRenew = Self(rawValue: "DID_FAIL_TO_RENEW")
    /// The subscription renewed successfully.
    public static let didRenew = Self(rawValue: "DID_RENEW")
    /// The subscription expired.
    public static let expired = Self(rawValue: "EXPIRED")
    /// An external purchase token was created, is still active, or went unreported.
    public static let externalPurchaseToken = Self(rawValue: "EXTERNAL_PURCHASE_TOKEN")
    /// The billing grace period ended without the subscription renewing.
    public static let gracePeriodExpired = Self(rawValue: "GRACE_PERIOD_EXPIRED")
    /// Advanced Commerce: the subscription's metadata changed through the Change Subscription Metadata endpoint.
    public static let metadataUpdate = Self(rawValue: "METADATA_UPDATE")
    /// Advanced Commerce: a subscription migrated to the Advanced Commerce API.
    public static let migration = Self(rawValue: "MIGRATION")
    /// The customer redeemed an offer on an active subscription.
    public static let offerRedeemed = Self(rawValue: "OFFER_REDEEMED")
    /// The customer bought a consumable, non-consumable or non-renewing subscription.
    public static let oneTimeCharge = Self(rawValue: "ONE_TIME_CHARGE")
    /// Advanced Commerce: the subscription price changed through the Change Subscription Price endpoint.
    public static let priceChange = Self(rawValue: "PRICE_CHANGE")
    /// The system informed the customer of a subscription price increase.
    public static let priceIncrease = Self(rawValue: "PRICE_INCREASE")
    /// The App Store refunded a transaction.
    public static let refund = Self(rawValue: "REFUND")
    /// The App Store declined a refund request.
    public static let refundDeclined = Self(rawValue: "REFUND_DECLINED")
    /// The App Store reversed a previously granted refund.
    public static let refundReversed = Self(rawValue: "REFUND_REVERSED")
    /// The App Store extended a subscription renewal date as requested.
    public static let renewalExtended = Self(rawValue: "RENEWAL_EXTENDED")
    /// A renewal-date extension for all subscribers completed (`SUMMARY`) or failed for one (`FAILURE`).
    public static let renewalExtension = Self(rawValue: "RENEWAL_EXTENSION")
    /// A parent or guardian withdrew consent for a child's use of the app (payload carries `appData`).
    public static let rescindConsent = Self(rawValue: "RESCIND_CONSENT")
    /// A Family Sharing entitlement is no longer available to the customer.
    public static let revoke = Self(rawValue: "REVOKE")
    /// The customer subscribed (see the `INITIAL_BUY`/`RESUBSCRIBE` subtype).
    public static let subscribed = Self(rawValue: "SUBSCRIBED")
    /// A test notification requested through the App Store Server API.
    public static let test = Self(rawValue: "TEST")

    /// The raw value.
    public var description: String { rawValue }
}

/// Details for select notification types (`subtype`).
public struct NotificationSubtype: RawRepresentable, Hashable, Sendable, Codable,
    CustomStringConvertible
{
    /// The raw string Apple sends.
    public let rawValue: String

    /// Wraps any raw value, including ones this type does not name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `PRICE_INCREASE`: the customer consented, or was notified of an increase that needs no consent.
    public static let accepted = Self(rawValue: "ACCEPTED")
    /// `EXTERNAL_PURCHASE_TOKEN`: monthly reminder that a custom link token is still active.
    public static let activeTokenReminder = Self(rawValue: "ACTIVE_TOKEN_REMINDER")
    /// `DID_CHANGE_RENEWAL_STATUS`: auto-renewal was turned off.
    public static let autoRenewDisabled = Self(rawValue: "AUTO_RENEW_DISABLED")
    /// `DID_CHANGE_RENEWAL_STATUS`: auto-renewal was turned on.
    public static let autoRenewEnabled = Self(rawValue: "AUTO_RENEW_ENABLED")
    /// `DID_RENEW`: an expired subscription that failed to renew has now renewed.
    public static let billingRecovery = Self(rawValue: "BILLING_RECOVERY")
    /// `EXPIRED`: the subscription failed to renew before the billing retry period ended.
    public static let billingRetry = Self(rawValue: "BILLING_RETRY")
    /// `EXTERNAL_PURCHASE_TOKEN`: Apple created a custom link token for the app.
    public static let created = Self(rawValue: "CREATED")
    /// `DID_CHANGE_RENEWAL_PREF`/`OFFER_REDEEMED`: a downgrade, effective at the next renewal.
    public static let downgrade = Self(rawValue: "DOWNGRADE")
    /// `RENEWAL_EXTENSION`: the renewal-date extension failed for one subscription.
    public static let failure = Self(rawValue: "FAILURE")
    /// `DID_FAIL_TO_RENEW`: the renewal failed and the subscription is in a billing grace period.
    public static let gracePeriod = Self(rawValue: "GRACE_PERIOD")
    /// `SUBSCRIBED`: a first purchase, or first access through Family Sharing.
    public static let initialBuy = Self(rawValue: "INITIAL_BUY")
    /// `PRICE_INCREASE`: the customer was informed but hasn't accepted yet.
    public static let pending = Self(rawValue: "PENDING")
    /// `EXPIRED`: the customer didn't consent to a price increase.
    public static let priceIncrease = Self(rawValue: "PRICE_INCREASE")
    /// `EXPIRED`: the product wasn't for sale when the subscription tried to renew.
    public static let productNotForSale = Self(rawValue: "PRODUCT_NOT_FOR_SALE")
    /// `SUBSCRIBED`: the customer resubscribed within the same subscription group.
    public static let resubscribe = Self(rawValue: "RESUBSCRIBE")
    /// `RENEWAL_EXTENSION`: the extension request for all eligible subscribers completed.
    public static let summary = Self(rawValue: "SUMMARY")
    /// `EXTERNAL_PURCHASE_TOKEN`: Apple created a token but received no report for it.
    public static let unreported = Self(rawValue: "UNREPORTED")
    /// `DID_CHANGE_RENEWAL_PREF`/`OFFER_REDEEMED`: an upgrade, effective immediately.
    public static let upgrade = Self(rawValue: "UPGRADE")
    /// `EXPIRED`: the subscription expired after the customer turned off auto-renewal.
    public static let voluntary = Self(rawValue: "VOLUNTARY")

    /// The raw value.
    public var description: String { rawValue }
}
