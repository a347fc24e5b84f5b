/// Why a verifyReceipt call produced no response body to return. (A body with a non-zero `status`
/// is not an error: it is returned, and the caller reads its `status`.) Details never contain the
/// shared secret or the receipt.
public struct VerifyReceiptError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Reason: String, Hashable, Sendable, CaseIterable {
        /// The endpoint could not be reached, timed out, or answered HTTP 5xx, on every attempt.
        case unavailable
        /// The endpoint answered with an HTTP status other than 200 and 5xx.
        case httpError = "http-error"
        /// The body is larger than the configured limit.
        case responseTooLarge = "response-too-large"
        /// The body is not JSON of the documented shape (at least a numeric `status`).
        case malformedResponse = "malformed-response"
        /// The request body could not be encoded.
        case malformedRequest = "malformed-request"
        /// The task was cancelled while waiting to retry.
        case cancelled
    }

    /// What went wrong.
    public var reason: Reason
    /// A one-line explanation (never the secret or the receipt).
    public var detail: String

    /// An error for `reason` with a one-line `detail`.
    public init(_ reason: Reason, _ detail: String) {
        self.reason = reason
        self.detail = detail
    }

    /// Whether trying again later may succeed.
    public var isRetryable: Bool { reason == .unavailable || reason == .cancelled }

    /// `reason: detail`.
    public var description: String { "\(reason.rawValue): \(detail)" }
}
