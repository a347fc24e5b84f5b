public import Foundation
import Logging
import ServiceLifecycle
public import StoreCore
public import StorekeeperStorage

/// A background job run now and then every `interval` seconds until the service group shuts
/// down: the one loop behind the acknowledgement sweep and the catch-up. With a ``JobLease``,
/// a round runs only on the instance holding the job's lease, so instances sharing one database
/// take turns instead of repeating each other's store calls. A disabled job waits for shutdown
/// instead of returning, since a service that returns ends its group.
final class PeriodicService: Service, Sendable {
    let name: String
    let interval: Double
    let enabled: Bool
    let lease: JobLease?
    let logger: Logger
    let job: @Sendable () async throws -> Void

    init(
        _ name: String, every interval: Double, enabled: Bool = true, lease: JobLease? = nil, logger: Logger,
        job: @escaping @Sendable () async throws -> Void
    ) {
        self.name = name
        self.interval = interval
        self.enabled = enabled
        self.lease = lease
        self.logger = logger
        self.job = job
    }

    func run() async throws {
        guard enabled else {
            try? await gracefulShutdown()
            return
        }
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            do {
                // Store calls made by the job name it in their User-Agent.
                let (name, job) = (name, job)
                let round: @Sendable () async throws -> Void = {
                    try await StoreCallOrigin.$job.withValue(name) { try await job() }
                }
                if let lease {
                    try await lease.runIfHeld(round)
                } else {
                    try await round()
                }
            } catch let lost as JobLeaseLost {
                logger.warning("\(name) stopped mid-round: \(lost)")
            } catch {
                logger.warning("\(name) failed; will retry", metadata: ["error": "\(error)"])
            }
            let interval = self.interval
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(interval)) }
        }
        // Given up outside this (possibly cancelled) task, whose storage calls would be cancelled too.
        if let lease { await Task { await lease.release() }.value }
    }
}

/// The lease on one background job, held in storage by one instance at a time (see
/// ``StorageTransaction/acquireJobLease(_:holder:now:until:)``). Renewed by its holder at every
/// round and while a round runs; a holder that dies loses it once `duration` has passed, and
/// another instance takes over.
public struct JobLease: Sendable {
    public let name: String
    /// This instance.
    public let holder: String
    public let duration: TimeInterval
    public let storage: any Storage
    public let clock: any WallClock

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
        return try await storage.transaction {
            try await $0.acquireJobLease(name, holder: holder, now: now, until: expiry)
        }
    }

    /// Runs `body`, a round of the job, if this instance holds the lease or can take it; returns
    /// whether it ran. The lease is renewed every third of `duration` while the round runs: a round
    /// may outlast the lease (a catch-up waiting for quota turns), and the other live instances must
    /// not take the job meanwhile. If the lease is lost anyway (another instance took it, or
    /// renewals failed until it ran out), `body` is cancelled and ``JobLeaseLost`` thrown, so two
    /// rounds never overlap for long.
    @discardableResult
    public func runIfHeld(_ body: @escaping @Sendable () async throws -> Void) async throws -> Bool {
        // Taken before asking: the lease runs out `duration` after a moment no earlier than this.
        let asked = clock.now()
        guard try await acquire() else { return false }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await body() }
            group.addTask { try await renewWhileHeld(until: asked.addingTimeInterval(duration)) }
            // The first to finish decides: the round's end (which stops the renewals), or the
            // lease's loss (thrown, which cancels the round).
            try await group.next()
            group.cancelAll()
        }
        return true
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
        let (name, holder) = (name, holder)
        _ = try? await storage.transaction { try await $0.releaseJobLease(name, holder: holder) }
    }
}

/// Thrown out of ``JobLease/runIfHeld(_:)`` when another instance took the lease mid-round.
public struct JobLeaseLost: Error, CustomStringConvertible, Sendable {
    public let name: String
    public var description: String { "the lease on job \(name) was taken by another instance" }
}
