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
        IdentityFields(
            data: data.map { .init(bundleId: $0.bundleId, appAppleId: $0.appAppleId, environment: $0.environment) },
            summary: summary.map {
                .init(bundleId: $0.bundleId, appAppleId: $0.appAppleId, environment: $0.environment)
            },
            externalPurchaseToken: externalPurchaseToken.map {
                .init(bundleId: $0.bundleId, appAppleId: $0.appAppleId, externalPurchaseId: $0.externalPurchaseId)
            },
            appData: appData.map {
                .init(bundleId: $0.bundleId, appAppleId: $0.appAppleId, environment: $0.environment)
            }
        ).claimedIdentity
    }

    /// Only the identity fields of the four parts: for a caller that wants the claim alone
    /// (``ClaimedAppIdentity/unverified(_:as:maxLength:)``). A caller that goes on to verify reads
    /// the token with ``UnverifiedSignedData`` instead, whose one decoding serves both.
    public static func unverifiedClaim(fromJSON json: Data) throws -> ClaimedAppIdentity {
        try AppStoreJSON.makeDecoder().decode(IdentityFields.self, from: json).claimedIdentity
    }

    /// The fields of a notification its claimed identity is made of.
    struct IdentityFields: Decodable {
        struct Part: Decodable {
            var bundleId: String?
            var appAppleId: Int64?
            var environment: Environment?
            var externalPurchaseId: String?
        }

        var data: Part?
        var summary: Part?
        var externalPurchaseToken: Part?
        var appData: Part?

        var claimedIdentity: ClaimedAppIdentity {
            if let part = data ?? summary {
                return ClaimedAppIdentity(
                    bundleId: .carried(part.bundleId), appAppleId: .carried(part.appAppleId),
                    environment: .carried(part.environment))
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
}
