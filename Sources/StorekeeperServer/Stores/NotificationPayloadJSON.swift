public import AppStoreServer
public import Foundation
import Storekeeper

/// A notification's payload as JSON, byte for byte what `AppStoreJSON.makeEncoder()` writes
/// (sorted keys, dates as whole milliseconds, nil members left out), written directly: the
/// encoder's generic machinery, run on every webhook for the kept record
/// (``VerifiedNotificationRecord``), was 3 % of the ingest benchmark's process.
/// `NotificationPayloadJSONTests` compares the two on every member and on random payloads.
@_spi(Benchmarks) public enum NotificationPayloadJSON {
    public static func data(_ payload: NotificationPayload) throws(ServerError) -> Data {
        do {
            return try SortedKeysJSONWriter.data(capacity: 1024) { try $0.write(payload) }
        } catch let error as ServerError {
            throw error
        } catch {
            throw ServerError(.malformedPayload, "the verified notification cannot be stored: \(error)")
        }
    }
}

extension SortedKeysJSONWriter {
    // Each object's members in the UTF-8 byte order of their names, as the encoder sorts them.

    fileprivate mutating func write(_ payload: NotificationPayload) throws(ServerError) {
        beginObject()
        if let appData = payload.appData {
            key("appData")
            write(appData)
        }
        if let data = payload.data {
            key("data")
            write(data)
        }
        if let token = payload.externalPurchaseToken {
            key("externalPurchaseToken")
            try write(token)
        }
        member("notificationType", payload.notificationType)
        member("notificationUUID", payload.notificationUUID)
        try member("signedDate", milliseconds: payload.signedDate)
        member("subtype", payload.subtype)
        if let summary = payload.summary {
            key("summary")
            write(summary)
        }
        member("version", payload.version)
        endObject()
    }

    private mutating func write(_ appData: AppData) {
        beginObject()
        member("appAppleId", appData.appAppleId.map(Int.init))
        member("bundleId", appData.bundleId)
        member("environment", appData.environment)
        member("signedAppTransactionInfo", appData.signedAppTransactionInfo)
        endObject()
    }

    private mutating func write(_ data: NotificationData) {
        beginObject()
        member("appAppleId", data.appAppleId.map(Int.init))
        member("bundleId", data.bundleId)
        member("bundleVersion", data.bundleVersion)
        member("consumptionRequestReason", data.consumptionRequestReason)
        member("environment", data.environment)
        member("signedRenewalInfo", data.signedRenewalInfo)
        member("signedTransactionInfo", data.signedTransactionInfo)
        member("status", data.status.map { Int($0.rawValue) })
        endObject()
    }

    private mutating func write(_ token: ExternalPurchaseToken) throws(ServerError) {
        beginObject()
        member("appAppleId", token.appAppleId.map(Int.init))
        member("bundleId", token.bundleId)
        member("externalPurchaseId", token.externalPurchaseId)
        try member("tokenCreationDate", milliseconds: token.tokenCreationDate)
        try member("tokenExpirationDate", milliseconds: token.tokenExpirationDate)
        member("tokenType", token.tokenType)
        endObject()
    }

    private mutating func write(_ summary: NotificationSummary) {
        beginObject()
        member("appAppleId", summary.appAppleId.map(Int.init))
        member("bundleId", summary.bundleId)
        member("environment", summary.environment)
        member("failedCount", summary.failedCount.map(Int.init))
        member("productId", summary.productId)
        member("requestIdentifier", summary.requestIdentifier)
        if let codes = summary.storefrontCountryCodes { member("storefrontCountryCodes", codes) }
        member("succeededCount", summary.succeededCount.map(Int.init))
        endObject()
    }

    /// A date as the App Store writes it; one that whole milliseconds cannot hold is refused, as
    /// the encoder refuses it.
    private mutating func member(_ name: StaticString, milliseconds date: Date?) throws(ServerError) {
        guard let date else { return }
        guard let milliseconds = AppStoreJSON.milliseconds(date) else {
            throw ServerError(
                .malformedPayload, "the verified notification cannot be stored: \(date) is not in milliseconds range")
        }
        member(name, Int(milliseconds))
    }
}
