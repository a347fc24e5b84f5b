import Foundation

/// The kinds of payload the App Store signs.
public enum SignedPayloadKind: String, Sendable, CaseIterable {
    case notification
    case transaction
    case renewalInfo = "renewal-info"
    case appTransaction = "app-transaction"
    case realtimeRequest = "realtime-request"

    /// Guesses the kind from the members of a token's payload, before verification. Only for
    /// choosing which type to verify as (the CLI's `--type auto`); the verification decides.
    public static func guess(fromUnverifiedToken token: String) -> SignedPayloadKind? {
        let parts = token.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ".")
        guard parts.count == 3, let payload = Base64URL.decode(parts[1]),
            let object = try? JSONSerialization.jsonObject(with: payload) as? [String: Any]
        else { return nil }
        let keys = Set(object.keys)
        if keys.contains("notificationType") || keys.contains("notificationUUID") { return .notification }
        if keys.contains("receiptType") || keys.contains("receiptCreationDate") { return .appTransaction }
        if keys.contains("transactionId") || keys.contains("purchaseDate") || keys.contains("type") {
            return .transaction
        }
        if keys.contains("autoRenewStatus") || keys.contains("renewalDate") || keys.contains("autoRenewProductId") {
            return .renewalInfo
        }
        if keys.contains("requestIdentifier") && keys.contains("userLocale") { return .realtimeRequest }
        if keys.contains("bundleId") { return .transaction }
        if keys.contains("environment") { return .renewalInfo }
        return nil
    }
}
