import Synchronization

/// A client-side rate limit: at most `requestsPerSecond` on average, with bursts of `burst`.
/// Callers over the limit wait their turn, in order of arrival.
public final class RateLimiter: Sendable {
    public let requestsPerSecond: Double
    public let burst: Int
    private let clock = ContinuousClock()
    /// When the next request may go, and how much burst credit is banked (as time already earned).
    private let nextFree: Mutex<ContinuousClock.Instant>

    public init(requestsPerSecond: Double, burst: Int = 1) {
        self.requestsPerSecond = max(requestsPerSecond, .leastNonzeroMagnitude)
        self.burst = max(1, burst)
        self.nextFree = Mutex(ContinuousClock().now)
    }

    /// Waits until a request may be sent.
    public func acquire() async throws {
        let interval = Duration.seconds(1 / requestsPerSecond)
        let now = clock.now
        let slot: ContinuousClock.Instant = nextFree.withLock { next in
            // Unused capacity accumulates up to `burst` requests.
            let earliest = now - interval * (burst - 1)
            let slot = max(next, earliest)
            next = slot + interval
            return slot
        }
        if slot > now {
            try await Task.sleep(until: slot, clock: clock)
        }
    }
}
