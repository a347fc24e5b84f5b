/// Lets one transaction at a time use the SQLite connection, first come first served, and shuts
/// the door for good on ``close()``.
actor TransactionGate {
    private var held = false
    private var closed = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// Waits for the connection; throws ``StorageError/Reason/unavailable`` once the storage is closed.
    func enter() async throws {
        guard !closed else { throw Self.closedError }
        if held {
            await withCheckedContinuation { waiters.append($0) }
        } else {
            held = true
        }
        if closed {
            leave()
            throw Self.closedError
        }
    }

    /// Hands the connection to the next waiter, if any.
    func leave() {
        if waiters.isEmpty {
            held = false
        } else {
            waiters.removeFirst().resume()
        }
    }

    /// Refuses new transactions and returns once those already running or waiting are done; the
    /// caller then owns the connection for good.
    func close() async -> Bool {
        guard !closed else { return false }
        closed = true
        if held {
            await withCheckedContinuation { waiters.append($0) }
        } else {
            held = true
        }
        return true
    }

    private static let closedError = StorageError(.unavailable, "the storage is closed")
}
