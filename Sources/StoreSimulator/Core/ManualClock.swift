public import AppStoreServer
public import Foundation
import Synchronization

/// A clock that moves only when told to: for tests.
public final class ManualClock: WallClock {
    private let current: Mutex<Date>

    public init(_ start: Date) {
        current = Mutex(start)
    }

    public func now() -> Date { current.withLock { $0 } }

    /// Sets the clock to `date`.
    public func set(_ date: Date) {
        current.withLock { $0 = date }
    }

    /// Moves the clock by `seconds` (negative moves it back).
    public func advance(by seconds: TimeInterval) {
        current.withLock { $0 += seconds }
    }
}
