public import AppStoreServer
public import Foundation

/// One attempt to POST a notification, as Get Notification History reports it.
public struct DeliveryAttempt: Codable, Sendable, Hashable {
    /// When the attempt was made, on the simulated clock.
    public var attemptDate: Date
    /// Apple's `sendAttemptResult`: `SUCCESS`, `UNSUCCESSFUL_HTTP_RESPONSE_CODE`, `NO_RESPONSE`, …
    public var sendAttemptResult: String
    /// The receiver's HTTP status, if it answered.
    public var httpStatus: Int?
}

/// A fault applied to the delivery of the next notification(s) created.
public enum DeliveryFault: String, Codable, Sendable, Hashable {
    /// POST the notification twice on its first attempt.
    case duplicate
    /// Lose it: never POSTed and never retried; it stays in the history.
    case drop
    /// Hold it back and deliver it right after the next notification.
    case reorder
}

/// Where a notification's delivery stands.
public enum DeliveryStatus: String, Codable, Sendable, Hashable {
    /// Waiting for its first attempt or a retry.
    case pending
    /// A 2xx answer was received.
    case delivered
    /// Every retry failed.
    case failed
    /// Lost by a ``DeliveryFault/drop`` fault.
    case dropped
    /// The app has no notification URL.
    case notSent
}

/// A notification the simulated App Store created, with its delivery record.
public struct SentNotification: Sendable, Hashable {
    /// Creation order, from 1.
    public var sequence: Int
    /// The bundle id of the app it belongs to.
    public var bundleId: String
    /// Sandbox or Production: where it was sent (the app's URL of that environment) and which
    /// environment's notification history holds it.
    public var environment: Environment
    /// The decoded payload.
    public var payload: NotificationPayload
    /// The signed payload (the `signedPayload` member of the POSTed body).
    public var signedPayload: String
    /// The attempts so far.
    public var attempts: [DeliveryAttempt]
    /// Where delivery stands.
    public var status: DeliveryStatus
    /// The next attempt's date, if one is scheduled.
    public var nextAttemptDate: Date?

    /// `payload.notificationUUID`.
    public var notificationUUID: String { payload.notificationUUID ?? "" }
}

/// The internal delivery state of one notification.
struct NotificationRecord: Sendable {
    var notification: SentNotification
    var url: String?
    /// The transaction it is about, if any (for Get Notification History's filter).
    var transactionId: String?
    var fault: DeliveryFault?
    var inFlight = false
}
