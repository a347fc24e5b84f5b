import Foundation
import Hummingbird
import Logging
import PostgresNIO
import StorekeeperDemo
import StorekeeperServer
import StorekeeperStorage
import Synchronization

/// Ingest without and with webhook delivery, in one run (see main.swift).
struct WebhookBenchmark {
    let options: SimulatedDeployment.Options
    let storageName: String
    let count: Int
    let concurrency: Int
    /// Purchases are spread over this many customers: one customer's events are delivered one
    /// after another (per-customer order), different customers' concurrently.
    static let customers = 64

    func run() async throws {
        // Each deployment on its own database (the same seed makes the same store ids).
        var baselineOptions = options
        baselineOptions.directory = options.directory.appendingPathComponent("baseline")
        let baseline = try await withFreshDatabase(baselineOptions) { baselineOptions in
            try await SimulatedDeployment.withRunning(baselineOptions) { deployment in
                try await IngestRun(
                    deployment: deployment, instanceURLs: [deployment.baseURL], count: count,
                    concurrency: concurrency, customers: Self.customers, timesVerifier: false
                ).run()
            }
        }
        let received = Mutex(0)
        let receiver = try await LoopbackReceiver.start(logger: options.logger) {
            received.withLock { $0 += 1 }
            return .ok
        }
        defer { receiver.stop() }
        var options = self.options
        options.directory = self.options.directory.appendingPathComponent("webhooks")
        options.customize = { [url = receiver.url] _, configuration in
            configuration.webhooks = WebhookSettings(
                endpoints: [
                    try WebhookEndpoint(
                        name: "bench", url: url, secrets: [try WebhookSecret("whsec_benchmark_0123456789")])
                ],
                pollInterval: 0.05)
        }
        let (withDelivery, delivered, seconds) = try await withFreshDatabase(options) { options in
            try await SimulatedDeployment.withRunning(options) { deployment in
                let start = ContinuousClock.now
                let ingest = try await IngestRun(
                    deployment: deployment, instanceURLs: [deployment.baseURL], count: count,
                    concurrency: concurrency, customers: Self.customers, timesVerifier: false
                ).run()
                // Every event written is delivered: wait for the last. The database is asked
                // only once the receiver has counted as many as were written when it was last
                // asked: asked every 20 ms, its count of every delivery took a tenth of a core
                // from the job measured on PostgreSQL, and its write transaction turns on
                // SQLite's one writer.
                var written = 0
                while true {
                    guard written == 0 || received.withLock({ $0 }) >= written else {
                        try await Task.sleep(for: .milliseconds(20))
                        continue
                    }
                    // Numbered here too, so that `events` counts every event written, not only those
                    // the delivery job has numbered so far.
                    let (events, pending) = try await deployment.storage.transaction { tx in
                        _ = try await tx.sequenceEvents(limit: 100_000)
                        return (try await tx.lastEventPosition(), try await tx.deliveryCounts(endpoint: "bench"))
                    }
                    written = events
                    let done = pending[.delivered] ?? 0
                    if events > 0, done >= events, (pending[.pending] ?? 0) == 0 {
                        let elapsed = ContinuousClock.now - start
                        let seconds =
                            Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                        return (ingest, done, seconds)
                    }
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
        }
        let slowdown = (1 - withDelivery.ingestRate / baseline.ingestRate) * 100
        print(
            "webhooks \(storageName): ingest \(Int(baseline.ingestRate))/s without delivery, "
                + "\(Int(withDelivery.ingestRate))/s with (\(format(slowdown))% slower); "
                + "\(delivered) events delivered at \(Int(Double(delivered) / seconds))/s "
                + "(receiver counted \(received.withLock { $0 }))")
    }
}
