public import Foundation

/// The decoded payload of signed subscription renewal information (Apple's `JWSRenewalInfoDecodedPayload`).
public struct JWSRenewalInfo: Codable, Hashable, Sendable {
    /// The UUID string the app attached for the upcoming renewal, identifying the customer on its own service.
    public let appAccountToken: String?
    /// The unique identifier of the app download transaction.
    public let appTransactionId: String?
    /// The product identifier of the product that renews at the next billing period.
    public let autoRenewProductId: String?
    /// Whether the subscription renews at the end of the current period.
    public let autoRenewStatus: AutoRenewStatus?
    /// The ISO 4217 currency code of `renewalPrice`.
    public let currency: String?
    /// Commitment renewal details for a monthly subscription with a 12-month commitment.
    public let commitmentInfo: RenewalCommitmentInfo?
    /// The win-back offer identifiers the customer can redeem, best first.
    public let eligibleWinBackOfferIds: [String]?
    /// The server environment that signed the renewal information.
    public let environment: Environment?
    /// Why the subscription expired.
    public let expirationIntent: ExpirationIntent?
    /// When the billing grace period ends.
    public let gracePeriodExpiresDate: Date?
    /// Whether the App Store is still trying to renew an expired subscription.
    public let isInBillingRetryPeriod: Bool?
    /// The payment mode of the offer that applies at renewal.
    public let offerDiscountType: OfferDiscountType?
    /// The offer code or promotional offer identifier that applies at renewal.
    public let offerIdentifier: String?
    /// The ISO 8601 duration of the offer.
    public let offerPeriod: String?
    /// The type of offer that applies at renewal.
    public let offerType: OfferType?
    /// The transaction identifier of the original purchase.
    public let originalTransactionId: String?
    /// Whether the subscription is subject to a price increase awaiting the customer.
    public let priceIncreaseStatus: PriceIncreaseStatus?
    /// The product identifier of the current subscription.
    public let productId: String?
    /// The earliest start date of the subscription series, ignoring lapses of 60 days or fewer.
    public let recentSubscriptionStartDate: Date?
    /// How the renewing subscription with a 12-month commitment is billed.
    public let renewalBillingPlanType: BillingPlanType?
    /// When the most recent subscription purchase expires (the next renewal date).
    public let renewalDate: Date?
    /// The renewal price, in milliunits of `currency`.
    public let renewalPrice: Int64?
    /// When the App Store signed the payload.
    public let signedDate: Date?
    /// Renewal details present only for Advanced Commerce API SKUs.
    public let advancedCommerceInfo: AdvancedCommerceRenewalInfo?

    /// `appAccountToken` parsed as a UUID, or nil when absent or not a valid UUID string.
    public var appAccountTokenUUID: UUID? {
        appAccountToken.flatMap { UUID(uuidString: $0) }
    }

    /// Creates a value; every field is optional.
    public init(
        appAccountToken: String? = nil,
        appTransactionId: String? = nil,
        autoRenewProductId: String? = nil,
        autoRenewStatus: AutoRenewStatus? = nil,
        currency: String? = nil,
        commitmentInfo: RenewalCommitmentInfo? = nil,
        eligibleWinBackOfferIds: [String]? = nil,
        environment: Environment? = nil,
        expirationIntent: ExpirationIntent? = nil,
        gracePeriodExpiresDate: Date? = nil,
        isInBillingRetryPeriod: Bool? = nil,
        offerDiscountType: OfferDiscountType? = nil,
        offerIdentifier: String? = nil,
        offerPeriod: String? = nil,
        offerType: OfferType? = nil,
        originalTransactionId: String? = nil,
        priceIncreaseStatus: PriceIncreaseStatus? = nil,
        productId: String? = nil,
        recentSubscriptionStartDate: Date? = nil,
        renewalBillingPlanType: BillingPlanType? = nil,
        renewalDate: Date? = nil,
        renewalPrice: Int64? = nil,
        signedDate: Date? = nil,
        advancedCommerceInfo: AdvancedCommerceRenewalInfo? = nil
    ) {
        self.appAccountToken = appAccountToken
        self.appTransactionId = appTransactionId
        self.autoRenewProductId = autoRenewProductId
        self.autoRenewStatus = autoRenewStatus
        self.currency = currency
        self.commitmentInfo = commitmentInfo
        self.eligibleWinBackOfferIds = eligibleWinBackOfferIds
        self.environment = environment
        self.expirationIntent = expirationIntent
        self.gracePeriodExpiresDate = gracePeriodExpiresDate
        self.isInBillingRetryPeriod = isInBillingRetryPeriod
        self.offerDiscountType = offerDiscountType
        self.offerIdentifier = offerIdentifier
        self.offerPeriod = offerPeriod
        self.offerType = offerType
        self.originalTransactionId = originalTransactionId
        self.priceIncreaseStatus = priceIncreaseStatus
        self.productId = productId
        self.recentSubscriptionStartDate = recentSubscriptionStartDate
        self.renewalBillingPlanType = renewalBillingPlanType
        self.renewalDate = renewalDate
        self.renewalPrice = renewalPrice
        self.signedDate = signedDate
        self.advancedCommerceInfo = advancedCommerceInfo
    }
}

/// Commitment renewal details for a monthly subscription with a 12-month commitment
/// (Apple's `RenewalCommitmentInfo`).
public struct RenewalCommitmentInfo: Codable, Hashable, Sendable {
    /// The product identifier the commitment renews to.
    public let commitmentAutoRenewProductId: String?
    /// Whether the commitment renews when it ends.
    public let commitmentAutoRenewStatus: AutoRenewStatus?
    /// How the renewed commitment is billed.
    public let commitmentRenewalBillingPlanType: BillingPlanType?
    /// When the commitment renews.
    public let commitmentRenewalDate: Date?
    /// The price of the renewed commitment, in milliunits.
    public let commitmentRenewalPrice: Int64?

    /// Creates a value; every field is optional.
    public init(
        commitmentAutoRenewProductId: String? = nil,
        commitmentAutoRenewStatus: AutoRenewStatus? = nil,
        commitmentRenewalBillingPlanType: BillingPlanType? = nil,
        commitmentRenewalDate: Date? = nil,
        commitmentRenewalPrice: Int64? = nil
    ) {
        self.commitmentAutoRenewProductId = commitmentAutoRenewProductId
        self.commitmentAutoRenewStatus = commitmentAutoRenewStatus
        self.commitmentRenewalBillingPlanType = commitmentRenewalBillingPlanType
        self.commitmentRenewalDate = commitmentRenewalDate
        self.commitmentRenewalPrice = commitmentRenewalPrice
    }
}
