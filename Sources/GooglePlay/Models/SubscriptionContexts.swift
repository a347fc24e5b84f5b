public import Foundation

/// Context of a paused subscription.
public struct PausedStateContext: Codable, Hashable, Sendable {
    /// RFC 3339 time at which the subscription resumes automatically.
    public var autoResumeTime: String?

    /// Creates a `PausedStateContext`; every field defaults to `nil`.
    public init(
        autoResumeTime: String? = nil
    ) {
        self.autoResumeTime = autoResumeTime
    }

    /// `autoResumeTime` parsed as an RFC 3339 timestamp; `nil` when absent or malformed.
    public var autoResumeDate: Date? { autoResumeTime.flatMap(RFC3339.date(from:)) }
}

/// Why a subscription was canceled; exactly one field is set.
public struct CanceledStateContext: Codable, Hashable, Sendable {
    /// Canceled by the user.
    public var userInitiatedCancellation: UserInitiatedCancellation?
    /// Canceled by the system, for example for a billing problem.
    public var systemInitiatedCancellation: SystemInitiatedCancellation?
    /// Canceled by the developer.
    public var developerInitiatedCancellation: DeveloperInitiatedCancellation?
    /// Replaced by a new subscription.
    public var replacementCancellation: ReplacementCancellation?

    /// Creates a `CanceledStateContext`; every field defaults to `nil`.
    public init(
        userInitiatedCancellation: UserInitiatedCancellation? = nil,
        systemInitiatedCancellation: SystemInitiatedCancellation? = nil,
        developerInitiatedCancellation: DeveloperInitiatedCancellation? = nil,
        replacementCancellation: ReplacementCancellation? = nil
    ) {
        self.userInitiatedCancellation = userInitiatedCancellation
        self.systemInitiatedCancellation = systemInitiatedCancellation
        self.developerInitiatedCancellation = developerInitiatedCancellation
        self.replacementCancellation = replacementCancellation
    }
}

/// A cancellation initiated by the user.
public struct UserInitiatedCancellation: Codable, Hashable, Sendable {
    /// Answer to the cancellation survey, if given.
    public var cancelSurveyResult: CancelSurveyResult?
    /// RFC 3339 time the user canceled; access may continue until expiry.
    public var cancelTime: String?

    /// Creates a `UserInitiatedCancellation`; every field defaults to `nil`.
    public init(
        cancelSurveyResult: CancelSurveyResult? = nil,
        cancelTime: String? = nil
    ) {
        self.cancelSurveyResult = cancelSurveyResult
        self.cancelTime = cancelTime
    }

    /// `cancelTime` parsed as an RFC 3339 timestamp; `nil` when absent or malformed.
    public var cancelDate: Date? { cancelTime.flatMap(RFC3339.date(from:)) }
}

/// Result of the cancellation survey.
public struct CancelSurveyResult: Codable, Hashable, Sendable {
    /// Reason the user selected.
    public var reason: Reason?
    /// Free-form answer; only set for `CANCEL_SURVEY_REASON_OTHERS`.
    public var reasonUserInput: String?

    /// Creates a `CancelSurveyResult`; every field defaults to `nil`.
    public init(
        reason: Reason? = nil,
        reasonUserInput: String? = nil
    ) {
        self.reason = reason
        self.reasonUserInput = reasonUserInput
    }
}

extension CancelSurveyResult {
    /// Reason selected in the cancellation survey. Open: unknown values decode and keep their raw value.
    public struct Reason: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The raw value Google sends.
        public let rawValue: String
        /// Wraps any raw value, including ones this type does not name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Unspecified.
        public static let unspecified = Self(rawValue: "CANCEL_SURVEY_REASON_UNSPECIFIED")
        /// Not enough usage of the subscription.
        public static let notEnoughUsage = Self(rawValue: "CANCEL_SURVEY_REASON_NOT_ENOUGH_USAGE")
        /// Technical issues while using the app.
        public static let technicalIssues = Self(rawValue: "CANCEL_SURVEY_REASON_TECHNICAL_ISSUES")
        /// Cost-related reasons.
        public static let costRelated = Self(rawValue: "CANCEL_SURVEY_REASON_COST_RELATED")
        /// The user found a better app.
        public static let foundBetterApp = Self(rawValue: "CANCEL_SURVEY_REASON_FOUND_BETTER_APP")
        /// Other reasons.
        public static let others = Self(rawValue: "CANCEL_SURVEY_REASON_OTHERS")
        /// The raw value as text.
        public var description: String { rawValue }
    }
}

/// A cancellation initiated by Google (an empty object).
public struct SystemInitiatedCancellation: Codable, Hashable, Sendable {
    /// Creates a `SystemInitiatedCancellation`; every field defaults to `nil`.
    public init() {}
}

