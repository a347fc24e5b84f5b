public import Foundation

/// A notification whose signed payload and every nested signed field verified.
public struct VerifiedNotification: Sendable, Hashable {
    /// The notification's own payload.
    public let payload: NotificationPayload
    /// The decoded `data.signedTransactionInfo`, if present.
    public let transaction: JWSTransaction?
    /// The decoded `data.signedRenewalInfo`, if present.
    public let renewalInfo: JWSRenewalInfo?
    /// The decoded `appData.signedAppTransactionInfo`, if present.
    public let appTransaction: AppTransaction?
}

extension VerifiedNotification {
    /// The JSON each nested payload was signed as (nil where the notification has none).
    public struct NestedJSON: Sendable, Hashable {
        public let transaction: Data?
        public let renewalInfo: Data?
        public let appTransaction: Data?
    }
}

extension SignedDataVerifier {
    /// Verifies a notification's `signedPayload`, then each signed field nested in it with the same
    /// configuration. A nested failure keeps its reason; its detail names the field.
    public func verifyNotification(_ signedPayload: String) async throws(SignedDataVerificationError)
        -> VerifiedNotification
    {
        try await verifyNotificationKeepingJSON(signedPayload).notification
    }

    /// ``verifyNotification(_:)``, also returning the nested payloads' JSON as signed: what a caller
    /// keeping the decoded payloads can store without encoding them again.
    public func verifyNotificationKeepingJSON(_ signedPayload: String) async throws(SignedDataVerificationError)
        -> (notification: VerifiedNotification, nestedJSON: VerifiedNotification.NestedJSON)
    {
        try await verifyNotificationKeepingJSON(
            UnverifiedSignedData(parsing: signedPayload, maxLength: configuration.maxInputBytes))
    }

    /// ``verifyNotificationKeepingJSON(_:)-(String)`` of a notification already read (to pick this
    /// verifier by the identity it claims): its payload is not decoded again.
    public func verifyNotificationKeepingJSON(
        _ unverified: UnverifiedSignedData<NotificationPayload>
    ) async throws(SignedDataVerificationError)
        -> (notification: VerifiedNotification, nestedJSON: VerifiedNotification.NestedJSON)
    {
        let payload = try await verifyKeepingJSON(unverified).payload
        let transaction: (JWSTransaction, Data)? = try await verifyNested(
            payload.data?.signedTransactionInfo, "data.signedTransactionInfo")
        let renewalInfo: (JWSRenewalInfo, Data)? = try await verifyNested(
            payload.data?.signedRenewalInfo, "data.signedRenewalInfo")
        let appTransaction: (AppTransaction, Data)? = try await verifyNested(
            payload.appData?.signedAppTransactionInfo, "appData.signedAppTransactionInfo")
        return (
            VerifiedNotification(
                payload: payload, transaction: transaction?.0, renewalInfo: renewalInfo?.0,
                appTransaction: appTransaction?.0),
            VerifiedNotification.NestedJSON(
                transaction: transaction?.1, renewalInfo: renewalInfo?.1, appTransaction: appTransaction?.1)
        )
    }

    private func verifyNested<Payload: SignedPayload>(
        _ token: String?, _ field: String
    ) async throws(SignedDataVerificationError) -> (Payload, Data)? {
        guard let token else { return nil }
        do {
            return try await verifyKeepingJSON(token, as: Payload.self)
        } catch {
            throw SignedDataVerificationError(error.reason, "\(field): \(error.detail)")
        }
    }
}

extension VerifiedNotification: Codable {
    /// The same notification without the signed strings whose decoded, verified forms it already
    /// holds (`data.signedTransactionInfo`, `data.signedRenewalInfo`,
    /// `appData.signedAppTransactionInfo`): what is worth keeping once verification is done.
    public var withoutSignedFields: VerifiedNotification {
        VerifiedNotification(
            payload: payload.withoutSignedFields, transaction: transaction, renewalInfo: renewalInfo,
            appTransaction: appTransaction)
    }
}

extension NotificationPayload {
    /// The payload without `data.signedTransactionInfo`, `data.signedRenewalInfo` and
    /// `appData.signedAppTransactionInfo`.
    public var withoutSignedFields: NotificationPayload {
        let data = data.map {
            NotificationData(
                appAppleId: $0.appAppleId, bundleId: $0.bundleId, bundleVersion: $0.bundleVersion,
                consumptionRequestReason: $0.consumptionRequestReason, environment: $0.environment,
                status: $0.status)
        }
        let appData = appData.map {
            AppData(appAppleId: $0.appAppleId, bundleId: $0.bundleId, environment: $0.environment)
        }
        return NotificationPayload(
            notificationType: notificationType, subtype: subtype, notificationUUID: notificationUUID,
            version: version, signedDate: signedDate, data: data, summary: summary,
            externalPurchaseToken: externalPurchaseToken, appData: appData)
    }
}
