import Synchronization

/// Commits writes that arrive concurrently together: while one commit is running, the writes that
/// come in wait, and the next commit takes all of them at once. Every caller still returns only
/// after its own write is committed (or failed), so durability is unchanged; what changes is that
/// a burst of N concurrent webhooks costs a handful of commits (on SQLite, of fsyncs) instead of N.
///
/// Up to `overlapping` commits run at once, each with the writes waiting when it asked for them
/// (``Group/items()``): on SQLite the next group's transaction runs while the last one's flush is
/// on its way to the disk (SQLiteWALFlusher), instead of after it.
///
/// A commit of several writes that fails is retried one write at a time, so one bad write fails
/// alone and its neighbours don't share its error.
final class GroupCommitter<Item: Sendable, Outcome: Sendable>: Sendable {
    typealias Commit = @Sendable (Group) async throws -> [Outcome]

    fileprivate struct Waiter {
        var item: Item
        var continuation: CheckedContinuation<Outcome, any Error>
    }

    fileprivate struct State {
        var waiting: [Waiter] = []
        var committing = 0
    }

    /// The items of one commit, taken when the commit asks for them: a commit that asks once it
    /// holds what it commits under (its transaction, on SQLite the one writer) also takes the
    /// items that arrived while it waited for that. In the SQLite ingest benchmark a group waited
    /// about 4 ms for the writer, and took only the ~6 items waiting before it did.
    final class Group: Sendable {
        private let committer: GroupCommitter
        private let taken: Mutex<[Waiter]?>

        fileprivate init(_ committer: GroupCommitter, taking waiters: [Waiter]? = nil) {
            self.committer = committer
            self.taken = Mutex(waiters)
        }

        /// The items this commit commits, in the order they were submitted; every call gives the
        /// same ones (a transaction run again commits what its first run did). Empty when another
        /// commit took every waiting item first.
        func items() -> [Item] { waiters.map(\.item) }

        /// The waiters whose items ``items()`` gives, taken from those waiting at the first call.
        fileprivate var waiters: [Waiter] {
            taken.withLock { taken in
                if let taken { return taken }
                let waiters = committer.state.withLock { state in
                    let batch = Array(state.waiting.prefix(committer.maxBatch))
                    state.waiting.removeFirst(batch.count)
                    return batch
                }
                taken = waiters
                return waiters
            }
        }
    }

    fileprivate let state = Mutex(State())
    fileprivate let maxBatch: Int
    private let overlapping: Int
    /// Commits the group's items in one transaction; returns one outcome per item, in order.
    private let commit: Commit

    init(maxBatch: Int, overlapping: Int = 1, commit: @escaping Commit) {
        self.maxBatch = max(1, maxBatch)
        self.overlapping = max(1, overlapping)
        self.commit = commit
    }

    /// How many submitted items no commit has taken yet (for tests).
    var waitingCount: Int { state.withLock { $0.waiting.count } }

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
            let done = state.withLock { state in
                if state.waiting.isEmpty { state.committing -= 1 }
                return state.waiting.isEmpty
            }
            if done { return }
            await commitTogether(Group(self))
        }
    }

    private func commitTogether(_ group: Group) async {
        do {
            let outcomes = try await commit(group)
            let batch = group.waiters
            guard outcomes.count == batch.count else {
                throw GroupCommitError(expected: batch.count, got: outcomes.count)
            }
            for (waiter, outcome) in zip(batch, outcomes) { waiter.continuation.resume(returning: outcome) }
        } catch {
            let batch = group.waiters
            guard batch.count > 1 else {
                batch.first?.continuation.resume(throwing: error)
                return
            }
            for waiter in batch { await commitTogether(Group(self, taking: [waiter])) }
        }
    }
}

/// A commit returned a different number of outcomes than it was given items (a bug).
struct GroupCommitError: Error, CustomStringConvertible {
    var expected: Int
    var got: Int
    var description: String { "a group commit of \(expected) items returned \(got) outcomes" }
}