/// A cancellation initiated by the developer (an empty object).
public struct DeveloperInitiatedCancellation: Codable, Hashable, Sendable {
    /// Creates a `DeveloperInitiatedCancellation`; every field defaults to `nil`.
    public init() {}
}

/// A cancellation caused by a subscription replacement (an empty object).
public struct ReplacementCancellation: Codable, Hashable, Sendable {
    /// Creates a `ReplacementCancellation`; every field defaults to `nil`.
    public init() {}
}

/// Context of a subscription in grace period.
public struct InGracePeriodStateContext: Codable, Hashable, Sendable {
    /// Set when the renewal payment was declined.
    public var renewalDeclined: RenewalDeclinedContext?

    /// Creates a `InGracePeriodStateContext`; every field defaults to `nil`.
    public init(
        renewalDeclined: RenewalDeclinedContext? = nil
    ) {
        self.renewalDeclined = renewalDeclined
    }
}

/// Context of a subscription on hold.
public struct OnHoldStateContext: Codable, Hashable, Sendable {
    /// Set when the renewal payment was declined.
    public var renewalDeclined: RenewalDeclinedContext?

    /// Creates a `OnHoldStateContext`; every field defaults to `nil`.
    public init(
        renewalDeclined: RenewalDeclinedContext? = nil
    ) {
        self.renewalDeclined = renewalDeclined
    }
}

/// A declined renewal payment.
public struct RenewalDeclinedContext: Codable, Hashable, Sendable {
    /// Id of the pending or failed order that caused the state.
    public var pendingOrderId: String?

    /// Creates a `RenewalDeclinedContext`; every field defaults to `nil`.
    public init(
        pendingOrderId: String? = nil
    ) {
        self.pendingOrderId = pendingOrderId
    }
}

/// Marks a subscription purchase as a test purchase (an empty object).
public struct TestPurchase: Codable, Hashable, Sendable {
    /// Creates a `TestPurchase`; every field defaults to `nil`.
    public init() {}
}

/// The user's identifiers in the developer's service.
public struct ExternalAccountIdentifiers: Codable, Hashable, Sendable {
    /// Account id in the third-party service; only with account linking.
    public var externalAccountId: String?
    /// Obfuscated account id set with `setObfuscatedAccountId` (or from account linking).
    public var obfuscatedExternalAccountId: String?
    /// Obfuscated profile id set with `setObfuscatedProfileId`.
    public var obfuscatedExternalProfileId: String?

    /// Creates a `ExternalAccountIdentifiers`; every field defaults to `nil`.
    public init(
        externalAccountId: String? = nil,
        obfuscatedExternalAccountId: String? = nil,
        obfuscatedExternalProfileId: String? = nil
    ) {
        self.externalAccountId = externalAccountId
        self.obfuscatedExternalAccountId = obfuscatedExternalAccountId
        self.obfuscatedExternalProfileId = obfuscatedExternalProfileId
    }
}

/// User profile of a purchase made with Subscribe with Google.
public struct SubscribeWithGoogleInfo: Codable, Hashable, Sendable {
    /// Google profile id of the user.
    public var profileId: String?
    /// Profile name of the user.
    public var profileName: String?
    /// Email address of the user.
    public var emailAddress: String?
    /// Given name of the user.
    public var givenName: String?
    /// Family name of the user.
    public var familyName: String?

    /// Creates a `SubscribeWithGoogleInfo`; every field defaults to `nil`.
    public init(
        profileId: String? = nil,
        profileName: String? = nil,
        emailAddress: String? = nil,
        givenName: String? = nil,
        familyName: String? = nil
    ) {
        self.profileId = profileId
        self.profileName = profileName
        self.emailAddress = emailAddress
        self.givenName = givenName
        self.familyName = familyName
    }
}

/// Context of a purchase made outside the app.
public struct OutOfAppPurchaseContext: Codable, Hashable, Sendable {
    /// Account identifiers of the last expired subscription for this product.
    public var expiredExternalAccountIdentifiers: ExternalAccountIdentifiers?
    /// Purchase token of the last expired subscription; only for matching your own records.
    public var expiredPurchaseToken: String?

    /// Creates a `OutOfAppPurchaseContext`; every field defaults to `nil`.
    public init(
        expiredExternalAccountIdentifiers: ExternalAccountIdentifiers? = nil,
        expiredPurchaseToken: String? = nil
    ) {
        self.expiredExternalAccountIdentifiers = expiredExternalAccountIdentifiers
        self.expiredPurchaseToken = expiredPurchaseToken
    }
}
