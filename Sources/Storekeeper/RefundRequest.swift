public import Foundation

/// A store's request for consumption information during a customer's refund request (Apple's
/// `CONSUMPTION_REQUEST`), kept as an outbox row until it is answered, skipped, refused or too
/// late. One per request: its id is the notification's (Apple's `notificationUUID`).
public struct RefundRequest: Sendable, Hashable, Codable {
    public var id: String
    public var purchaseKey: PurchaseKey
    /// The transaction the customer asked a refund for (Apple `transactionId`).
    public var transactionID: String
    public var app: AppID
    public var environment: PurchaseEnvironment
    /// The customer's stated reason, in the store's words (`UNINTENDED_PURCHASE`, …).
    public var reason: String?
    public var requestedAt: Date
    /// After this the store no longer takes an answer (Apple: 12 hours after the request).
    public var deadline: Date
    public var status: RefundRequestStatus
    public var attempts: Int
    /// When the next attempt is due (pending requests).
    public var nextAttemptAt: Date?
    /// The values sent (status `sent`).
    public var answer: ConsumptionAnswer?
    /// Why nothing was sent (status `skipped`).
    public var skipReason: ConsumptionSkipReason?
    /// The store's error code when it refused the answer (status `failed`).
    public var storeErrorCode: Int?
    /// The last failure or refusal, in words.
    public var lastError: String?
    /// The customer the purchase belonged to when the request was settled.
    public var customerID: CustomerID?
    public var updatedAt: Date

    /// Apple's window to answer a consumption request.
    public static let answerWindow: TimeInterval = 12 * 3600

    public init(
        id: String, purchaseKey: PurchaseKey, transactionID: String, app: AppID, environment: PurchaseEnvironment,
        reason: String?, requestedAt: Date, deadline: Date, status: RefundRequestStatus = .pending, attempts: Int = 0,
        nextAttemptAt: Date?, answer: ConsumptionAnswer? = nil, skipReason: ConsumptionSkipReason? = nil,
        storeErrorCode: Int? = nil, lastError: String? = nil, customerID: CustomerID? = nil, updatedAt: Date
    ) {
        self.id = id
        self.purchaseKey = purchaseKey
        self.transactionID = transactionID
        self.app = app
        self.environment = environment
        self.reason = reason
        self.requestedAt = requestedAt
        self.deadline = deadline
        self.status = status
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.answer = answer
        self.skipReason = skipReason
        self.storeErrorCode = storeErrorCode
        self.lastError = lastError
        self.customerID = customerID
        self.updatedAt = updatedAt
    }
}

/// Where a refund request's answer stands.
public enum RefundRequestStatus: String, Sendable, Hashable, Codable, CaseIterable {
    /// Not answered yet; tried again at `nextAttemptAt`.
    case pending
    /// The answer was sent and the store took it.
    case sent
    /// Nothing was sent, on purpose (no consent, policy); see `skipReason`.
    case skipped
    /// The store refused the answer (a 4xx); not retried.
    case failed
    /// The store's window passed before an answer could be sent.
    case expired
}
