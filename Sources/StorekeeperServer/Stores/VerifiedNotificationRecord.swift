import AppStoreServer
import Foundation

/// How the App Store adapter keeps a verified notification with the stored row
/// (``InboxNotification/verified``): the decoded payloads as JSON, in the App Store's own
/// conventions, without the signed strings they were verified from (the body still has them).
///
/// The record is `VerifiedNotification`'s JSON. Only the notification's own payload, without its
/// signed strings, is encoded (``NotificationPayloadJSON``); the nested payloads (transaction,
/// renewal info, app transaction) go in as the JSON they were signed as. Encoding the decoded
/// structs again was 4.9% of the ingest profile, for JSON the verifier had just decoded.
enum VerifiedNotificationRecord {
    static func encode(
        _ notification: VerifiedNotification, nestedJSON: VerifiedNotification.NestedJSON
    ) throws(ServerError) -> Data {
        let payload = try NotificationPayloadJSON.data(notification.payload.withoutSignedFields)
        var record = Data(#"{"payload":"#.utf8)
        record.append(payload)
        for (key, json) in [
            ("transaction", nestedJSON.transaction), ("renewalInfo", nestedJSON.renewalInfo),
            ("appTransaction", nestedJSON.appTransaction),
        ] {
            guard let json else { continue }
            record.append(contentsOf: #","\#(key)":"#.utf8)
            record.append(json)
        }
        record.append(UInt8(ascii: "}"))
        return record
    }

    /// The kept notification; nil when it can't be read (processing then verifies the body again).
    static func decode(_ data: Data) -> VerifiedNotification? {
        try? AppStoreJSON.makeDecoder().decode(VerifiedNotification.self, from: data)
    }
}
