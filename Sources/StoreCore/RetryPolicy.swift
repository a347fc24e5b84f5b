/// How the client retries retryable failures: full-jitter exponential backoff, honouring
/// `Retry-After`, within a bounded number of attempts and a bounded total wait.
public struct RetryPolicy: Sendable {
    /// Attempts in all, the first included.
    public var maxAttempts: Int
    /// The backoff cap of the first retry, in seconds; it doubles with each retry.
    public var initialBackoff: Double
    /// The largest backoff cap, in seconds.
    public var maxBackoff: Double
    /// The most the client waits in all across retries of one call, in seconds; a `Retry-After`
    /// beyond what is left ends the call.
    public var budget: Double
    /// Picks a number in a range; injected so tests are deterministic.
    public var random: @Sendable (ClosedRange<Double>) -> Double

    public init(
        maxAttempts: Int = 4, initialBackoff: Double = 0.5, maxBackoff: Double = 8, budget: Double = 30,
        random: @escaping @Sendable (ClosedRange<Double>) -> Double = { Double.random(in: $0) }
    ) {
        self.maxAttempts = max(1, maxAttempts)
        self.initialBackoff = initialBackoff
        self.maxBackoff = maxBackoff
        self.budget = budget
        self.random = random
    }

    /// No retries.
    public static let never = RetryPolicy(maxAttempts: 1)

    /// The wait before retry number `retry` (1 for the first retry), given the server's
    /// `Retry-After`.
    public func delay(beforeRetry retry: Int, retryAfter: Double?) -> Double {
        if let retryAfter { return max(0, retryAfter) }
        let cap = min(maxBackoff, initialBackoff * Double(1 << min(retry - 1, 30)))
        return random(0...max(0, cap))
    }
}

/// A failed attempt the retry loop can judge.
public protocol RetryableFailure: Error {
    /// Whether another attempt can succeed.
    var isRetryable: Bool { get }
    /// The server's `Retry-After`, in seconds.
    var retryAfter: Double? { get }
    /// This failure, saying that the retry budget ran out before another attempt.
    func budgetExhausted(_ budget: Double) -> Self
}

extension RetryPolicy {
    /// The one retry loop of the store clients: runs `attempt` (numbered from 1) until it
    /// succeeds, its failure is not retryable, or the attempts or the waiting budget are used up;
    /// then throws the last failure. Anything `attempt` throws ends the loop as it is.
    public func run<Value, Failure: RetryableFailure>(
        _ attempt: (_ number: Int) async throws -> Result<Value, Failure>
    ) async throws -> Value {
        var waited = 0.0
        var number = 0
        while true {
            number += 1
            let failure: Failure
            switch try await attempt(number) {
            case .success(let value): return value
            case .failure(let failed): failure = failed
            }
            guard failure.isRetryable, number < maxAttempts else { throw failure }
            let wait = delay(beforeRetry: number, retryAfter: failure.retryAfter)
            guard waited + wait <= budget else { throw failure.budgetExhausted(budget) }
            waited += wait
            try await Task.sleep(for: .milliseconds(Int64(wait * 1000)))
        }
    }
}
