public import AppStoreServer
public import Foundation
import Synchronization

/// The simulator's notion of now: starts at a chosen date and runs `rate` times faster than the
/// real clock, and can be moved forward by hand. Stores' lifecycles (renewals, grace periods,
/// Google's 3-day acknowledgement window) happen on this clock.
///
/// Its now is always a whole millisecond (the stores' wire precision), so a date the simulator
/// stores and later sends is the same wherever it appears, at any rate.
///
/// What real clients judge on their own clock — the lifetimes of their API tokens and assertions,
/// access tokens, push tokens, OCSP answers — goes by ``wallClock`` instead.
public final class SimulatorClock: WallClock {
    struct State {
        var realAnchor: Date
        var simulatedAnchor: Date
        var rate: Double
    }

    private let real: any WallClock
    private let state: Mutex<State>

    /// - Parameters:
    ///   - start: the simulated time at creation (default: the real time).
    ///   - rate: simulated seconds per real second (1 is real time; 86 400 is a day per second).
    ///   - real: the real clock it runs on (injected in tests).
    public init(start: Date? = nil, rate: Double = 1, real: any WallClock = SystemWallClock()) {
        let now = real.now()
        self.real = real
        self.state = Mutex(State(realAnchor: now, simulatedAnchor: start ?? now, rate: max(0, rate)))
    }

    public func now() -> Date {
        let realNow = real.now()
        return Self.wholeMilliseconds(state.withLock { Self.simulated(at: realNow, $0) })
    }

    /// The real clock this clock runs on: what clients outside the simulation call now.
    public var wallClock: any WallClock { real }

    /// Simulated seconds per real second.
    public var rate: Double { state.withLock { $0.rate } }

    /// Moves simulated time forward (never backward: stores never see time go back).
    public func advance(by seconds: TimeInterval) {
        let realNow = real.now()
        state.withLock { state in
            state.simulatedAnchor = Self.simulated(at: realNow, state) + max(0, seconds)
            state.realAnchor = realNow
        }
    }

    /// Changes how fast simulated time runs from now on.
    public func setRate(_ rate: Double) {
        let realNow = real.now()
        state.withLock { state in
            state.simulatedAnchor = Self.simulated(at: realNow, state)
            state.realAnchor = realNow
            state.rate = max(0, rate)
        }
    }

    /// `date` rounded to the nearer whole millisecond.
    static func wholeMilliseconds(_ date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 * 1000).rounded() / 1000)
    }

    private static func simulated(at realNow: Date, _ state: State) -> Date {
        state.simulatedAnchor + realNow.timeIntervalSince(state.realAnchor) * state.rate
    }
}
