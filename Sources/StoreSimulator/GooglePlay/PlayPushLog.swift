public import Foundation
public import GooglePlay

/// A fault applied to the push of the next RTDN message(s) created.
public enum PlayPushFault: String, Codable, Sendable, Hashable {
    /// Push the message twice on its first attempt (same message id).
    case duplicate
    /// Lose it: never pushed nor retried; it stays in the log as `dropped`.
    case drop
    /// Hold it back and push it right after the next message.
    case reorder
    /// Push it with an OIDC token signed by a key that is not in the JWKS (then retry normally).
    case invalidToken
    /// Push it with an OIDC token for another audience (then retry normally).
    case wrongAudience
}

/// Where a push message's delivery stands.
public enum PlayPushStatus: String, Codable, Sendable, Hashable {
    /// Waiting for its first attempt or a redelivery.
    case pending
    /// The endpoint acknowledged it (a 2xx answer).
    case acknowledged
    /// Message retention (or the delivery attempt limit) ran out.
    case expired
    /// Lost by a ``PlayPushFault/drop`` fault.
    case dropped
    /// The app has no push subscription.
    case notSent
}

/// One push attempt.
public struct PlayPushAttempt: Codable, Sendable, Hashable {
    /// When it was made, on the simulated clock.
    public var date: Date
    /// The endpoint's HTTP status, if it answered.
    public var httpStatus: Int?
    /// Whether the answer acknowledged the message.
    public var acknowledged: Bool
    /// The endpoint it went to (nil for a dropped message).
    public var endpoint: String?

    public init(date: Date, httpStatus: Int?, acknowledged: Bool, endpoint: String? = nil) {
        self.date = date
        self.httpStatus = httpStatus
        self.acknowledged = acknowledged
        self.endpoint = endpoint
    }
}

/// An RTDN message: the developer notification, its Pub/Sub identity and its deliveries.
public struct PlayPushMessage: Sendable, Hashable {
    /// Creation order, from 1.
    public var sequence: Int
    /// The app's package name.
    public var packageName: String
    /// The notification (the message's decoded `data`).
    public var notification: DeveloperNotification
    /// The notification JSON, as base64-encoded into `data`.
    public var notificationJSON: Data
    /// Pub/Sub's `messageId` (the same on every redelivery).
    public var messageId: String
    /// Pub/Sub's `publishTime` (RFC 3339).
    public var publishTime: String
    /// The attempts so far.
    public var attempts: [PlayPushAttempt]
    /// Where delivery stands.
    public var status: PlayPushStatus
    /// The next attempt's date, if one is scheduled.
    public var nextAttemptDate: Date?
}

/// The internal delivery state of one message.
struct PlayPushRecord: Sendable {
    var message: PlayPushMessage
    var push: PlayPushSubscription?
    var fault: PlayPushFault?
    var publishDate: Date
    var inFlight = false
}
