public import Foundation

/// One event on its way to one webhook endpoint (the delivery queue, one row per endpoint and event).
public struct EventDelivery: Sendable, Hashable {
    public enum Status: String, Sendable, Hashable, Codable, CaseIterable {
        /// Not delivered yet: due at `nextAttemptAt`, or, without one, waiting for the earlier
        /// pending delivery of its ordering key to be done.
        case pending
        /// The receiver answered 2xx.
        case delivered
        /// Every attempt of the retry schedule failed; kept for a redelivery through the API.
        case dead
    }

    /// The endpoint's configured name.
    public var endpoint: String
    /// The event's position in the feed.
    public var position: Int
    public var eventID: UUID
    public var eventType: EventType
    /// A customer's deliveries go one after another (``Event/orderingKey``).
    public var orderingKey: String
    public var status: Status
    /// Attempts made so far.
    public var attempts: Int
    /// When a pending delivery is due; nil while it waits behind its customer's earlier one (and
    /// once it is delivered or dead).
    public var nextAttemptAt: Date?
    /// The last attempt's HTTP status (nil: no answer).
    public var lastStatusCode: Int?
    public var lastError: String?
    public var deliveredAt: Date?
    /// When the event was recorded (lag is measured from it).
    public var occurredAt: Date
    /// The exact body to send (read with due deliveries; empty in listings).
    public var body: Data

    public init(
        endpoint: String, position: Int, eventID: UUID, eventType: EventType, orderingKey: String,
        status: Status = .pending, attempts: Int = 0, nextAttemptAt: Date?, lastStatusCode: Int? = nil,
        lastError: String? = nil, deliveredAt: Date? = nil, occurredAt: Date, body: Data = Data()
    ) {
        self.endpoint = endpoint
        self.position = position
        self.eventID = eventID
        self.eventType = eventType
        self.orderingKey = orderingKey
        self.status = status
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.lastStatusCode = lastStatusCode
        self.lastError = lastError
        self.deliveredAt = deliveredAt
        self.occurredAt = occurredAt
        self.body = body
    }
}

/// One attempt to deliver an event to an endpoint: the delivery log.
public struct DeliveryAttempt: Sendable, Hashable, Codable {
    public var endpoint: String
    public var eventID: UUID
    public var position: Int
    /// 1 for the first attempt.
    public var attempt: Int
    public var attemptedAt: Date
    /// The receiver's HTTP status (nil: no answer: refused, timed out, …).
    public var statusCode: Int?
    public var latencyMilliseconds: Int
    /// Why it failed, without the body or secrets.
    public var error: String?

    public init(
        endpoint: String, eventID: UUID, position: Int, attempt: Int, attemptedAt: Date, statusCode: Int?,
        latencyMilliseconds: Int, error: String?
    ) {
        self.endpoint = endpoint
        self.eventID = eventID
        self.position = position
        self.attempt = attempt
        self.attemptedAt = attemptedAt
        self.statusCode = statusCode
        self.latencyMilliseconds = latencyMilliseconds
        self.error = error
    }

    /// Whether the receiver took the event (2xx).
    public var succeeded: Bool { statusCode.map { (200..<300).contains($0) } ?? false }
}
