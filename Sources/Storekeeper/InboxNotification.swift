public import Foundation

/// A store notification as received, kept durably before the store gets its 2xx and processed
/// separately (DESIGN.md, "Durability").
public struct InboxNotification: Sendable, Hashable, Codable {
    public var store: Store
    /// `notificationUUID` (App Store) or Pub/Sub `messageId` (Google Play); unique per store.
    public var dedupeKey: String
    /// The request body exactly as received; empty where ``bodyWasRead`` is false.
    public var body: Data
    /// False for a notification claimed for processing with a kept record (``verified``): the
    /// claim reads the record instead of the body (an App Store body, ~8.6 KB as received and
    /// ~2.7 KB as stored, would be read back to be thrown away). Not stored; always true when
    /// encoded.
    public var bodyWasRead = true
    /// What the store's adapter verified when it accepted the delivery, in that adapter's own
    /// encoding, so processing doesn't verify the same signatures again; nil when the adapter keeps
    /// nothing (or the notification was stored before this was kept). Trusted like every other row.
    public var verified: Data?
    public var receivedAt: Date
    public var status: Status
    public var attempts: Int
    /// When processing is next due (pending and failed notifications).
    public var nextAttemptAt: Date?
    /// Why the last attempt failed.
    public var lastError: String?
    public var processedAt: Date?

    enum CodingKeys: String, CodingKey {
        case store, dedupeKey, body, verified, receivedAt, status, attempts, nextAttemptAt, lastError, processedAt
    }

    public enum Status: String, Sendable, Hashable, Codable, CaseIterable {
        /// Stored, not yet processed.
        case pending
        /// Applied (or found to need nothing).
        case processed
        /// The last attempt failed; retried at `nextAttemptAt`.
        case failed
    }

    public init(
        store: Store, dedupeKey: String, body: Data, verified: Data? = nil, receivedAt: Date, status: Status = .pending,
        attempts: Int = 0, nextAttemptAt: Date? = nil, lastError: String? = nil, processedAt: Date? = nil
    ) {
        self.store = store
        self.dedupeKey = dedupeKey
        self.body = body
        self.verified = verified
        self.receivedAt = receivedAt
        self.status = status
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt ?? receivedAt
        self.lastError = lastError
        self.processedAt = processedAt
    }
}
