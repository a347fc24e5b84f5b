import Synchronization

// A deadline for a test's scenario: a stall fails the test (reporting what it got to) instead of
// stalling the whole suite, and a deadline that starts where the scenario does, not where the
// test's set-up (a fresh database, under the whole suite's load) began.

extension Task where Failure == any Error {
    /// The task's result if it ends within `limit`; nil (without waiting any longer) otherwise.
    public func result(within limit: Duration) async -> Result<Success, any Error>? {
        let outcome = OnceContinuation<Result<Success, any Error>?>()
        return await withCheckedContinuation { continuation in
            outcome.set(continuation)
            Task<Void, Never> { outcome.resume(with: await self.result) }
            Task<Void, Never> {
                try? await Task<Never, Never>.sleep(for: limit)
                outcome.resume(with: nil)
            }
        }
    }
}

/// A continuation resumed by whichever of several racers comes first.
private final class OnceContinuation<Value: Sendable>: Sendable {
    private let state = Mutex<(CheckedContinuation<Value, Never>?, Value?)>((nil, nil))

    func set(_ continuation: CheckedContinuation<Value, Never>) {
        let early = state.withLock { state -> Value? in
            if let value = state.1 { return value }
            state.0 = continuation
            return nil
        }
        if let early { continuation.resume(returning: early) }
    }

    func resume(with value: Value) {
        let continuation = state.withLock { state -> CheckedContinuation<Value, Never>? in
            guard state.1 == nil else { return nil }
            state.1 = value
            defer { state.0 = nil }
            return state.0
        }
        continuation?.resume(returning: value)
    }
}
