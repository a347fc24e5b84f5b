import Synchronization

/// A quota bucket of a store's API: calls in one bucket count against that bucket's limits (and
/// all calls against the overall ones). The stores' modules name their buckets.
public struct QuotaBucket: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
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
    /// at once with ``QuotaExhausted`` instead of hanging.
    public var maxWait: Duration

    public init(
        buckets: [QuotaBucket: [QuotaLimit]] = [:], overall: [QuotaLimit] = [], maxWait: Duration = .seconds(60)
    ) {
        self.buckets = buckets
        self.overall = overall
        self.maxWait = maxWait
    }

    /// No limit at all.
    public static let unlimited = QuotaLimits()

    /// Whether any call is ever held back.
    public var isUnlimited: Bool { overall.isEmpty && buckets.values.allSatisfy(\.isEmpty) }

    /// The refusal of a call in `bucket` whose turn is too far away.
    public func exhausted(_ bucket: QuotaBucket) -> QuotaExhausted {
        QuotaExhausted(bucket: bucket, limits: (buckets[bucket] ?? []) + overall, maxWait: maxWait)
    }

    /// How long after its turn a call that waited for it may still go. The store counts calls as
    /// they arrive: one sent much later than its turn (its process starved of CPU while it slept)
    /// would arrive together with the calls of later turns, more of them in one window than the
    /// limit. Such a call takes a new turn instead; the one it missed stays counted, which only
    /// makes the quota a little stricter. (The two-instance test under a loaded machine saw 12
    /// calls arrive within 1.25 s under a limit of 10 per 2 s.)
    public static let lateness: Duration = .milliseconds(250)

    /// Reserves a turn and waits for it, the way both quotas do: `reserve` gives the call its turn
    /// (on the scale of `now`) or throws; a turn already due goes at once; a call that wakes more
    /// than ``lateness`` after its turn reserves again. Bounded: every missed turn stays counted,
    /// so turns move away until one is past ``maxWait`` and `reserve` refuses.
    public static func waitForTurn(
        now: () -> Duration, sleep: (Duration) async throws -> Void, reserve: () async throws -> Duration
    ) async throws {
        while true {
            let turn = try await reserve()
            let wait = turn - now()
            guard wait > .zero else { return }
            try await sleep(wait)
            if now() - turn <= lateness { return }
        }
    }

    /// The longest window of any limit: calls older than this count against nothing.
    public var longestWindow: Duration {
        (buckets.values.flatMap { $0 } + overall).map(\.window).max() ?? .zero
    }
}

/// A call refused by a quota because its turn is further away than ``QuotaLimits/maxWait``;
/// nothing was sent and nothing counted.
public struct QuotaExhausted: Error, Sendable, CustomStringConvertible {
    public let bucket: QuotaBucket
    public let limits: [QuotaLimit]
    public let maxWait: Duration

    public init(bucket: QuotaBucket, limits: [QuotaLimit], maxWait: Duration) {
        self.bucket = bucket
        self.limits = limits
        self.maxWait = maxWait
    }

    public var description: String {
        let exhausted = limits.map(\.description).joined(separator: ", ")
        return "the \(bucket) quota (\(exhausted)) is used up for longer than \(maxWait); not sent"
    }
}

/// What a store client asks before each request goes out: wait for the call's turn within the
/// quota, and count it. One implementation counts in this process (``QuotaLimiter``); a server
/// running several instances counts in its database, so that all of them together keep within
/// the store's limits.
public protocol RequestQuota: AnyObject, Sendable {
    /// Waits until a call in `bucket` may go, and counts it.
    ///
    /// - Throws: ``QuotaExhausted`` when the turn is further away than the limits' `maxWait`
    ///   (nothing is counted then); `CancellationError` if cancelled while waiting.
    func acquire(_ bucket: QuotaBucket) async throws
}

/// The calls admitted within the longest window, per bucket and in all, and the rule that gives
/// the next call its turn: the earliest time at which, for every limit, the window ending then
/// holds fewer than `requests` earlier calls. Times are durations from any fixed origin; turns
/// never go backwards, so callers are served in order of arrival.
public struct QuotaLog: Sendable {
    public let limits: QuotaLimits
    /// When each admitted call goes (or went), per bucket; sorted.
    private var admissions: [QuotaBucket: [Duration]] = [:]
    /// The same calls, all buckets together; sorted.
    private var all: [Duration] = []

