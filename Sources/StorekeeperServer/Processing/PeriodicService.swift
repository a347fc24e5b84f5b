public import Foundation
import Logging
import ServiceLifecycle
public import StoreCore
public import StorekeeperStorage
import Synchronization

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
                if try await lease?.acquire() ?? true {
                    // Store calls made by the job name it in their User-Agent.
                    try await StoreCallOrigin.$job.withValue(name) { try await job() }
                }
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
/// ``StorageTransaction/acquireJobLease(_:holder:now:until:)``). Renewed by its holder once half
/// of it has run out; a holder that dies loses it once its lease has expired (within `duration`),
/// and another instance takes over.
///
/// Not renewed at every round: a job polled every second (webhook delivery) then wrote the
/// database every second, and on SQLite each commit makes the API's reader connection drop its
/// whole page cache (the customer-read benchmark's latency stalls). Until its expiry no other
/// instance can take the lease, so the holder knows it still holds it without asking.
public struct JobLease: Sendable {
    public let name: String
    /// This instance.
    public let holder: String
    public let duration: TimeInterval
    public let storage: any Storage
    public let clock: any WallClock
    /// When the lease this instance last wrote expires (nil: not known to be held).
    private let memory = HeldLease()

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
        if let heldUntil = memory.until.withLock({ $0 }), now < heldUntil.addingTimeInterval(-duration / 2) {
            return true
        }
        let (name, holder, expiry) = (name, holder, now.addingTimeInterval(duration))
        let held = try await storage.transaction {
            try await $0.acquireJobLease(name, holder: holder, now: now, until: expiry)
        }
        memory.until.withLock { $0 = held ? expiry : nil }
        return held
    }

    /// Gives the lease up (best effort), so another instance can take the job at once.
    public func release() async {
        memory.until.withLock { $0 = nil }
        let (name, holder) = (name, holder)
        _ = try? await storage.transaction { try await $0.releaseJobLease(name, holder: holder) }
    }
}

/// What a ``JobLease`` (a value, copied into each round) remembers between rounds.
private final class HeldLease: Sendable {
    let until = Mutex<Date?>(nil)
}
