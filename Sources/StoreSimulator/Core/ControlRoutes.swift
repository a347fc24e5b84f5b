import Foundation
import Hummingbird

/// The simulator's control API: drive the clock and the faults over HTTP (the Swift API of
/// ``StoreSimulator`` does the same for tests in-process).
struct ControlRoutes {
    let clock: SimulatorClock
    let faults: FaultInjector
    let endpoints: @Sendable () -> StoreSimulator.Endpoints?

    struct ClockState: ResponseEncodable, Decodable {
        /// Simulated now, milliseconds since 1970.
        var now: Int64
        /// Simulated seconds per real second.
        var rate: Double
    }

    struct Advance: Decodable {
        var seconds: Double
    }

    struct Rate: Decodable {
        var rate: Double
    }

    struct Faults: ResponseEncodable {
        var pending: [APIFault]
        var injected: Int
    }

    /// Hummingbird stays an implementation detail: the public type is wrapped here.
    struct EndpointsResponse: ResponseEncodable {
        var endpoints: StoreSimulator.Endpoints
        func encode(to encoder: any Encoder) throws { try endpoints.encode(to: encoder) }
    }

    func register(on router: Router<BasicRequestContext>) {
        let control = router.group("control")
        control.get("clock") { _, _ in state() }
        control.post("clock/advance") { request, context in
            let advance = try await request.decode(as: Advance.self, context: context)
            guard advance.seconds >= 0, advance.seconds.isFinite else {
                throw HTTPError(.badRequest, message: "seconds must be a finite number ≥ 0")
            }
            clock.advance(by: advance.seconds)
            return state()
        }
        control.post("clock/rate") { request, context in
            let rate = try await request.decode(as: Rate.self, context: context)
            guard rate.rate >= 0, rate.rate.isFinite else {
                throw HTTPError(.badRequest, message: "rate must be a finite number ≥ 0")
            }
            clock.setRate(rate.rate)
            return state()
        }
        control.get("faults") { _, _ in Faults(pending: faults.pending, injected: faults.injectedCount) }
        control.post("faults") { request, context in
            let new = try await request.decode(as: [APIFault].self, context: context)
            faults.add(new)
            return Faults(pending: faults.pending, injected: faults.injectedCount)
        }
        control.delete("faults") { _, _ in
            faults.clear()
            return Faults(pending: [], injected: faults.injectedCount)
        }
        control.get("endpoints") { _, _ in
            guard let endpoints = endpoints() else { throw HTTPError(.serviceUnavailable) }
            return EndpointsResponse(endpoints: endpoints)
        }
    }

    private func state() -> ClockState {
        ClockState(now: Int64((clock.now().timeIntervalSince1970 * 1000).rounded()), rate: clock.rate)
    }
}
