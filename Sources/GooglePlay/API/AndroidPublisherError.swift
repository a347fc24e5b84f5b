public import Foundation
public import StoreCore

/// Why an Android Publisher API call failed.
///
/// The answer's Google error body (`{"error": {"code", "message", "status", "errors": [{"reason"}]}}`)
/// is kept in ``googleStatus``, ``googleReason`` and ``message``. ``isGone`` marks the terminal
/// answers (HTTP 410, or a purchase Google says is "no longer available"): asking again never
/// helps, and the purchase should be judged from what is already known. Never holds a token.
public struct AndroidPublisherError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure this is.
    public struct Reason: FailureReason, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// 410, or "no longer available": the purchase can no longer be queried (terminal).
        public static let gone = Self(rawValue: "gone")
        /// 404: no such purchase, order or application.
        public static let notFound = Self(rawValue: "not-found")
        /// 400: Google refused the request (an invalid token, an already consumed purchase, …).
        public static let invalidRequest = Self(rawValue: "invalid-request")
        /// 401 even with a fresh access token.
        public static let unauthorized = Self(rawValue: "unauthorized")
        /// 403: the service account lacks the permission, or the API is not enabled.
        public static let forbidden = Self(rawValue: "forbidden")
        /// 429: Google's quota was exceeded (retryable).
        public static let rateLimited = Self(rawValue: "rate-limited")
        /// The client's own daily quota is used up; the call was not sent.
        public static let quotaExhausted = Self(rawValue: "quota-exhausted")
        /// 5xx (retryable).
        public static let serverError = Self(rawValue: "server-error")
        /// Google could not be reached, or the answer was cut off (retryable).
        public static let transportFailure = Self(rawValue: "transport-failure")
        /// An access token could not be obtained.
        public static let authenticationFailed = Self(rawValue: "authentication-failed")
        /// A 2xx answer that is not the documented JSON.
        public static let unexpectedResponse = Self(rawValue: "unexpected-response")
        /// An argument that cannot go into a request (an empty or path-breaking identifier).
        public static let invalidArgument = Self(rawValue: "invalid-argument")
        /// Another HTTP status.
        public static let httpError = Self(rawValue: "http-error")
    }

    /// What kind of failure this is.
    public var reason: Reason
    /// A one-line explanation: Google's message if it sent one.
    public var message: String
    /// The HTTP status, if Google answered.
    public var httpStatus: Int?
    /// Google's canonical status (`NOT_FOUND`, `RESOURCE_EXHAUSTED`, …), if sent.
    public var googleStatus: String?
    /// The first legacy reason in `error.errors` (`purchaseTokenDoesNotMatchPackage`, …), if sent.
    public var googleReason: String?
    /// The `Retry-After` Google sent, in seconds.
    public var retryAfter: Double?
    /// Attempts made, the first included.
    public var attempts: Int
    /// Whether trying again later may succeed.
    public var isRetryable: Bool

    /// Creates an error; `isRetryable` defaults from `reason`.
    public init(
        _ reason: Reason, _ message: String, httpStatus: Int? = nil, googleStatus: String? = nil,
        googleReason: String? = nil, retryAfter: Double? = nil, attempts: Int = 1, isRetryable: Bool? = nil
    ) {
        self.reason = reason
        self.message = message
        self.httpStatus = httpStatus
        self.googleStatus = googleStatus
        self.googleReason = googleReason
        self.retryAfter = retryAfter
        self.attempts = attempts
        self.isRetryable =
            isRetryable ?? [Reason.rateLimited, .serverError, .transportFailure].contains(reason)
    }

    /// The error for an HTTP answer that is not a 2xx, from its status and Google's error body.
    public init(httpStatus: Int, body: Data, retryAfter: Double?, attempts: Int) {
        let error = (try? JSONDecoder().decode(GoogleAPIErrorBody.self, from: body))?.error
        let message = error?.message.map { String($0.prefix(300)) } ?? "Google sent no error message"
        let googleReason = error?.errors?.first?.reason
        let noLongerAvailable =
            message.range(of: "no longer available", options: .caseInsensitive) != nil
            || googleReason?.range(of: "NoLongerAvailable", options: .caseInsensitive) != nil
        let reason: Reason =
            switch httpStatus {
            case 410: .gone
            case _ where noLongerAvailable: .gone
            case 400: .invalidRequest
            case 401: .unauthorized
            case 403: .forbidden
            case 404: .notFound
            case 429: .rateLimited
            case 500...599: .serverError
            default: .httpError
            }
        self.init(
            reason, message, httpStatus: httpStatus, googleStatus: error?.status, googleReason: googleReason,
            retryAfter: retryAfter, attempts: attempts)
    }

    /// Whether the purchase can no longer be queried: stop asking.
    public var isGone: Bool { reason == .gone }

    /// `reason: message (HTTP status)`.
    public var description: String {
        var text = "\(reason.rawValue): \(message)"
        if let httpStatus { text += " (HTTP \(httpStatus))" }
        return text
    }
}

extension AndroidPublisherError: RetryableFailure {
    public func budgetExhausted(_ budget: Double) -> Self {
        var exhausted = self
        exhausted.message += " (retry budget of \(budget) s exhausted)"
        return exhausted
    }
}
