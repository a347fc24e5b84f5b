/// Why a verifyReceipt call produced no response body to return. (A body with a non-zero `status`
/// is not an error: it is returned, and the caller reads its `status`.) Details never contain the
/// shared secret or the receipt.
public typealias VerifyReceiptError = CheckFailure<VerifyReceiptErrorReason>

/// What went wrong.
public enum VerifyReceiptErrorReason: String, FailureReason, CaseIterable {
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

extension CheckFailure where R == VerifyReceiptErrorReason {
    /// Whether trying again later may succeed.
    public var isRetryable: Bool { reason == .unavailable || reason == .cancelled }
}
