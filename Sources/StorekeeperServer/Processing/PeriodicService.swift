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
/// ``StorageTransaction/acquireJobLease(_:holder:now:until:)``). Renewed by its holder at every
/// round; a holder that dies loses it once `duration` has passed, and another instance takes over.
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

    /// Gives the lease up (best effort), so another instance can take the job at once.
    public func release() async {
        let (name, holder) = (name, holder)
        _ = try? await storage.transaction { try await $0.releaseJobLease(name, holder: holder) }
    }
}
