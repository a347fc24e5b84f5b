import Foundation
import Logging
import ServiceLifecycle
import StoreCore
import StorekeeperStorage

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
    /// Called after each round skipped because another instance holds the lease: what the job
    /// reports (its gauges) is that instance's to report now. Its error is the round's.
    let heldElsewhere: @Sendable () async throws -> Void

    init(
        _ name: String, every interval: Double, enabled: Bool = true, lease: JobLease? = nil, logger: Logger,
        job: @escaping @Sendable () async throws -> Void,
        heldElsewhere: @escaping @Sendable () async throws -> Void = {}
    ) {
        self.name = name
        self.interval = interval
        self.enabled = enabled
        self.lease = lease
        self.logger = logger
        self.heldElsewhere = heldElsewhere
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
                    if try await !lease.runIfHeld(round) { try await heldElsewhere() }
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
