public import Foundation

/// The decoded payload of an App Store Server Notification V2 (Apple's `responseBodyV2DecodedPayload`).
/// `data`, `summary`, `externalPurchaseToken` and `appData` are mutually exclusive.
public struct NotificationPayload: Codable, Hashable, Sendable {
    /// The event the notification reports.
    public let notificationType: NotificationType?
    /// Details of the event, for select notification types.
    public let subtype: NotificationSubtype?
    /// The unique identifier of the notification (a UUID string); retries repeat it.
    public let notificationUUID: String?
    /// The notification format version, `"2.0"`.
    public let version: String?
    /// When the App Store signed the notification.
    public let signedDate: Date?
    /// App metadata and signed transaction and renewal information, for In-App Purchase events.
    public let data: NotificationData?
    /// The result of a renewal-date extension for all subscribers (`RENEWAL_EXTENSION` / `SUMMARY`).
    public let summary: NotificationSummary?
    /// The external purchase token (`EXTERNAL_PURCHASE_TOKEN`).
    public let externalPurchaseToken: ExternalPurchaseToken?
    /// App metadata and the signed app transaction (`RESCIND_CONSENT`).
    public let appData: AppData?

    /// Creates a value; every field is optional.
    public init(
        notificationType: NotificationType? = nil,
        subtype: NotificationSubtype? = nil,
        notificationUUID: String? = nil,
        version: String? = nil,
        signedDate: Date? = nil,
        data: NotificationData? = nil,
        summary: NotificationSummary? = nil,
        externalPurchaseToken: ExternalPurchaseToken? = nil,
        appData: AppData? = nil
    ) {
        self.notificationType = notificationType
        self.subtype = subtype
        self.notificationUUID = notificationUUID
        self.version = version
        self.signedDate = signedDate
        self.data = data
        self.summary = summary
        self.externalPurchaseToken = externalPurchaseToken
        self.appData = appData
    }
}

/// App metadata and signed transaction and renewal information of a notification (Apple's `data`).
public struct NotificationData: Codable, Hashable, Sendable {
    /// The App Store's identifier of the app (absent in the sandbox).
    public let appAppleId: Int64?
    /// The app's bundle identifier.
    public let bundleId: String?
    /// The build version of the app bundle.
    public let bundleVersion: String?
    /// The customer's reason for a refund request (`CONSUMPTION_REQUEST` only).
    public let consumptionRequestReason: ConsumptionRequestReason?
    /// The server environment the notification applies to.
    public let environment: Environment?
    /// The signed renewal information (JWS), for auto-renewable subscriptions; decode it separately.
    public let signedRenewalInfo: String?
    /// The signed transaction information (JWS); decode it separately.
    public let signedTransactionInfo: String?
    /// The subscription's status as of the notification's `signedDate`, for auto-renewable subscriptions.
    public let status: SubscriptionStatus?

    /// Creates a value; every field is optional.
    public init(
        appAppleId: Int64? = nil,
        bundleId: String? = nil,
        bundleVersion: String? = nil,
        consumptionRequestReason: ConsumptionRequestReason? = nil,
        environment: Environment? = nil,
        signedRenewalInfo: String? = nil,
        signedTransactionInfo: String? = nil,
        status: SubscriptionStatus? = nil
    ) {
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.bundleVersion = bundleVersion
        self.consumptionRequestReason = consumptionRequestReason
        self.environment = environment
        self.signedRenewalInfo = signedRenewalInfo
        self.signedTransactionInfo = signedTransactionInfo
        self.status = status
    }
}

/// The result of a request to extend renewal dates for all active subscribers (Apple's `summary`).
public struct NotificationSummary: Codable, Hashable, Sendable {
    /// The UUID string of the extension request you made.
    public let requestIdentifier: String?
    /// The server environment the notification applies to.
    public let environment: Environment?
    /// The App Store's identifier of the app (absent in the sandbox).
    public let appAppleId: Int64?
    /// The app's bundle identifier.
    public let bundleId: String?
    /// The product identifier of the subscription the extension applies to.
    public let productId: String?
    /// The storefront country codes the extension was limited to; absent means all storefronts.
    public let storefrontCountryCodes: [String]?
    /// The number of subscriptions that failed to get the extension.
    public let failedCount: Int64?
    /// The number of subscriptions that got the extension.
    public let succeededCount: Int64?

    /// Creates a value; every field is optional.
    public init(
        requestIdentifier: String? = nil,
        environment: Environment? = nil,
        appAppleId: Int64? = nil,
        bundleId: String? = nil,
        productId: String? = nil,
        storefrontCountryCodes: [String]? = nil,
        failedCount: Int64? = nil,
        succeededCount: Int64? = nil
    ) {
        self.requestIdentifier = requestIdentifier
        self.environment = environment
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.productId = productId
        self.storefrontCountryCodes = storefrontCountryCodes
        self.failedCount = failedCount
        self.succeededCount = succeededCount
    }
}

/// An external purchase token carried by an `EXTERNAL_PURCHASE_TOKEN` notification (Apple's `externalPurchaseToken`).
public struct ExternalPurchaseToken: Codable, Hashable, Sendable {
    /// The token's unique identifier, used when reporting it.
    public let externalPurchaseId: String?
    /// When the system created the token.
    public let tokenCreationDate: Date?
    /// The App Store's identifier of the app the token was generated for.
    public let appAppleId: Int64?
    /// The bundle identifier of the app the token was generated for.
    public let bundleId: String?
    /// When the token expires (custom link tokens only).
    public let tokenExpirationDate: Date?
    /// The kind of custom link token (custom link tokens only).
    public let tokenType: ExternalPurchaseTokenType?

    /// Creates a value; every field is optional.
    public init(
        externalPurchaseId: String? = nil,
        tokenCreationDate: Date? = nil,
        appAppleId: Int64? = nil,
        bundleId: String? = nil,
        tokenExpirationDate: Date? = nil,
        tokenType: ExternalPurchaseTokenType? = nil
    ) {
        self.externalPurchaseId = externalPurchaseId
        self.tokenCreationDate = tokenCreationDate
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.tokenExpirationDate = tokenExpirationDate
        self.tokenType = tokenType
    }
}

/// App metadata and the signed app transaction of a `RESCIND_CONSENT` notification (Apple's `appData`).
public struct AppData: Codable, Hashable, Sendable {
    /// The App Store's identifier of the app (absent in the sandbox).
    public let appAppleId: Int64?
    /// The app's bundle identifier.
    public let bundleId: String?
    /// The server environment the notification applies to.
    public let environment: Environment?
    /// The signed app transaction (JWS); decode it separately.
    public let signedAppTransactionInfo: String?

    /// Creates a value; every field is optional.
    public init(
        appAppleId: Int64? = nil,
        bundleId: String? = nil,
        environment: Environment? = nil,
        signedAppTransactionInfo: String? = nil
    ) {
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.environment = environment
        self.signedAppTransactionInfo = signedAppTransactionInfo
    }
}
