import Foundation
public import Storekeeper

/// A notification to store, its body already in the form `inbox_payloads.body` keeps
/// (`StoredNotificationBody`).
///
/// Why: encoded inside the write, the body took 9 % of the SQLite writer's thread in the ingest
/// profile, on the one thread every write waits for. Prepared where the webhook runs, the
/// encoding runs on the request's own thread, in parallel with the other requests.
public struct PreparedNotification: Sendable {
    public let notification: InboxNotification
    /// What `inbox_payloads.body` holds for ``notification``'s body.
    let storedBody: Data

    public init(_ notification: InboxNotification) {
        self.notification = notification
        storedBody = StoredNotificationBody.encode(notification.body)
    }
}
