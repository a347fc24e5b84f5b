public import Foundation

/// The JSON body of a verifyReceipt response (Apple's `responseBody`). Unknown keys are ignored;
/// values are kept as Apple sends them (strings stay strings, unknown codes keep their raw value).
public struct VerifyReceiptResponse: Codable, Hashable, Sendable {
    /// `0` when the receipt is valid, else the error code.
    public var status: VerifyReceiptStatus
    /// The environment the receipt was generated in (`Sandbox` or `Production`).
    public var environment: Environment?
    /// For statuses 21100–21199: whether a later retry may succeed (`is-retryable`; Apple documents a
    /// boolean but describes it as "1"/"0", so both JSON booleans and numbers are read).
    public var isRetryable: Bool?
    /// The decoded receipt that was sent.
    public var receipt: VerifyReceiptAppReceipt?
    /// The latest base64 app receipt (receipts with auto-renewable subscriptions only).
    public var latestReceipt: String?
    /// Every in-app transaction, excluding finished consumables (auto-renewable subscriptions only).
    public var latestReceiptInfo: [VerifyReceiptTransaction]?
    /// The pending renewal of each auto-renewable subscription.
    public var pendingRenewalInfo: [VerifyReceiptPendingRenewal]?

    /// A response with the given members.
    public init(
        status: VerifyReceiptStatus, environment: Environment? = nil, isRetryable: Bool? = nil,
        receipt: VerifyReceiptAppReceipt? = nil, latestReceipt: String? = nil,
        latestReceiptInfo: [VerifyReceiptTransaction]? = nil, pendingRenewalInfo: [VerifyReceiptPendingRenewal]? = nil
    ) {
        self.status = status
        self.environment = environment
        self.isRetryable = isRetryable
        self.receipt = receipt
        self.latestReceipt = latestReceipt
        self.latestReceiptInfo = latestReceiptInfo
        self.pendingRenewalInfo = pendingRenewalInfo
    }

    enum CodingKeys: String, CodingKey {
        case status, environment, receipt
        case isRetryable = "is-retryable"
        case latestReceipt = "latest_receipt"
        case latestReceiptInfo = "latest_receipt_info"
        case pendingRenewalInfo = "pending_renewal_info"
    }

    /// Decodes the documented members; `is-retryable` may be a boolean or a number.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        status = try container.decode(VerifyReceiptStatus.self, forKey: .status)
        environment = try container.decodeIfPresent(Environment.self, forKey: .environment)
        if let flag = try? container.decodeIfPresent(Bool.self, forKey: .isRetryable) {
            isRetryable = flag
        } else if let number = try? container.decodeIfPresent(Int.self, forKey: .isRetryable) {
            isRetryable = number != 0
        } else {
            isRetryable = nil
        }
        receipt = try container.decodeIfPresent(VerifyReceiptAppReceipt.self, forKey: .receipt)
        latestReceipt = try container.decodeIfPresent(String.self, forKey: .latestReceipt)
        latestReceiptInfo = try container.decodeIfPresent([VerifyReceiptTransaction].self, forKey: .latestReceiptInfo)
        pendingRenewalInfo = try container.decodeIfPresent(
            [VerifyReceiptPendingRenewal].self, forKey: .pendingRenewalInfo)
    }

    /// The outcome the retry policy decides on.
    public var outcome: VerifyReceiptOutcome { .status(status, isRetryable: isRetryable) }
}

