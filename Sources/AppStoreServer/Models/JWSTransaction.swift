public import Foundation

/// The decoded payload of a signed transaction (Apple's `JWSTransactionDecodedPayload`).
public struct JWSTransaction: Codable, Hashable, Sendable {
    /// The UUID string the app attached to the purchase to identify the customer on its own service.
    public let appAccountToken: String?
    /// The unique identifier of the app download transaction.
    public let appTransactionId: String?
    /// The app's bundle identifier.
    public let bundleId: String?
    /// How a subscription with a 12-month commitment is billed.
    public let billingPlanType: BillingPlanType?
    /// The ISO 4217 currency code of `price`.
    public let currency: String?
    /// Commitment details for a monthly subscription with a 12-month commitment.
    public let commitmentInfo: TransactionCommitmentInfo?
    /// The server environment that signed the transaction.
    public let environment: Environment?
    /// When the subscription expires or renews.
    public let expiresDate: Date?
    /// Whether the customer bought the transaction or has it through Family Sharing.
    public let inAppOwnershipType: InAppOwnershipType?
    /// Whether the customer upgraded to another subscription.
    public let isUpgraded: Bool?
    /// The payment mode of the offer applied to the transaction.
    public let offerDiscountType: OfferDiscountType?
    /// The offer code or promotional offer identifier.
    public let offerIdentifier: String?
    /// The ISO 8601 duration of the offer applied to the transaction.
    public let offerPeriod: String?
    /// The type of offer applied to the transaction.
    public let offerType: OfferType?
    /// The purchase date of the original transaction.
    public let originalPurchaseDate: Date?
    /// The transaction identifier of the original purchase.
    public let originalTransactionId: String?
    /// The subscription's original transaction identifier before it was migrated.
    public let previousOriginalTransactionId: String?
    /// The price, in milliunits of `currency` (1000 = one unit).
    public let price: Int64?
    /// The product identifier.
    public let productId: String?
    /// When the App Store charged the customer's account.
    public let purchaseDate: Date?
    /// The number of consumable products purchased.
    public let quantity: Int32?
    /// When the App Store refunded the transaction or revoked it from Family Sharing.
    public let revocationDate: Date?
    /// The share of the transaction refunded or revoked, in milliunits (0–100000, 100000 = 100%).
    public let revocationPercentage: Int32?
    /// Why the transaction was refunded or revoked.
    public let revocationReason: RevocationReason?
    /// The kind of refund or revocation.
    public let revocationType: RevocationType?
    /// When the App Store signed the payload.
    public let signedDate: Date?
    /// The three-letter country or region code of the purchase's storefront.
    public let storefront: String?
    /// Apple's identifier of the purchase's storefront.
    public let storefrontId: String?
    /// The identifier of the subscription group the subscription belongs to.
    public let subscriptionGroupIdentifier: String?
    /// The unique identifier of the transaction.
    public let transactionId: String?
    /// Whether the transaction is a purchase or a renewal.
    public let transactionReason: TransactionReason?
    /// The product type.
    public let type: TransactionType?
    /// The identifier of subscription purchase events across devices, including renewals.
    public let webOrderLineItemId: String?
    /// Transaction details present only for Advanced Commerce API SKUs.
    public let advancedCommerceInfo: AdvancedCommerceTransactionInfo?

    /// `appAccountToken` parsed as a UUID, or nil when absent or not a valid UUID string.
    public var appAccountTokenUUID: UUID? {
        appAccountToken.flatMap { UUID(uuidString: $0) }
    }

    /// Creates a value; every field is optional.
    public init(
        appAccountToken: String? = nil,
        appTransactionId: String? = nil,
        bundleId: String? = nil,
        billingPlanType: BillingPlanType? = nil,
        currency: String? = nil,
        commitmentInfo: TransactionCommitmentInfo? = nil,
        environment: Environment? = nil,
        expiresDate: Date? = nil,
        inAppOwnershipType: InAppOwnershipType? = nil,
        isUpgraded: Bool? = nil,
        offerDiscountType: OfferDiscountType? = nil,
        offerIdentifier: String? = nil,
        offerPeriod: String? = nil,
        offerType: OfferType? = nil,
        originalPurchaseDate: Date? = nil,
        originalTransactionId: String? = nil,
        previousOriginalTransactionId: String? = nil,
        price: Int64? = nil,
        productId: String? = nil,
        purchaseDate: Date? = nil,
        quantity: Int32? = nil,
        revocationDate: Date? = nil,
        revocationPercentage: Int32? = nil,
        revocationReason: RevocationReason? = nil,
        revocationType: RevocationType? = nil,
        signedDate: Date? = nil,
        storefront: String? = nil,
        storefrontId: String? = nil,
        subscriptionGroupIdentifier: String? = nil,
        transactionId: String? = nil,
        transactionReason: TransactionReason? = nil,
        type: TransactionType? = nil,
        webOrderLineItemId: String? = nil,
        advancedCommerceInfo: AdvancedCommerceTransactionInfo? = nil
    ) {
        self.appAccountToken = appAccountToken
        self.appTransactionId = appTransactionId
        self.bundleId = bundleId
        self.billingPlanType = billingPlanType
        self.currency = currency
        self.commitmentInfo = commitmentInfo
        self.environment = environment
        self.expiresDate = expiresDate
        self.inAppOwnershipType = inAppOwnershipType
        self.isUpgraded = isUpgraded
        self.offerDiscountType = offerDiscountType
        self.offerIdentifier = offerIdentifier
        self.offerPeriod = offerPeriod
        self.offerType = offerType
        self.originalPurchaseDate = originalPurchaseDate
        self.originalTransactionId = originalTransactionId
        self.previousOriginalTransactionId = previousOriginalTransactionId
        self.price = price
        self.productId = productId
        self.purchaseDate = purchaseDate
        self.quantity = quantity
        self.revocationDate = revocationDate
        self.revocationPercentage = revocationPercentage
        self.revocationReason = revocationReason
        self.revocationType = revocationType
        self.signedDate = signedDate
        self.storefront = storefront
        self.storefrontId = storefrontId
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.transactionId = transactionId
        self.transactionReason = transactionReason
        self.type = type
        self.webOrderLineItemId = webOrderLineItemId
        self.advancedCommerceInfo = advancedCommerceInfo
    }
}

/// Commitment details of a transaction for a monthly subscription with a 12-month commitment
/// (Apple's `TransactionCommitmentInfo`).
public struct TransactionCommitmentInfo: Codable, Hashable, Sendable {
    /// Which billing period of the commitment this transaction is (1–12).
    public let billingPeriodNumber: Int32?
    /// When the commitment expires.
    public let commitmentExpiresDate: Date?
    /// The price of the commitment, in milliunits.
    public let commitmentPrice: Int64?
    /// The total number of billing periods in the commitment.
    public let totalBillingPeriods: Int32?

    /// Creates a value; every field is optional.
    public init(
        billingPeriodNumber: Int32? = nil,
        commitmentExpiresDate: Date? = nil,
        commitmentPrice: Int64? = nil,
        totalBillingPeriods: Int32? = nil
    ) {
        self.billingPeriodNumber = billingPeriodNumber
        self.commitmentExpiresDate = commitmentExpiresDate
        self.commitmentPrice = commitmentPrice
        self.totalBillingPeriods = totalBillingPeriods
    }
}
