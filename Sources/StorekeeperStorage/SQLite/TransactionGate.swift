/// Lets one transaction at a time use the SQLite connection and shuts the door for good on
/// ``close()``.
///
/// Waiters queue in two lanes, each first come first served: a transaction someone is waiting on
/// (a webhook's insert, an API write) goes ahead of background work (processing the inbox), so a
/// burst of deliveries is made durable and answered without waiting behind processing batches.
/// Background work still gets every ``urgentInARow``-th turn while both lanes wait.
actor TransactionGate {
    /// Which lane a transaction waits in.
    enum Lane: Sendable {
        case urgent
        case background
    }

    /// How many urgent transactions may go in a row while background work waits.
    static let urgentInARow = 4

    private var held = false
    private var closed = false
    private var urgent: [CheckedContinuation<Void, Never>] = []
    private var background: [CheckedContinuation<Void, Never>] = []
    private var urgentGranted = 0

    /// How many transactions wait (for tests and diagnostics).
    var waiting: Int { urgent.count + background.count }

    /// Waits for the connection; throws ``StorageError/Reason/unavailable`` once the storage is closed.
    func enter(_ lane: Lane) async throws {
        guard !closed else { throw Self.closedError }
        if held {
            await withCheckedContinuation { continuation in
                switch lane {
                case .urgent: urgent.append(continuation)
                case .background: background.append(continuation)
                }
            }
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
        if !urgent.isEmpty && (background.isEmpty || urgentGranted < Self.urgentInARow) {
            urgentGranted += 1
            urgent.removeFirst().resume()
        } else if !background.isEmpty {
            urgentGranted = 0
            background.removeFirst().resume()
        } else {
            urgentGranted = 0
            held = false
        }
    }

    /// Refuses new transactions and returns once those already running or waiting are done; the
    /// caller then owns the connection for good.
    func close() async -> Bool {
        guard !closed else { return false }
        closed = true
        if held {
            await withCheckedContinuation { background.append($0) }
        } else {
            held = true
        }
        return true
    }

    private static let closedError = StorageError(.unavailable, "the storage is closed")
}