/// The `receipt` member of a verifyReceipt response (Apple's `responseBody.Receipt`).
public struct VerifyReceiptAppReceipt: Codable, Hashable, Sendable {
    /// The app's Apple id (`adam_id`), 0 in sandbox.
    public var adamId: Int64?
    /// The app's Apple id (`app_item_id`), 0 in sandbox.
    public var appItemId: Int64?
    /// The app version the receipt was made for (`application_version`).
    public var applicationVersion: String?
    /// The app's bundle identifier (`bundle_id`).
    public var bundleId: String?
    /// A unique identifier of the app download (`download_id`).
    public var downloadId: Int64?
    /// When a Volume Purchase Program receipt expires, in ms since 1970 (`expiration_date_ms`).
    public var expirationDateMs: String?
    /// The in-app purchase receipts (`in_app`).
    public var inApp: [VerifyReceiptTransaction]?
    /// The app version the user originally purchased (`original_application_version`).
    public var originalApplicationVersion: String?
    /// When the user originally purchased the app, in ms since 1970 (`original_purchase_date_ms`).
    public var originalPurchaseDateMs: String?
    /// When the user pre-ordered the app, in ms since 1970 (`preorder_date_ms`).
    public var preorderDateMs: String?
    /// When the receipt was created, in ms since 1970 (`receipt_creation_date_ms`).
    public var receiptCreationDateMs: String?
    /// The receipt type (`receipt_type`): `Production`, `ProductionVPP`, `ProductionSandbox`, `ProductionVPPSandbox`.
    public var receiptType: String?
    /// When the request was processed, in ms since 1970 (`request_date_ms`).
    public var requestDateMs: String?
    /// The app version's external identifier (`version_external_identifier`).
    public var versionExternalIdentifier: Int64?

    /// A receipt with the given members.
    public init(
        adamId: Int64? = nil, appItemId: Int64? = nil, applicationVersion: String? = nil, bundleId: String? = nil,
        downloadId: Int64? = nil, expirationDateMs: String? = nil, inApp: [VerifyReceiptTransaction]? = nil,
        originalApplicationVersion: String? = nil, originalPurchaseDateMs: String? = nil,
        preorderDateMs: String? = nil, receiptCreationDateMs: String? = nil, receiptType: String? = nil,
        requestDateMs: String? = nil, versionExternalIdentifier: Int64? = nil
    ) {
        self.adamId = adamId
        self.appItemId = appItemId
        self.applicationVersion = applicationVersion
        self.bundleId = bundleId
        self.downloadId = downloadId
        self.expirationDateMs = expirationDateMs
        self.inApp = inApp
        self.originalApplicationVersion = originalApplicationVersion
        self.originalPurchaseDateMs = originalPurchaseDateMs
        self.preorderDateMs = preorderDateMs
        self.receiptCreationDateMs = receiptCreationDateMs
        self.receiptType = receiptType
        self.requestDateMs = requestDateMs
        self.versionExternalIdentifier = versionExternalIdentifier
    }

    enum CodingKeys: String, CodingKey {
        case adamId = "adam_id"
        case appItemId = "app_item_id"
        case applicationVersion = "application_version"
        case bundleId = "bundle_id"
        case downloadId = "download_id"
        case expirationDateMs = "expiration_date_ms"
        case inApp = "in_app"
        case originalApplicationVersion = "original_application_version"
        case originalPurchaseDateMs = "original_purchase_date_ms"
        case preorderDateMs = "preorder_date_ms"
        case receiptCreationDateMs = "receipt_creation_date_ms"
        case receiptType = "receipt_type"
        case requestDateMs = "request_date_ms"
        case versionExternalIdentifier = "version_external_identifier"
    }

    /// `receipt_creation_date_ms` as a date.
    public var receiptCreationDate: Date? { VerifyReceiptMilliseconds.date(receiptCreationDateMs) }
}

