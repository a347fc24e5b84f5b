import AppStoreServer
import Foundation

/// How the App Store adapter keeps a verified notification with the stored row
/// (``InboxNotification/verified``): the decoded payloads as JSON, in the App Store's own
/// conventions, without the signed strings they were verified from (the body still has them).
enum VerifiedNotificationRecord {
    static func encode(_ notification: VerifiedNotification) throws(ServerError) -> Data {
        do {
            return try AppStoreJSON.makeEncoder().encode(notification.withoutSignedFields)
        } catch {
            throw ServerError(.malformedPayload, "the verified notification cannot be stored: \(error)")
        }
    }

    /// The kept notification; nil when it can't be read (processing then verifies the body again).
    static func decode(_ data: Data) -> VerifiedNotification? {
        try? AppStoreJSON.makeDecoder().decode(VerifiedNotification.self, from: data)
    }
}
