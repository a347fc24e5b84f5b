public import Foundation
public import StoreCore
public import StorekeeperStorage
import Synchronization

/// The lease on one background job, held in storage by one instance at a time (see
/// ``StorageTransaction/acquireJobLease(_:holder:now:until:)``); a holder that dies loses it once
/// `duration` has passed, and another instance takes over.
///
/// Its holder renews it every third of `duration`, not at every round: no other instance can take
/// it before it runs out, so a round that starts within a third of the last renewal runs without
/// asking. (Renewed at every round, an idle instance wrote the lease of each job every round,
/// every second for webhook delivery.) While a round runs it is renewed every third too.
public final class JobLease: Sendable {
    public let name: String
    /// This instance.
    public let holder: String
    public let duration: TimeInterval
    public let storage: any Storage
    public let clock: any WallClock
    /// When this instance last took or renewed the lease (the moment before it asked), while it
    /// holds it.
    private let renewedAt = Mutex<Date?>(nil)

    public init(name: String, holder: String, duration: TimeInterval, storage: any Storage, clock: any WallClock) {
        self.name = name
        self.holder = holder
        self.duration = duration
        self.storage = storage
        self.clock = clock
    }

    /// Takes or renews the lease; returns whether this instance holds it.
    public func acquire() async throws -> Bool {
        let now = clock.now()
        let (name, holder, expiry) = (name, holder, now.addingTimeInterval(duration))
        let held = try await storage.transaction {
            try await $0.acquireJobLease(name, holder: holder, now: now, until: expiry)
        }
        renewedAt.withLock { $0 = held ? now : nil }
        return held
    }

    /// Runs `body`, a round of the job, if this instance holds the lease or can take it; returns
    /// whether it ran. The lease is renewed first unless that was done less than a third of
    /// `duration` ago, and then every third of `duration` while the round runs: a round may outlast
    /// the lease (a catch-up waiting for quota turns), and the other live instances must not take
    /// the job meanwhile. If the lease is lost anyway (another instance took it, or renewals failed
    /// until it ran out), `body` is cancelled and ``JobLeaseLost`` thrown, so two rounds never
    /// overlap for long.
    @discardableResult
    public func runIfHeld(_ body: @escaping @Sendable () async throws -> Void) async throws -> Bool {
        let heldSince: Date
        if let recent = recentRenewal() {
            heldSince = recent
        } else {
            // Taken before asking: the lease runs out `duration` after a moment no earlier than this.
            let asked = clock.now()
            guard try await acquire() else { return false }
            heldSince = asked
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await body() }
            group.addTask { try await self.renewWhileHeld(renewedAt: heldSince) }
            // The first to finish decides: the round's end (which stops the renewals), or the
            // lease's loss (thrown, which cancels the round).
            try await group.next()
            group.cancelAll()
        }
        return true
    }

    /// The last renewal, if it was less than a third of `duration` ago (and not ahead of the
    /// clock, which may have been set back): the lease then has two thirds of its time left.
    private func recentRenewal() -> Date? {
        let now = clock.now()
        return renewedAt.withLock { renewed in
            guard let renewed, renewed <= now, now < renewed.addingTimeInterval(duration / 3) else { return nil }
            return renewed
        }
    }

    /// Renews the lease every third of `duration` after its last renewal until cancelled; throws
    /// ``JobLeaseLost`` once it is held no more: another instance took it, or it ran out while
    /// renewals failed (the database briefly unreachable: a failed one is tried again a third
    /// later) or hung, whichever comes first.
    private func renewWhileHeld(renewedAt start: Date) async throws {
        var heldUntil = start.addingTimeInterval(duration)
        var nextBeat = start.addingTimeInterval(duration / 3)
        while true {
            try await Task.sleep(for: .seconds(max(0, nextBeat.timeIntervalSince(clock.now()))))
            let attempted = clock.now()
            guard attempted < heldUntil else { throw JobLeaseLost(name: name) }
            do {
                guard try await renew(before: heldUntil) else { throw JobLeaseLost(name: name) }
                heldUntil = attempted.addingTimeInterval(duration)
            } catch let error where !(error is JobLeaseLost) && !(error is CancellationError) {}
            nextBeat = attempted.addingTimeInterval(duration / 3)
        }
    }

    /// ``acquire()``, unless `deadline` comes first (a renewal waiting on a database that does
    /// not answer): then the lease is lost, since another instance may take it from then on. The
    /// renewal is left to finish on its own (a task group would wait for it, however long the
    /// database keeps it): if it gets through after all, this instance holds the lease again.
    private func renew(before deadline: Date) async throws -> Bool {
        let renewal = Task { try await self.acquire() }
        let outcome = FirstOutcome<Bool>()
        Task { outcome.settle(await renewal.result) }
        let timer = Task { [name, clock] in
            try await Task.sleep(for: .seconds(max(0, deadline.timeIntervalSince(clock.now()))))
            outcome.settle(.failure(JobLeaseLost(name: name)))
        }
        defer { timer.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in outcome.wait(continuation) }
        } onCancel: {
            renewal.cancel()
            outcome.settle(.failure(CancellationError()))
        }
    }

    /// Gives the lease up (best effort), so another instance can take the job at once.
    public func release() async {
        renewedAt.withLock { $0 = nil }
        let (name, holder) = (name, holder)
        _ = try? await storage.transaction { try await $0.releaseJobLease(name, holder: holder) }
    }
}

/// Thrown out of ``JobLease/runIfHeld(_:)`` when another instance took the lease mid-round.
public struct JobLeaseLost: Error, CustomStringConvertible, Sendable {
    public let name: String
    public var description: String { "the lease on job \(name) was taken by another instance" }
}

/// Whichever of several racing outcomes comes first, given to one waiting continuation; the later
/// ones are dropped.
private final class FirstOutcome<Value: Sendable>: Sendable {
    private enum State {
        case idle
        case waiting(CheckedContinuation<Value, any Error>)
        /// Settled before anyone waited.
        case settled(Result<Value, any Error>)
        case done
    }

    private let state = Mutex(State.idle)

    func wait(_ continuation: CheckedContinuation<Value, any Error>) {
        let early: Result<Value, any Error>? = state.withLock { state in
            switch state {
            case .idle:
                state = .waiting(continuation)
                return nil
            case .settled(let result):
                state = .done
                return result
            case .waiting, .done:
                return nil
            }
        }
        if let early { continuation.resume(with: early) }
    }

    func settle(_ result: Result<Value, any Error>) {
        let waiting: CheckedContinuation<Value, any Error>? = state.withLock { state in
            switch state {
            case .idle:
                state = .settled(result)
                return nil
            case .waiting(let continuation):
                state = .done
                return continuation
            case .settled, .done:
                return nil
            }
        }
        waiting?.resume(with: result)
    }
}