/// One element of `in_app` or `latest_receipt_info` (Apple's `responseBody.Latest_receipt_info`).
/// Apple sends every member as a string; they are kept as such (`…Ms` members are milliseconds since
/// 1970, booleans are `"true"`/`"false"`), with date accessors for the main ones.
public struct VerifyReceiptTransaction: Codable, Hashable, Sendable {
    /// The app account token the app set at purchase (`app_account_token`).
    public var appAccountToken: String?
    /// When Apple refunded the transaction or it was upgraded (`cancellation_date_ms`).
    public var cancellationDateMs: String?
    /// Why it was refunded: `"1"` an issue in the app, `"0"` another reason (`cancellation_reason`).
    public var cancellationReason: String?
    /// When the subscription expires or renews (`expires_date_ms`).
    public var expiresDateMs: String?
    /// `PURCHASED` or `FAMILY_SHARED` (`in_app_ownership_type`).
    public var inAppOwnershipType: String?
    /// Whether the period is an introductory price period (`is_in_intro_offer_period`).
    public var isInIntroOfferPeriod: String?
    /// Whether the period is a free trial (`is_trial_period`).
    public var isTrialPeriod: String?
    /// Whether the subscription was upgraded away from (`is_upgraded`).
    public var isUpgraded: String?
    /// The offer code redeemed (`offer_code_ref_name`).
    public var offerCodeRefName: String?
    /// When the original purchase was made (`original_purchase_date_ms`).
    public var originalPurchaseDateMs: String?
    /// The original transaction identifier (`original_transaction_id`).
    public var originalTransactionId: String?
    /// The product identifier (`product_id`).
    public var productId: String?
    /// The promotional offer redeemed (`promotional_offer_id`).
    public var promotionalOfferId: String?
    /// When the purchase or renewal was made (`purchase_date_ms`).
    public var purchaseDateMs: String?
    /// The number of consumables purchased (`quantity`).
    public var quantity: String?
    /// The subscription group (`subscription_group_identifier`).
    public var subscriptionGroupIdentifier: String?
    /// The transaction identifier (`transaction_id`).
    public var transactionId: String?
    /// Identifies subscription purchase events across devices (`web_order_line_item_id`).
    public var webOrderLineItemId: String?

    /// A transaction with the given members.
    public init(
        appAccountToken: String? = nil, cancellationDateMs: String? = nil, cancellationReason: String? = nil,
        expiresDateMs: String? = nil, inAppOwnershipType: String? = nil, isInIntroOfferPeriod: String? = nil,
        isTrialPeriod: String? = nil, isUpgraded: String? = nil, offerCodeRefName: String? = nil,
        originalPurchaseDateMs: String? = nil, originalTransactionId: String? = nil, productId: String? = nil,
        promotionalOfferId: String? = nil, purchaseDateMs: String? = nil, quantity: String? = nil,
        subscriptionGroupIdentifier: String? = nil, transactionId: String? = nil, webOrderLineItemId: String? = nil
    ) {
        self.appAccountToken = appAccountToken
        self.cancellationDateMs = cancellationDateMs
        self.cancellationReason = cancellationReason
        self.expiresDateMs = expiresDateMs
        self.inAppOwnershipType = inAppOwnershipType
        self.isInIntroOfferPeriod = isInIntroOfferPeriod
        self.isTrialPeriod = isTrialPeriod
        self.isUpgraded = isUpgraded
        self.offerCodeRefName = offerCodeRefName
        self.originalPurchaseDateMs = originalPurchaseDateMs
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.promotionalOfferId = promotionalOfferId
        self.purchaseDateMs = purchaseDateMs
        self.quantity = quantity
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.transactionId = transactionId
        self.webOrderLineItemId = webOrderLineItemId
    }

    enum CodingKeys: String, CodingKey {
        case appAccountToken = "app_account_token"
        case cancellationDateMs = "cancellation_date_ms"
        case cancellationReason = "cancellation_reason"
        case expiresDateMs = "expires_date_ms"
        case inAppOwnershipType = "in_app_ownership_type"
        case isInIntroOfferPeriod = "is_in_intro_offer_period"
        case isTrialPeriod = "is_trial_period"
        case isUpgraded = "is_upgraded"
        case offerCodeRefName = "offer_code_ref_name"
        case originalPurchaseDateMs = "original_purchase_date_ms"
        case originalTransactionId = "original_transaction_id"
        case productId = "product_id"
        case promotionalOfferId = "promotional_offer_id"
        case purchaseDateMs = "purchase_date_ms"
        case quantity
        case subscriptionGroupIdentifier = "subscription_group_identifier"
        case transactionId = "transaction_id"
        case webOrderLineItemId = "web_order_line_item_id"
    }

