/// One of the two verifyReceipt endpoints.
public enum VerifyReceiptEndpoint: String, Hashable, Sendable {
    /// `https://buy.itunes.apple.com/verifyReceipt` (or its configured replacement).
    case production
    /// `https://sandbox.itunes.apple.com/verifyReceipt` (or its configured replacement).
    case sandbox
}

/// What one verifyReceipt attempt produced, as far as deciding the next step goes.
public enum VerifyReceiptOutcome: Hashable, Sendable {
    /// Apple answered with a JSON body carrying `status` (and, for 21100–21199, `is-retryable`).
    case status(VerifyReceiptStatus, isRetryable: Bool?)
    /// The HTTP answer was not 200 (no usable JSON body).
    case httpStatus(Int)
    /// The request could not be made or the answer not read (connection, timeout).
    case transportFailure
    /// HTTP 200, but the body is not a verifyReceipt response or is too large (not retried: the same
    /// request would get the same body).
    case unusableBody
}

/// What to do after an attempt.
public enum VerifyReceiptNextStep: Hashable, Sendable {
    /// Stop: the outcome is the answer (or the error).
    case finish
    /// Send the receipt again, to `endpoint`, after waiting `delay`.
    case retry(VerifyReceiptEndpoint, after: Duration)
}

/// Apple's routing rule and a bounded retry, as a pure function of the last outcome.
///
/// - Production first; status 21007 there (a sandbox receipt) → the sandbox endpoint, at once. The
///   switch happens once: 21007 or 21008 from the sandbox is returned as it is, never bounced back.
/// - A temporary status (21005, 21009, 21100–21199 unless `is-retryable` is false), an HTTP 5xx, or a
///   transport failure → the same endpoint again after `initialBackoff × 2^(attempt−1)` (capped at
///   `maximumBackoff`), while fewer than `maximumAttempts` attempts were made there.
/// - Anything else → finish.
public struct VerifyReceiptRetryPolicy: Hashable, Sendable {
    /// How many attempts one endpoint gets at most (1 disables retries).
    public var maximumAttempts: Int
    /// The wait before the first retry; doubled for each one after.
    public var initialBackoff: Duration
    /// The longest wait between two attempts.
    public var maximumBackoff: Duration

    /// A policy; the defaults make 3 attempts per endpoint, waiting 0.5 s then 1 s.
    public init(
        maximumAttempts: Int = 3, initialBackoff: Duration = .milliseconds(500), maximumBackoff: Duration = .seconds(5)
    ) {
        self.maximumAttempts = max(1, maximumAttempts)
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
    }

    /// The step after `outcome`, the result of attempt number `attempt` (from 1) at `endpoint`.
    public func nextStep(
        after outcome: VerifyReceiptOutcome, at endpoint: VerifyReceiptEndpoint, attempt: Int
    ) -> VerifyReceiptNextStep {
        let retryable: Bool
        switch outcome {
        case .status(.sandboxReceiptSentToProduction, _) where endpoint == .production:
            return .retry(.sandbox, after: .zero)
        case .status(let status, let isRetryable):
            retryable = status.isTemporary && isRetryable != false
        case .httpStatus(let code):
            retryable = (500...599).contains(code)
        case .transportFailure:
            retryable = true
        case .unusableBody:
            retryable = false
        }
        guard retryable, attempt < maximumAttempts else { return .finish }
        return .retry(endpoint, after: backoff(beforeAttempt: attempt + 1))
    }

    /// The wait before attempt number `attempt` (2 or more) at one endpoint.
    public func backoff(beforeAttempt attempt: Int) -> Duration {
        var delay = initialBackoff
        var step = 2
        while step < attempt, delay < maximumBackoff {
            delay *= 2
            step += 1
        }
        return min(delay, maximumBackoff)
    }
}