    public init(limits: QuotaLimits) {
        self.limits = limits
    }

    /// Forgets calls that no longer count against any limit at `now`.
    public mutating func prune(before now: Duration) {
        let horizon = now - limits.longestWindow
        func drop(_ log: inout [Duration]) {
            if let firstKept = log.firstIndex(where: { $0 > horizon }) {
                log.removeFirst(firstKept)
            } else {
                log.removeAll()
            }
        }
        drop(&all)
        for bucket in Array(admissions.keys) {
            drop(&admissions[bucket, default: []])
            if admissions[bucket]?.isEmpty == true { admissions[bucket] = nil }
        }
    }

    /// Counts a call admitted at `time` (by this process or, for a shared quota, another one).
    public mutating func record(_ bucket: QuotaBucket, at time: Duration) {
        func insert(_ time: Duration, into log: inout [Duration]) {
            if let last = log.last, last > time {
                log.insert(time, at: log.firstIndex(where: { $0 > time }) ?? log.endIndex)
            } else {
                log.append(time)
            }
        }
        insert(time, into: &admissions[bucket, default: []])
        insert(time, into: &all)
    }

    /// The turn of a call in `bucket` asked for at `now`, or nil when it is further away than
    /// ``QuotaLimits/maxWait``. Nothing is recorded.
    public func turn(of bucket: QuotaBucket, at now: Duration) -> Duration? {
        let bucketLimits = limits.buckets[bucket] ?? []
        let own = admissions[bucket] ?? []
        var turn = max(now, own.last ?? now, all.last ?? now)
        for (log, limitsOfLog) in [(own, bucketLimits), (all, limits.overall)] {
            for limit in limitsOfLog where log.count >= limit.requests {
                // The window ending at `turn` may hold only `requests - 1` earlier calls.
                turn = max(turn, log[log.count - limit.requests] + limit.window)
            }
        }
        return turn - now <= limits.maxWait ? turn : nil
    }

}

/// Keeps calls within ``QuotaLimits`` in this process: a sliding window per limit, so no window
/// of a limit's length ever holds more calls than it allows. Callers over a limit wait their turn
/// in order of arrival; a turn further away than ``QuotaLimits/maxWait`` fails at once.
public final class QuotaLimiter: RequestQuota {
    public let limits: QuotaLimits
    private let elapsed: @Sendable () -> Duration
    private let sleep: @Sendable (Duration) async throws -> Void
    private let log: Mutex<QuotaLog>

    /// - Parameter clock: the clock windows are measured on (injected in tests).
    public init<C: Clock<Duration>>(limits: QuotaLimits, clock: C = ContinuousClock())
    where C: Sendable, C.Instant: Sendable {
        self.limits = limits
        self.log = Mutex(QuotaLog(limits: limits))
        let start = clock.now
        self.elapsed = { start.duration(to: clock.now) }
        self.sleep = { try await clock.sleep(for: $0) }
    }

    public func acquire(_ bucket: QuotaBucket) async throws {
        try await QuotaLimits.waitForTurn(now: elapsed, sleep: sleep) {
            let now = elapsed()
            let turn: Duration? = log.withLock { log in
                log.prune(before: now)
                guard let turn = log.turn(of: bucket, at: now) else { return nil }
                log.record(bucket, at: turn)
                return turn
            }
            guard let turn else { throw limits.exhausted(bucket) }
            return turn
        }
    }
}

/// Who makes a store API call, named in the request's `User-Agent` so that a store's (or the
/// simulator's) request log tells instances and jobs apart.
public enum StoreCallOrigin {
    /// The background job making the calls in this task, if any (set by the server's job runner).
    @TaskLocal public static var job: String?

    /// `base`, with the current job appended: `storekeeper (instance a; job catch-up)`.
    public static func userAgent(_ base: String) -> String {
        guard let job else { return base }
        if base.hasSuffix(")") { return String(base.dropLast()) + "; job \(job))" }
        return base + " (job \(job))"
    }
}
