import Synchronization

/// Lets one transaction at a time use the SQLite connection and shuts the door for good on
/// ``close()``.
///
/// Waiters queue in two lanes, each first come first served: a transaction someone is waiting on
/// (a webhook's insert, an API write) goes ahead of background work (processing the inbox), so a
/// burst of deliveries is made durable and answered without waiting behind processing batches.
/// Background work still gets every ``urgentInARow``-th turn while both lanes wait.
///
/// A lock, not an actor: ``leave()`` hands the connection over synchronously, on the thread that
/// ran the transaction, and the waiter resumes on its own executor (the connection's thread, when
/// it waits with that thread as its task executor preference). As an actor, every hand-over hopped
/// twice through the cooperative pool, behind the HTTP handlers' signature checks; the ingest
/// benchmark measured the writer idle between transactions for ~15% of the run.
final class TransactionGate: Sendable {
    /// Which lane a transaction waits in.
    enum Lane: Sendable {
        case urgent
        case background
    }

    /// How many urgent transactions may go in a row while background work waits.
    static let urgentInARow = 4

    private struct State {
        var held = false
        var closed = false
        var urgent: [CheckedContinuation<Void, Never>] = []
        var background: [CheckedContinuation<Void, Never>] = []
        var urgentGranted = 0
    }

    private let state = Mutex(State())

    /// How many transactions wait (for tests and diagnostics).
    var waiting: Int { state.withLock { $0.urgent.count + $0.background.count } }

    /// Waits for the connection; throws ``StorageError/Reason/unavailable`` once the storage is closed.
    func enter(_ lane: Lane) async throws {
        let entered: Bool? = state.withLock { state in
            guard !state.closed else { return false }
            guard state.held else {
                state.held = true
                return true
            }
            return nil
        }
        switch entered {
        case false?: throw Self.closedError
        case true?: return
        case nil:
            await withCheckedContinuation { continuation in
                let enteredMeanwhile = state.withLock { state in
                    // Left between the two locks: take it now rather than wait for nobody.
                    guard state.held else {
                        state.held = true
                        return true
                    }
                    switch lane {
                    case .urgent: state.urgent.append(continuation)
                    case .background: state.background.append(continuation)
                    }
                    return false
                }
                if enteredMeanwhile { continuation.resume() }
            }
            if state.withLock({ $0.closed }) {
                leave()
                throw Self.closedError
            }
        }
    }

    /// Hands the connection to the next waiter, if any.
    func leave() {
        let next: CheckedContinuation<Void, Never>? = state.withLock { state in
            if !state.urgent.isEmpty && (state.background.isEmpty || state.urgentGranted < Self.urgentInARow) {
                state.urgentGranted += 1
                return state.urgent.removeFirst()
            } else if !state.background.isEmpty {
                state.urgentGranted = 0
                return state.background.removeFirst()
            } else {
                state.urgentGranted = 0
                state.held = false
                return nil
            }
        }
        next?.resume()
    }

    /// Refuses new transactions and returns once those already running or waiting are done; the
    /// caller then owns the connection for good.
    func close() async -> Bool {
        let entered: Bool? = state.withLock { state in
            guard !state.closed else { return false }
            state.closed = true
            guard state.held else {
                state.held = true
                return true
            }
            return nil
        }
        if let entered { return entered }
        await withCheckedContinuation { continuation in
            let enteredMeanwhile = state.withLock { state in
                guard state.held else {
                    state.held = true
                    return true
                }
                state.background.append(continuation)
                return false
            }
            if enteredMeanwhile { continuation.resume() }
        }
        return true
    }

    private static let closedError = StorageError(.unavailable, "the storage is closed")
}
