public import Foundation

/// The current wall-clock time, injected so tests and the store simulator can control it.
///
/// The same shape as the App Store module's clock: the store modules do not depend on each other,
/// so each declares its own.
public protocol WallClock: Sendable {
    /// Now.
    func now() -> Date
}

/// The system's clock.
public struct SystemWallClock: WallClock {
    /// Creates the system clock.
    public init() {}
    /// The real current time.
    public func now() -> Date { Date() }
}
