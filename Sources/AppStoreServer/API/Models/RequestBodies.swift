public import Foundation

/// Send Consumption Information (v2): how much of a purchase the customer used, sent in answer to a
/// CONSUMPTION_REQUEST within 12 hours, and only with the customer's consent.
public struct ConsumptionRequest: Codable, Hashable, Sendable {
    /// Whether the customer consented to sharing the data; Apple refuses anything but true.
    public var customerConsented: Bool
    /// How much was consumed, in milliunits (0–100 000).
    public var consumptionPercentage: Int32?
    /// Whether the purchase was delivered and works.
    public var deliveryStatus: DeliveryStatus
    /// The refund outcome the developer prefers.
    public var refundPreference: RefundPreference?
    /// Whether a free sample or trial was provided.
    public var sampleContentProvided: Bool

    public init(
        customerConsented: Bool, consumptionPercentage: Int32? = nil, deliveryStatus: DeliveryStatus,
        refundPreference: RefundPreference? = nil, sampleContentProvided: Bool
    ) {
        self.customerConsented = customerConsented
        self.consumptionPercentage = consumptionPercentage
        self.deliveryStatus = deliveryStatus
        self.refundPreference = refundPreference
        self.sampleContentProvided = sampleContentProvided
    }
}

/// Send Consumption Information V1's body. Deprecated by Apple: use ``ConsumptionRequest``.
@available(*, deprecated, message: "Apple deprecated Send Consumption Information V1; use ConsumptionRequest")
public struct ConsumptionRequestV1: Codable, Hashable, Sendable {
    public var customerConsented: Bool?
    public var consumptionStatus: Int32?
    public var platform: Int32?
    public var sampleContentProvided: Bool?
    public var deliveryStatus: Int32?
    public var appAccountToken: String?
    public var accountTenure: Int32?
    public var playTime: Int32?
    public var lifetimeDollarsRefunded: Int32?
    public var lifetimeDollarsPurchased: Int32?
    public var userStatus: Int32?
    public var refundPreference: Int32?

    public init(
        customerConsented: Bool? = nil, consumptionStatus: Int32? = nil, platform: Int32? = nil,
        sampleContentProvided: Bool? = nil, deliveryStatus: Int32? = nil, appAccountToken: String? = nil,
        accountTenure: Int32? = nil, playTime: Int32? = nil, lifetimeDollarsRefunded: Int32? = nil,
        lifetimeDollarsPurchased: Int32? = nil, userStatus: Int32? = nil, refundPreference: Int32? = nil
    ) {
        self.customerConsented = customerConsented
        self.consumptionStatus = consumptionStatus
        self.platform = platform
        self.sampleContentProvided = sampleContentProvided
        self.deliveryStatus = deliveryStatus
        self.appAccountToken = appAccountToken
        self.accountTenure = accountTenure
        self.playTime = playTime
        self.lifetimeDollarsRefunded = lifetimeDollarsRefunded
        self.lifetimeDollarsPurchased = lifetimeDollarsPurchased
        self.userStatus = userStatus
        self.refundPreference = refundPreference
    }
}

/// Set App Account Token's body.
public struct UpdateAppAccountTokenRequest: Codable, Hashable, Sendable {
    /// The customer's app account token (a UUID).
    public var appAccountToken: String

    public init(appAccountToken: String) {
        self.appAccountToken = appAccountToken
    }
}

/// Extend a Subscription Renewal Date's body.
public struct ExtendRenewalDateRequest: Codable, Hashable, Sendable {
    /// Days to extend by (1–90).
    public var extendByDays: Int32
    /// Why.
    public var extendReasonCode: ExtendReasonCode
    /// A UUID identifying the request, for idempotency.
    public var requestIdentifier: String

    public init(extendByDays: Int32, extendReasonCode: ExtendReasonCode, requestIdentifier: String) {
        self.extendByDays = extendByDays
        self.extendReasonCode = extendReasonCode
        self.requestIdentifier = requestIdentifier
    }
}

/// Extend a Subscription Renewal Date's response.
public struct ExtendRenewalDateResponse: Codable, Hashable, Sendable {
    public var originalTransactionId: String?
    public var webOrderLineItemId: String?
    /// Whether the extension succeeded.
    public var success: Bool?
    /// The new renewal date.
    public var effectiveDate: Date?

    public init(
        originalTransactionId: String? = nil, webOrderLineItemId: String? = nil, success: Bool? = nil,
        effectiveDate: Date? = nil
    ) {
        self.originalTransactionId = originalTransactionId
        self.webOrderLineItemId = webOrderLineItemId
        self.success = success
        self.effectiveDate = effectiveDate
    }
}

/// Extend Subscription Renewal Dates for All Active Subscribers' body.
public struct MassExtendRenewalDateRequest: Codable, Hashable, Sendable {
    public var extendByDays: Int32
    public var extendReasonCode: ExtendReasonCode
    /// A UUID identifying the request; also used to check its status.
    public var requestIdentifier: String
    /// Only these storefronts (ISO 3166-1 alpha-3); nil for all.
    public var storefrontCountryCodes: [String]?
    /// The subscription product to extend.
    public var productId: String

    public init(
        extendByDays: Int32, extendReasonCode: ExtendReasonCode, requestIdentifier: String,
        storefrontCountryCodes: [String]? = nil, productId: String
    ) {
        self.extendByDays = extendByDays
        self.extendReasonCode = extendReasonCode
        self.requestIdentifier = requestIdentifier
        self.storefrontCountryCodes = storefrontCountryCodes
        self.productId = productId
    }
}

/// Extend Subscription Renewal Dates for All Active Subscribers' response.
public struct MassExtendRenewalDateResponse: Codable, Hashable, Sendable {
    public var requestIdentifier: String?

    public init(requestIdentifier: String? = nil) {
        self.requestIdentifier = requestIdentifier
    }
}

/// Get Status of Subscription Renewal Date Extensions.
public struct MassExtendRenewalDateStatusResponse: Codable, Hashable, Sendable {
    public var requestIdentifier: String?
    /// Whether every eligible subscription was processed.
    public var complete: Bool?
    /// When it completed.
    public var completeDate: Date?
    /// How many were extended.
    public var succeededCount: Int64?
    /// How many could not be.
    public var failedCount: Int64?

    public init(
        requestIdentifier: String? = nil, complete: Bool? = nil, completeDate: Date? = nil,
        succeededCount: Int64? = nil, failedCount: Int64? = nil
    ) {
        self.requestIdentifier = requestIdentifier
        self.complete = complete
        self.completeDate = completeDate
        self.succeededCount = succeededCount
        self.failedCount = failedCount
    }
}

/// The JSON body of an App Store Server API error.
public struct ErrorPayload: Codable, Hashable, Sendable {
    public var errorCode: APIErrorCode?
    public var errorMessage: String?

    public init(errorCode: APIErrorCode? = nil, errorMessage: String? = nil) {
        self.errorCode = errorCode
        self.errorMessage = errorMessage
    }
}
