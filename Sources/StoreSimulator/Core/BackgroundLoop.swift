import Synchronization

/// The loop a simulated store runs in the background — fire due events, deliver what is due,
/// sleep — and the flag that stops it between rounds (a delivery in flight is never cut off, so
/// receivers can shut down cleanly after the simulator).
final class BackgroundLoop: Sendable {
    private let worker = Mutex<Task<Void, Never>?>(nil)
    private let stopping = Mutex(false)

    /// Whether ``stop()`` was called and no ``start(interval:round:)`` since.
    var isStopping: Bool { stopping.withLock { $0 } }

    /// Starts running `round` every `interval` (real time) unless already running; `round` returns
    /// false when its owner is gone.
    func start(interval: Duration, round: @escaping @Sendable () async -> Bool) {
        stopping.withLock { $0 = false }
        worker.withLock { worker in
            guard worker == nil else { return }
            worker = Task { [weak self] in
                while !Task.isCancelled {
                    guard let self, !self.isStopping, await round() else { return }
                    try? await Task.sleep(for: interval)
                }
            }
        }
    }

    /// Stops the loop after its current round and waits for it.
    func stop() async {
        stopping.withLock { $0 = true }
        let task = worker.withLock { worker -> Task<Void, Never>? in
            defer { worker = nil }
            return worker
        }
        await task?.value
    }

    /// Repeats `round` until it reports nothing busy (true), failing with `stopped` when the loop
    /// stops and `timedOut` after `timeout` of real time.
    func settle<Failure: Error>(
        timeout: Duration, stopped: Failure, timedOut: Failure, round: () async throws(Failure) -> Bool
    ) async throws(Failure) {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            guard !isStopping else { throw stopped }
            if try await round() { return }
            guard ContinuousClock.now < deadline else { throw timedOut }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }
}

/// SplitMix64: the simulators' seeded source of ids, so the same seed and scenario give the same ids.
struct SeededRandom: Sendable {
    private var state: UInt64

    init(state: UInt64) { self.state = state }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