    /// `purchase_date_ms` as a date.
    public var purchaseDate: Date? { VerifyReceiptMilliseconds.date(purchaseDateMs) }
    /// `expires_date_ms` as a date.
    public var expiresDate: Date? { VerifyReceiptMilliseconds.date(expiresDateMs) }
    /// `cancellation_date_ms` as a date.
    public var cancellationDate: Date? { VerifyReceiptMilliseconds.date(cancellationDateMs) }
}

/// One element of `pending_renewal_info` (Apple's `responseBody.Pending_renewal_info`); members are
/// kept as the strings Apple sends.
public struct VerifyReceiptPendingRenewal: Codable, Hashable, Sendable {
    /// The product the subscription renews to (`auto_renew_product_id`).
    public var autoRenewProductId: String?
    /// `"1"` renews at the end of the period, `"0"` turned off (`auto_renew_status`).
    public var autoRenewStatus: String?
    /// Why the subscription expired, `"1"`–`"5"` (`expiration_intent`).
    public var expirationIntent: String?
    /// When the billing grace period ends (`grace_period_expires_date_ms`).
    public var gracePeriodExpiresDateMs: String?
    /// `"1"` while Apple is retrying billing (`is_in_billing_retry_period`).
    public var isInBillingRetryPeriod: String?
    /// The offer code redeemed (`offer_code_ref_name`).
    public var offerCodeRefName: String?
    /// The original transaction identifier (`original_transaction_id`).
    public var originalTransactionId: String?
    /// Whether the user consented to a price increase, `"1"` or `"0"` (`price_consent_status`).
    public var priceConsentStatus: String?
    /// The product identifier (`product_id`).
    public var productId: String?
    /// The promotional offer redeemed (`promotional_offer_id`).
    public var promotionalOfferId: String?
    /// Whether a price increase was shown to the user, `"1"` or `"0"` (`price_increase_status`).
    public var priceIncreaseStatus: String?

    /// A pending renewal with the given members.
    public init(
        autoRenewProductId: String? = nil, autoRenewStatus: String? = nil, expirationIntent: String? = nil,
        gracePeriodExpiresDateMs: String? = nil, isInBillingRetryPeriod: String? = nil,
        offerCodeRefName: String? = nil, originalTransactionId: String? = nil, priceConsentStatus: String? = nil,
        productId: String? = nil, promotionalOfferId: String? = nil, priceIncreaseStatus: String? = nil
    ) {
        self.autoRenewProductId = autoRenewProductId
        self.autoRenewStatus = autoRenewStatus
        self.expirationIntent = expirationIntent
        self.gracePeriodExpiresDateMs = gracePeriodExpiresDateMs
        self.isInBillingRetryPeriod = isInBillingRetryPeriod
        self.offerCodeRefName = offerCodeRefName
        self.originalTransactionId = originalTransactionId
        self.priceConsentStatus = priceConsentStatus
        self.productId = productId
        self.promotionalOfferId = promotionalOfferId
        self.priceIncreaseStatus = priceIncreaseStatus
    }

    enum CodingKeys: String, CodingKey {
        case autoRenewProductId = "auto_renew_product_id"
        case autoRenewStatus = "auto_renew_status"
        case expirationIntent = "expiration_intent"
        case gracePeriodExpiresDateMs = "grace_period_expires_date_ms"
        case isInBillingRetryPeriod = "is_in_billing_retry_period"
        case offerCodeRefName = "offer_code_ref_name"
        case originalTransactionId = "original_transaction_id"
        case priceConsentStatus = "price_consent_status"
        case productId = "product_id"
        case promotionalOfferId = "promotional_offer_id"
        case priceIncreaseStatus = "price_increase_status"
    }

    /// `grace_period_expires_date_ms` as a date.
    public var gracePeriodExpiresDate: Date? { VerifyReceiptMilliseconds.date(gracePeriodExpiresDateMs) }
}

/// verifyReceipt's dates: decimal strings of milliseconds since 1970.
enum VerifyReceiptMilliseconds {
    static func date(_ text: String?) -> Date? {
        guard let text, let milliseconds = Int64(text) else { return nil }
        return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
