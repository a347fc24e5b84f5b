public import Foundation

/// Get Notification History's request body.
public struct NotificationHistoryRequest: Codable, Hashable, Sendable {
    /// The start of the window (required; at most 180 days back).
    public var startDate: Date?
    /// The end of the window (required).
    public var endDate: Date?
    /// Only this type.
    public var notificationType: NotificationType?
    /// Only this subtype.
    public var notificationSubtype: NotificationSubtype?
    /// Only notifications about this transaction's customer.
    public var transactionId: String?
    /// Only notifications that were not delivered.
    public var onlyFailures: Bool?

    public init(
        startDate: Date? = nil, endDate: Date? = nil, notificationType: NotificationType? = nil,
        notificationSubtype: NotificationSubtype? = nil, transactionId: String? = nil, onlyFailures: Bool? = nil
    ) {
        self.startDate = startDate
        self.endDate = endDate
        self.notificationType = notificationType
        self.notificationSubtype = notificationSubtype
        self.transactionId = transactionId
        self.onlyFailures = onlyFailures
    }
}

/// Get Notification History's response: a page of notifications with their delivery attempts.
public struct NotificationHistoryResponse: Codable, Hashable, Sendable {
    /// The token to request the next page with.
    public var paginationToken: String?
    /// Whether more pages follow.
    public var hasMore: Bool?
    /// The notifications.
    public var notificationHistory: [NotificationHistoryResponseItem]?

    public init(
        paginationToken: String? = nil, hasMore: Bool? = nil,
        notificationHistory: [NotificationHistoryResponseItem]? = nil
    ) {
        self.paginationToken = paginationToken
        self.hasMore = hasMore
        self.notificationHistory = notificationHistory
    }
}

/// One notification of the history.
public struct NotificationHistoryResponseItem: Codable, Hashable, Sendable {
    /// The notification as sent (`signedPayload`).
    public var signedPayload: String?
    /// Every attempt to deliver it.
    public var sendAttempts: [SendAttemptItem]?

    public init(signedPayload: String? = nil, sendAttempts: [SendAttemptItem]? = nil) {
        self.signedPayload = signedPayload
        self.sendAttempts = sendAttempts
    }
}

/// One delivery attempt.
public struct SendAttemptItem: Codable, Hashable, Sendable {
    /// When it was attempted.
    public var attemptDate: Date?
    /// What happened.
    public var sendAttemptResult: SendAttemptResult?

    public init(attemptDate: Date? = nil, sendAttemptResult: SendAttemptResult? = nil) {
        self.attemptDate = attemptDate
        self.sendAttemptResult = sendAttemptResult
    }
}

/// Request a Test Notification.
public struct SendTestNotificationResponse: Codable, Hashable, Sendable {
    /// The token to check the test notification's status with.
    public var testNotificationToken: String?

    public init(testNotificationToken: String? = nil) {
        self.testNotificationToken = testNotificationToken
    }
}

/// Get Test Notification Status.
public struct CheckTestNotificationResponse: Codable, Hashable, Sendable {
    /// The test notification as sent.
    public var signedPayload: String?
    /// Every attempt to deliver it.
    public var sendAttempts: [SendAttemptItem]?

    public init(signedPayload: String? = nil, sendAttempts: [SendAttemptItem]? = nil) {
        self.signedPayload = signedPayload
        self.sendAttempts = sendAttempts
    }
}
