/// An App Store Server API `errorCode`. Open: a code Apple adds later is kept as its raw value.
public struct APIErrorCode: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: Int64
    public init(rawValue: Int64) { self.rawValue = rawValue }
    public var description: String { String(rawValue) }

    public static let generalBadRequest = Self(rawValue: 4_000_000)
    public static let invalidAppIdentifier = Self(rawValue: 4_000_002)
    public static let invalidRequestRevision = Self(rawValue: 4_000_005)
    public static let invalidTransactionId = Self(rawValue: 4_000_006)
    public static let invalidOriginalTransactionId = Self(rawValue: 4_000_008)
    public static let invalidExtendByDays = Self(rawValue: 4_000_009)
    public static let invalidExtendReasonCode = Self(rawValue: 4_000_010)
    public static let invalidRequestIdentifier = Self(rawValue: 4_000_011)
    public static let startDateTooFarInPast = Self(rawValue: 4_000_012)
    public static let startDateAfterEndDate = Self(rawValue: 4_000_013)
    public static let invalidPaginationToken = Self(rawValue: 4_000_014)
    public static let invalidStartDate = Self(rawValue: 4_000_015)
    public static let invalidEndDate = Self(rawValue: 4_000_016)
    public static let paginationTokenExpired = Self(rawValue: 4_000_017)
    public static let invalidNotificationType = Self(rawValue: 4_000_018)
    public static let multipleFiltersSupplied = Self(rawValue: 4_000_019)
    public static let invalidTestNotificationToken = Self(rawValue: 4_000_020)
    public static let invalidSort = Self(rawValue: 4_000_021)
    public static let invalidProductType = Self(rawValue: 4_000_022)
    public static let invalidProductId = Self(rawValue: 4_000_023)
    public static let invalidSubscriptionGroupIdentifier = Self(rawValue: 4_000_024)
    /// Deprecated by Apple with the `exclude-revoked` parameter.
    public static let invalidExcludeRevoked = Self(rawValue: 4_000_025)
    public static let invalidInAppOwnershipType = Self(rawValue: 4_000_026)
    public static let invalidEmptyStorefrontCountryCodeList = Self(rawValue: 4_000_027)
    public static let invalidStorefrontCountryCode = Self(rawValue: 4_000_028)
    public static let invalidRevoked = Self(rawValue: 4_000_030)
    public static let invalidStatus = Self(rawValue: 4_000_031)
    public static let invalidAccountTenure = Self(rawValue: 4_000_032)
    public static let invalidAppAccountToken = Self(rawValue: 4_000_033)
    public static let invalidConsumptionStatus = Self(rawValue: 4_000_034)
    public static let invalidCustomerConsented = Self(rawValue: 4_000_035)
    public static let invalidDeliveryStatus = Self(rawValue: 4_000_036)
    public static let invalidLifetimeDollarsPurchased = Self(rawValue: 4_000_037)
    public static let invalidLifetimeDollarsRefunded = Self(rawValue: 4_000_038)
    public static let invalidPlatform = Self(rawValue: 4_000_039)
    public static let invalidPlayTime = Self(rawValue: 4_000_040)
    public static let invalidSampleContentProvided = Self(rawValue: 4_000_041)
    public static let invalidUserStatus = Self(rawValue: 4_000_042)
    public static let invalidTransactionNotConsumable = Self(rawValue: 4_000_043)
    public static let invalidTransactionTypeNotSupported = Self(rawValue: 4_000_047)
    public static let appTransactionIdNotSupported = Self(rawValue: 4_000_048)
    /// Set App Account Token: the token is not a UUID.
    public static let invalidAppAccountTokenUUID = Self(rawValue: 4_000_183)
    /// Set App Account Token: a family-shared transaction, which the endpoint doesn't support.
    public static let familyTransactionNotSupported = Self(rawValue: 4_000_185)
    /// Set App Account Token: the id is not an original transaction id.
    public static let transactionIdIsNotOriginalTransactionId = Self(rawValue: 4_000_187)
    /// Send Consumption Information: a `consumptionPercentage` for an auto-renewable subscription.
    public static let consumptionPercentageAutoRenewableSubscription = Self(rawValue: 4_000_209)
    public static let subscriptionExtensionIneligible = Self(rawValue: 4_030_004)
    public static let subscriptionMaxExtension = Self(rawValue: 4_030_005)
    public static let familySharedSubscriptionExtensionIneligible = Self(rawValue: 4_030_007)
    public static let accountNotFound = Self(rawValue: 4_040_001)
    /// Retryable.
    public static let accountNotFoundRetryable = Self(rawValue: 4_040_002)
    public static let appNotFound = Self(rawValue: 4_040_003)
    /// Retryable.
    public static let appNotFoundRetryable = Self(rawValue: 4_040_004)
    public static let originalTransactionIdNotFound = Self(rawValue: 4_040_005)
    /// Retryable.
    public static let originalTransactionIdNotFoundRetryable = Self(rawValue: 4_040_006)
    public static let serverNotificationURLNotFound = Self(rawValue: 4_040_007)
    public static let testNotificationNotFound = Self(rawValue: 4_040_008)
    public static let statusRequestNotFound = Self(rawValue: 4_040_009)
    public static let transactionIdNotFound = Self(rawValue: 4_040_010)
    /// Retryable after the `Retry-After` interval.
    public static let rateLimitExceeded = Self(rawValue: 4_290_000)
    public static let generalInternal = Self(rawValue: 5_000_000)
    /// Retryable.
    public static let generalInternalRetryable = Self(rawValue: 5_000_001)

    /// Whether Apple documents the error as one to retry.
    public var isRetryable: Bool {
        switch self {
        case .accountNotFoundRetryable, .appNotFoundRetryable, .originalTransactionIdNotFoundRetryable,
            .rateLimitExceeded, .generalInternalRetryable:
            return true
        default:
            return false
        }
    }
}
