import Synchronization

/// Commits writes that arrive concurrently together: while one commit is running, the writes that
/// come in wait, and the next commit takes all of them at once. Every caller still returns only
/// after its own write is committed (or failed), so durability is unchanged; what changes is that
/// a burst of N concurrent webhooks costs a handful of commits (on SQLite, of fsyncs) instead of N.
///
/// Up to `overlapping` commits run at once, each with the writes that waited when it began: on
/// SQLite the next group's transaction runs while the last one's flush is on its way to the disk
/// (SQLiteWALFlusher), instead of after it.
///
/// A commit of several writes that fails is retried one write at a time, so one bad write fails
/// alone and its neighbours don't share its error.
final class GroupCommitter<Item: Sendable, Outcome: Sendable>: Sendable {
    typealias Commit = @Sendable ([Item]) async throws -> [Outcome]

    private struct Waiter {
        var item: Item
        var continuation: CheckedContinuation<Outcome, any Error>
    }

    private struct State {
        var waiting: [Waiter] = []
        var committing = 0
    }

    private let state = Mutex(State())
    private let maxBatch: Int
    private let overlapping: Int
    /// Commits the items in one transaction; returns one outcome per item, in order.
    private let commit: Commit

    init(maxBatch: Int, overlapping: Int = 1, commit: @escaping Commit) {
        self.maxBatch = max(1, maxBatch)
        self.overlapping = max(1, overlapping)
        self.commit = commit
    }

    /// Waits until `item` is committed, together with whatever else arrived meanwhile.
    func submit(_ item: Item) async throws -> Outcome {
        try await withCheckedThrowingContinuation { continuation in
            let startsCommitting = state.withLock { state in
                state.waiting.append(Waiter(item: item, continuation: continuation))
                guard state.committing < overlapping else { return false }
                state.committing += 1
                return true
            }
            // Detached: the commits belong to no one request (and must not inherit a caller's
            // task-locals, such as a storage's "inside a transaction" mark).
            if startsCommitting { Task.detached { await self.commitUntilNoneWaits() } }
        }
    }

    private func commitUntilNoneWaits() async {
        while true {
            let batch: [Waiter] = state.withLock { state in
                let batch = Array(state.waiting.prefix(maxBatch))
                state.waiting.removeFirst(batch.count)
                if batch.isEmpty { state.committing -= 1 }
                return batch
            }
            guard !batch.isEmpty else { return }
            await commitTogether(batch)
        }
    }

    private func commitTogether(_ batch: [Waiter]) async {
        do {
            let outcomes = try await commit(batch.map(\.item))
            guard outcomes.count == batch.count else {
                throw GroupCommitError(expected: batch.count, got: outcomes.count)
            }
            for (waiter, outcome) in zip(batch, outcomes) { waiter.continuation.resume(returning: outcome) }
        } catch {
            guard batch.count > 1 else {
                batch[0].continuation.resume(throwing: error)
                return
            }
            for waiter in batch { await commitTogether([waiter]) }
        }
    }
}

/// A commit returned a different number of outcomes than it was given items (a bug).
struct GroupCommitError: Error, CustomStringConvertible {
    var expected: Int
    var got: Int
    var description: String { "a group commit of \(expected) items returned \(got) outcomes" }
}
