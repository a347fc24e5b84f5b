public import Foundation
public import StoreCore
public import StorekeeperStorage
import Synchronization

/// A store quota counted in the database, so that every instance sharing it keeps, together with
/// the others, within the store's limits: the same sliding windows as ``QuotaLimiter`` (no window
/// of a limit's length ever holds more calls than it allows, whichever instances made them), over
/// the admissions all instances recorded in one scope (a Google Cloud project, an App Store app).
///
/// Admitting a call is one transaction under the scope's lock: read the admissions recorded since
/// this instance last looked, give the call its turn, record it, forget what no longer counts.
/// The instance keeps what it has read, so each call reads only the others' calls since its last
/// one. Turns are on the wall clock, so instances' clocks must agree (NTP) to the precision the
/// limits need. A transaction rerun after a failure may leave a turn counted here that was never
/// recorded: that only makes this instance wait a little more.
public final class SharedQuota: RequestQuota {
    public let scope: String
    public let limits: QuotaLimits
    let storage: any Storage
    let clock: any WallClock
    let sleep: @Sendable (Duration) async throws -> Void

    private struct Seen: Sendable {
        var log: QuotaLog
        /// The highest admission id read or written.
        var lastID = 0
    }
    private let seen: Mutex<Seen>

    /// - Parameters:
    ///   - scope: what the store counts the quota against, e.g. `google-play:<project>`.
    ///   - clock: the wall clock turns are taken on (the real one in a server, since the store counts
    ///     in real time).
    ///   - sleep: how a call waits for its turn.
    public init(
        scope: String, limits: QuotaLimits, storage: any Storage, clock: any WallClock = SystemWallClock(),
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) {
        self.scope = scope
        self.limits = limits
        self.storage = storage
        self.clock = clock
        self.sleep = sleep
        self.seen = Mutex(Seen(log: QuotaLog(limits: limits)))
    }

    public func acquire(_ bucket: QuotaBucket) async throws {
        guard !limits.isUnlimited else { return }
        // A turn that is due goes at once, however long its reservation waited for the scope's
        // lock: what it waited behind are calls of earlier turns.
        let clock = self.clock
        try await QuotaLimits.waitForTurn(
            now: { .seconds(clock.now().timeIntervalSince1970) },
            sleep: { try await sleep(.milliseconds(Self.milliseconds($0, roundingUp: true))) },
            reserve: { .seconds(try await reserve(bucket).timeIntervalSince1970) })
    }

    /// Gives a call in `bucket` its turn and records it where every instance sees it; returns when
    /// the call may go (now, or later when a window is full).
    ///
    /// - Throws: ``QuotaExhausted`` when the turn is further away than ``QuotaLimits/maxWait``
    ///   (nothing is recorded then), or a storage error.
    public func reserve(_ bucket: QuotaBucket) async throws -> Date {
        let (scope, clock, longest) = (scope, clock, limits.longestWindow)
        let turn: Date? = try await storage.transaction { [self] transaction in
            try await transaction.lockQuotaScope(scope)
            // Read after the lock: waiting for it may have taken a while.
            let now = clock.now()
            let nowOffset = Self.offset(of: now, roundingUp: true)
            let horizon = Self.date(at: nowOffset - longest)
            let lastID = seen.withLock { $0.lastID }
            let recorded = try await transaction.quotaAdmissions(scope: scope, after: lastID, since: horizon)
            let turn: Duration? = seen.withLock { seen in
                for admission in recorded {
                    seen.log.record(QuotaBucket(rawValue: admission.bucket), at: Self.offset(of: admission.time))
                    seen.lastID = max(seen.lastID, admission.id)
                }
                seen.log.prune(before: nowOffset)
                return seen.log.turn(of: bucket, at: nowOffset)
            }
            guard let turn else { return nil }
            // Stored in whole milliseconds; rounding up keeps every window within its limit.
            let storedTurn = Duration.milliseconds(Self.milliseconds(turn, roundingUp: true))
            let id = try await transaction.recordQuotaAdmission(
                scope: scope, bucket: bucket.rawValue, at: Self.date(at: storedTurn))
            seen.withLock { seen in
                seen.log.record(bucket, at: storedTurn)
                seen.lastID = max(seen.lastID, id)
            }
            try await transaction.pruneQuotaAdmissions(scope: scope, through: horizon)
            return Self.date(at: storedTurn)
        }
        guard let turn else { throw limits.exhausted(bucket) }
        return turn
    }

    /// A date as a duration since 1970, in whole milliseconds (as stored): a stored time to the
    /// nearest (it is a whole millisecond already), now rounded up (a turn is never before now).
    static func offset(of date: Date, roundingUp: Bool = false) -> Duration {
        let milliseconds = date.timeIntervalSince1970 * 1000
        return .milliseconds(Int64(roundingUp ? milliseconds.rounded(.up) : milliseconds.rounded()))
    }

    static func date(at offset: Duration) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds(offset, roundingUp: false)) / 1000)
    }

    static func milliseconds(_ duration: Duration, roundingUp: Bool) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let perMillisecond: Int64 = 1_000_000_000_000_000
        var milliseconds = seconds * 1000 + attoseconds / perMillisecond
        if roundingUp, attoseconds % perMillisecond > 0 { milliseconds += 1 }
        return milliseconds
    }
}

/// Makes the quota each store client asks before its calls, one per scope: counted in this process
/// (``QuotaLimiter``), or in storage (``SharedQuota``) so that instances sharing the database
/// count together.
public struct StoreQuotas: Sendable {
    let make: @Sendable (_ scope: String, _ limits: QuotaLimits) -> any RequestQuota

    public init(make: @escaping @Sendable (_ scope: String, _ limits: QuotaLimits) -> any RequestQuota) {
        self.make = make
    }

    /// Counted in this process only.
    public static let inProcess = StoreQuotas { _, limits in QuotaLimiter(limits: limits) }

    /// Counted in `storage`, on `clock`.
    public static func shared(storage: any Storage, clock: any WallClock = SystemWallClock()) -> StoreQuotas {
        StoreQuotas { scope, limits in SharedQuota(scope: scope, limits: limits, storage: storage, clock: clock) }
    }

    /// The quota of `scope`, or nil when `limits` hold nothing back.
    func quota(scope: String, limits: QuotaLimits) -> (any RequestQuota)? {
        limits.isUnlimited ? nil : make(scope, limits)
    }
}
