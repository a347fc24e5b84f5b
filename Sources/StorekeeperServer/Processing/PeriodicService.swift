import Logging
import ServiceLifecycle

/// A background job run now and then every `interval` seconds until the service group shuts
/// down: the one loop behind the acknowledgement sweeper and the catch-up. A disabled job waits
/// for shutdown instead of returning, since a service that returns ends its group.
final class PeriodicService: Service, Sendable {
    let name: String
    let interval: Double
    let enabled: Bool
    let logger: Logger
    let job: @Sendable () async throws -> Void

    init(
        _ name: String, every interval: Double, enabled: Bool = true, logger: Logger,
        job: @escaping @Sendable () async throws -> Void
    ) {
        self.name = name
        self.interval = interval
        self.enabled = enabled
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
                try await job()
            } catch {
                logger.warning("\(name) failed; will retry", metadata: ["error": "\(error)"])
            }
            let interval = self.interval
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(interval)) }
        }
    }
}
