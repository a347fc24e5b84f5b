public import Foundation

/// The current wall-clock time, injected so tests and the store simulator can control it.
public protocol WallClock: Sendable {
    /// Now.
    func now() -> Date
}

/// The system's clock.
public struct SystemWallClock: WallClock {
    public init() {}
    public func now() -> Date { Date() }
}
