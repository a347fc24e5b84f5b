import Synchronization

/// A quota bucket of the Google Play Developer API: each has its own limits ("Quotas" in the
/// Android Publisher documentation).
public struct QuotaBucket: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// `purchases.subscriptions` and `purchases.subscriptionsv2` reads and acknowledgements.
    public static let subscriptions = Self(rawValue: "subscriptions")
    /// Cancel, defer, refund and revoke of subscriptions.
    public static let subscriptionUpdates = Self(rawValue: "subscription-updates")
    /// `purchases.products` and `purchases.productsv2`.
    public static let oneTimePurchases = Self(rawValue: "one-time-purchases")
    /// `orders`.
    public static let orders = Self(rawValue: "orders")
    /// `purchases.voidedpurchases`, which has its own, much smaller limits.
    public static let voidedPurchases = Self(rawValue: "voided-purchases")
}

/// At most `requests` in any window of length `window`.
public struct QuotaLimit: Hashable, Sendable, CustomStringConvertible {
    public var requests: Int
    public var window: Duration

    public init(requests: Int, per window: Duration) {
        self.requests = max(1, requests)
        self.window = window
    }

    public var description: String { "\(requests) per \(window)" }
}

/// The limits of each bucket, and of all buckets together.
public struct QuotaLimits: Hashable, Sendable {
    /// Limits per bucket; a bucket not listed here is limited only by ``overall``.
    public var buckets: [QuotaBucket: [QuotaLimit]]
    /// Limits on all calls together.
    public var overall: [QuotaLimit]
    /// The longest a call waits for its turn; a call that would wait longer (a used-up day) fails
    /// at once with ``AndroidPublisherError/Reason/quotaExhausted`` instead of hanging.
    public var maxWait: Duration

    public init(buckets: [QuotaBucket: [QuotaLimit]], overall: [QuotaLimit] = [], maxWait: Duration = .seconds(60)) {
        self.buckets = buckets
        self.overall = overall
        self.maxWait = maxWait
    }

    private static let day = Duration.seconds(86_400)

    /// Google's default quotas: 3,000 queries a minute per bucket and 200,000 a day in all; voided
    /// purchases 30 per 30 seconds and 6,000 a day.
    public static let googleDefaults = QuotaLimits(
        buckets: [
            .subscriptions: [QuotaLimit(requests: 3000, per: .seconds(60))],
            .subscriptionUpdates: [QuotaLimit(requests: 3000, per: .seconds(60))],
            .oneTimePurchases: [QuotaLimit(requests: 3000, per: .seconds(60))],
            .orders: [QuotaLimit(requests: 3000, per: .seconds(60))],
            .voidedPurchases: [QuotaLimit(requests: 30, per: .seconds(30)), QuotaLimit(requests: 6000, per: day)],
        ],
        overall: [QuotaLimit(requests: 200_000, per: day)]
    )
}

/// Keeps calls within ``QuotaLimits``: a sliding window per limit, so no window of a limit's
/// length ever holds more calls than it allows. Callers over a limit wait their turn in order of
/// arrival; a turn further away than ``QuotaLimits/maxWait`` fails at once.
public final class QuotaLimiter: Sendable {
    public let limits: QuotaLimits
    private let elapsed: @Sendable () -> Duration
    private let sleep: @Sendable (Duration) async throws -> Void
    /// When each admitted call goes (or went), per bucket and for all buckets together; sorted.
    private let admissions = Mutex<[String: [Duration]]>([:])
    private static let overallKey = "*"

    /// - Parameter clock: the clock windows are measured on (injected in tests).
    public init<C: Clock<Duration>>(limits: QuotaLimits = .googleDefaults, clock: C = ContinuousClock())
    where C: Sendable, C.Instant: Sendable {
        self.limits = limits
        let start = clock.now
        self.elapsed = { start.duration(to: clock.now) }
        self.sleep = { try await clock.sleep(for: $0) }
    }

    /// Waits until a call in `bucket` may go, and counts it.
    ///
    /// - Throws: ``AndroidPublisherError`` `quota-exhausted` when the turn is further away than
    ///   ``QuotaLimits/maxWait`` (nothing is counted then); `CancellationError` if cancelled while waiting.
    public func acquire(_ bucket: QuotaBucket) async throws {
        let now = elapsed()
        let bucketLimits = limits.buckets[bucket] ?? []
        let turn: Duration? = admissions.withLock { admissions in
            let longest = (bucketLimits + limits.overall).map(\.window).max() ?? .zero
            for key in [bucket.rawValue, Self.overallKey] {
                // Calls older than the longest window no longer count against anything.
                if let stale = admissions[key]?.firstIndex(where: { $0 > now - longest }) {
                    admissions[key]?.removeFirst(stale)
                } else {
                    admissions[key] = []
                }
            }
            let own = admissions[bucket.rawValue] ?? []
            let all = admissions[Self.overallKey] ?? []
            var turn = max(now, own.last ?? now, all.last ?? now)
            for (log, limitsOfLog) in [(own, bucketLimits), (all, limits.overall)] {
                for limit in limitsOfLog where log.count >= limit.requests {
                    // The window ending at `turn` may hold only `requests - 1` earlier calls.
                    turn = max(turn, log[log.count - limit.requests] + limit.window)
                }
            }
            guard turn - now <= limits.maxWait else { return nil }
            admissions[bucket.rawValue, default: []].append(turn)
            admissions[Self.overallKey, default: []].append(turn)
            return turn
        }
        guard let turn else {
            let exhausted = (bucketLimits + limits.overall).map(\.description).joined(separator: ", ")
            throw AndroidPublisherError(
                .quotaExhausted,
                "the \(bucket) quota (\(exhausted)) is used up for longer than \(limits.maxWait); not sent")
        }
        if turn > now { try await sleep(turn - now) }
    }
}
