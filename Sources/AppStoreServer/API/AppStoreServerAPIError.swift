public import StoreCore

/// A failed App Store Server API call.
public struct AppStoreServerAPIError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The HTTP status, if the App Store answered.
    public var httpStatus: Int?
    /// Apple's `errorCode`, if the answer carried one.
    public var code: APIErrorCode?
    /// Apple's `errorMessage`, or what went wrong (never a token or key).
    public var message: String
    /// Seconds to wait before retrying, from `Retry-After`.
    public var retryAfter: Double?
    /// How many attempts were made before giving up.
    public var attempts: Int
    /// Whether trying again later may succeed: 429, Apple's retryable codes, other 5xx, timeouts and
    /// network failures.
    public var isRetryable: Bool

    public init(
        httpStatus: Int?, code: APIErrorCode?, message: String, retryAfter: Double? = nil, attempts: Int = 1,
        isRetryable: Bool? = nil
    ) {
        self.httpStatus = httpStatus
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
        self.attempts = attempts
        self.isRetryable =
            isRetryable ?? ((code?.isRetryable ?? false) || httpStatus.map { $0 == 429 || $0 >= 500 } ?? true)
    }

    public var description: String {
        var parts: [String] = []
        if let httpStatus { parts.append("HTTP \(httpStatus)") }
        if let code { parts.append("errorCode \(code.rawValue)") }
        parts.append(message)
        if attempts > 1 { parts.append("after \(attempts) attempts") }
        return parts.joined(separator: ": ")
    }
}

extension AppStoreServerAPIError: RetryableFailure {
    public func budgetExhausted(_ budget: Double) -> Self {
        var exhausted = self
        exhausted.message += " (retry budget of \(budget) s exhausted)"
        return exhausted
    }
}
