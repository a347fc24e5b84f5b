public import Foundation

// Which identity fields each payload type carries, following Apple's own libraries: a transaction
// is checked for bundle id and environment; a renewal info for environment; an app transaction, a
// notification and a retention request also for the app Apple id (in production).

extension JWSTransaction: SignedPayload {
    public var verificationDate: Date? { signedDate }
    public var claimedIdentity: ClaimedAppIdentity {
        ClaimedAppIdentity(bundleId: .carried(bundleId), environment: .carried(environment))
    }
}

extension JWSRenewalInfo: SignedPayload {
    public var verificationDate: Date? { signedDate }
    public var claimedIdentity: ClaimedAppIdentity { ClaimedAppIdentity(environment: .carried(environment)) }
}

extension AppTransaction: SignedPayload {
    public var verificationDate: Date? { receiptCreationDate }
    public var claimedIdentity: ClaimedAppIdentity {
        ClaimedAppIdentity(
            bundleId: .carried(bundleId), appAppleId: .carried(appAppleId), environment: .carried(receiptType))
    }
}

extension RealtimeRequest: SignedPayload {
    public var verificationDate: Date? { signedDate }
    public var claimedIdentity: ClaimedAppIdentity {
        ClaimedAppIdentity(appAppleId: .carried(appAppleId), environment: .carried(environment))
    }
}

extension NotificationPayload: SignedPayload {
    public var verificationDate: Date? { signedDate }

    /// Taken from `data`, `summary`, `externalPurchaseToken` or `appData`, whichever is present.
    /// An external purchase token carries no environment: its id starts with "SANDBOX" in sandbox.
    public var claimedIdentity: ClaimedAppIdentity {
        if let data {
            return ClaimedAppIdentity(
                bundleId: .carried(data.bundleId), appAppleId: .carried(data.appAppleId),
                environment: .carried(data.environment))
        }
        if let summary {
            return ClaimedAppIdentity(
                bundleId: .carried(summary.bundleId), appAppleId: .carried(summary.appAppleId),
                environment: .carried(summary.environment))
        }
        if let externalPurchaseToken {
            let isSandbox = externalPurchaseToken.externalPurchaseId?.hasPrefix("SANDBOX") ?? false
            return ClaimedAppIdentity(
                bundleId: .carried(externalPurchaseToken.bundleId),
                appAppleId: .carried(externalPurchaseToken.appAppleId),
                environment: .carried(isSandbox ? .sandbox : .production))
        }
        if let appData {
            return ClaimedAppIdentity(
                bundleId: .carried(appData.bundleId), appAppleId: .carried(appData.appAppleId),
                environment: .carried(appData.environment))
        }
        // A notification with none of the four names no app: every configured check fails.
        return ClaimedAppIdentity(bundleId: .carried(nil), appAppleId: .carried(nil), environment: .carried(nil))
    }
}
