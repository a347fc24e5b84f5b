import Foundation
import GooglePlay
import Synchronization
import Testing

/// A clock whose sleeps return at once, moving its time to the deadline: quota waits become
/// exact, instant and deterministic.
final class JumpingClock: Clock, Sendable {
    struct Instant: InstantProtocol {
        var offset: Duration
        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private let current = Mutex(Instant(offset: .zero))
    var now: Instant { current.withLock { $0 } }
    var minimumResolution: Duration { .nanoseconds(1) }
    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        current.withLock { $0 = max($0, deadline) }
    }
    func advance(by duration: Duration) { current.withLock { $0 = $0.advanced(by: duration) } }
}

/// A ``JumpingClock`` whose first sleep returns `lateness` after its deadline: a process too busy
/// to wake its waiting call on time.
final class OnceLateClock: Clock, Sendable {
    typealias Instant = JumpingClock.Instant
    private let base = JumpingClock()
    private let lateness: Duration
    private let slept = Mutex(0)
    init(lateness: Duration) { self.lateness = lateness }
    var now: Instant { base.now }
    var minimumResolution: Duration { .nanoseconds(1) }
    var sleeps: Int { slept.withLock { $0 } }
    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        let first = slept.withLock { count in
            count += 1
            return count == 1
        }
        try await base.sleep(until: first ? deadline.advanced(by: lateness) : deadline, tolerance: tolerance)
    }
}

@Suite struct QuotaLimiterTests {
    /// The store counts when calls arrive: a call that went long after the turn it was given would
    /// arrive together with the calls of later turns. It takes a new turn instead; the missed one
    /// stays counted.
    @Test func aCallThatWakesLateTakesANewTurn() async throws {
        let clock = OnceLateClock(lateness: .seconds(3))
        let limits = QuotaLimits(overall: [QuotaLimit(requests: 1, per: .seconds(10))], maxWait: .seconds(60))
        let limiter = QuotaLimiter(limits: limits, clock: clock)
        try await limiter.acquire(.voidedPurchases)  // at once
        try await limiter.acquire(.voidedPurchases)  // turn at 10 s, woke at 13 s: a new turn at 20 s
        #expect(clock.now.offset == .seconds(20))
        #expect(clock.sleeps == 2)
        try await limiter.acquire(.voidedPurchases)  // the next window after the new turn
        #expect(clock.now.offset == .seconds(30))
    }

    @Test func voidedPurchasesDefaultIsThirtyPerThirtySeconds() async throws {
        let clock = JumpingClock()
        let limiter = QuotaLimiter(limits: .googleDefaults, clock: clock)
        var times: [Duration] = []
        for _ in 0..<95 {
            try await limiter.acquire(.voidedPurchases)
            times.append(clock.now.offset)
        }
        #expect(times[29] == .zero, "the first 30 go at once")
        #expect(times[30] == .seconds(30))
        for index in 30..<times.count {
            #expect(times[index] - times[index - 30] >= .seconds(30), "call \(index) exceeds 30 per 30 s")
        }
        #expect(times[94] == .seconds(90))
    }

    @Test func aUsedUpDayFailsAtOnceAndCountsNothing() async throws {
        let clock = JumpingClock()
        let limits = QuotaLimits(
            buckets: [
                .voidedPurchases: [
                    QuotaLimit(requests: 2, per: .seconds(1)), QuotaLimit(requests: 3, per: .seconds(86_400)),
                ]
            ],
            maxWait: .seconds(60))
        let limiter = QuotaLimiter(limits: limits, clock: clock)
        for _ in 0..<3 { try await limiter.acquire(.voidedPurchases) }
        #expect(clock.now.offset == .seconds(1), "the third waited for the one-second window")
        let error = await #expect(throws: QuotaExhausted.self) { try await limiter.acquire(.voidedPurchases) }
        #expect(error?.bucket == .voidedPurchases)
        #expect(clock.now.offset == .seconds(1), "a refused call does not wait")
        clock.advance(by: .seconds(86_400))
        try await limiter.acquire(.voidedPurchases)
        #expect(clock.now.offset == .seconds(86_401), "a new day admits at once")
    }

    @Test func bucketsAreIndependentButTheOverallLimitSpansThem() async throws {
        let clock = JumpingClock()
        let limits = QuotaLimits(
            buckets: [.subscriptions: [QuotaLimit(requests: 2, per: .seconds(10))]],
            overall: [QuotaLimit(requests: 4, per: .seconds(10))])
        let limiter = QuotaLimiter(limits: limits, clock: clock)
        try await limiter.acquire(.subscriptions)
        try await limiter.acquire(.subscriptions)
        try await limiter.acquire(.orders)
        try await limiter.acquire(.orders)
        #expect(clock.now.offset == .zero, "orders are not held back by the subscriptions bucket")
        try await limiter.acquire(.orders)
        #expect(clock.now.offset == .seconds(10), "the fifth call in all waits for the overall window")
    }
}

@Suite struct AndroidPublisherErrorTests {
    func error(_ status: Int, _ json: String, retryAfter: Double? = nil) -> AndroidPublisherError {
        AndroidPublisherError(httpStatus: status, body: Data(json.utf8), retryAfter: retryAfter, attempts: 1)
    }

    @Test func goneIsTerminal() {
        let gone = error(
            410,
            #"{"error":{"code":410,"message":"The subscription purchase is no longer available for query because it has been expired for too long.","errors":[{"domain":"androidpublisher","reason":"subscriptionPurchaseNoLongerAvailable"}],"status":"GONE"}}"#
        )
        #expect(gone.reason == .gone && gone.isGone && !gone.isRetryable)
        #expect(gone.googleReason == "subscriptionPurchaseNoLongerAvailable")
        #expect(gone.googleStatus == "GONE")
        let noLongerAvailable = error(
            400, #"{"error":{"code":400,"message":"The purchase is no longer available for query."}}"#)
        #expect(noLongerAvailable.isGone)
    }

    @Test func statusesMapToReasons() {
        #expect(error(400, #"{"error":{"code":400,"message":"Invalid Value"}}"#).reason == .invalidRequest)
        #expect(error(401, "").reason == .unauthorized)
        #expect(error(403, "").reason == .forbidden)
        #expect(error(404, "not json").reason == .notFound)
        let limited = error(429, "", retryAfter: 3)
        #expect(limited.reason == .rateLimited && limited.isRetryable && limited.retryAfter == 3)
        #expect(error(503, "").reason == .serverError && error(503, "").isRetryable)
        #expect(error(418, "").reason == .httpError && !error(418, "").isRetryable)
        #expect(error(404, "").description == "not-found: Google sent no error message (HTTP 404)")
    }
}
