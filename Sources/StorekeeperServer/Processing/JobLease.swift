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
            group.addTask { try await self.renewWhileHeld(until: heldSince.addingTimeInterval(self.duration)) }
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

    /// Renews the lease every third of `duration` until cancelled; throws ``JobLeaseLost`` once
    /// it is held no more. A renewal that fails (the database briefly unreachable) is retried at
    /// the next beat, until the last successful one has run out.
    private func renewWhileHeld(until expiry: Date) async throws {
        var heldUntil = expiry
        while true {
            try await Task.sleep(for: .seconds(duration / 3))
            let attempted = clock.now()
            do {
                guard try await acquire() else { throw JobLeaseLost(name: name) }
                heldUntil = attempted.addingTimeInterval(duration)
            } catch let error where !(error is JobLeaseLost) && !(error is CancellationError) {
                if clock.now() >= heldUntil { throw JobLeaseLost(name: name) }
            }
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
