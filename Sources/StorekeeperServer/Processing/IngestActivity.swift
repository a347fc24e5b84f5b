import Synchronization

/// When this instance last received or processed a store notification: background work that can
/// wait (webhook delivery) yields to ingest while it is busy, so a burst of store notifications is
/// acknowledged and processed at full speed and the deliveries catch up right after it.
///
/// Real time on purpose, like a sleep: it paces work on this machine and decides nothing about
/// purchases.
public final class IngestActivity: Sendable {
    private let origin = ContinuousClock.now
    /// Nanoseconds after `origin` of the last activity; `Int64.min` before any.
    private let last = Atomic<Int64>(.min)

    public init() {}

    /// Notes that a notification was received or processed now.
    public func noteActivity() {
        last.store(Self.nanoseconds(origin.duration(to: .now)), ordering: .relaxed)
    }

    /// Whether there was activity within `window` before now.
    public func isBusy(within window: Duration) -> Bool {
        let noted = last.load(ordering: .relaxed)
        guard noted != .min else { return false }
        let now = Self.nanoseconds(origin.duration(to: .now))
        return now - noted <= Self.nanoseconds(window)
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
