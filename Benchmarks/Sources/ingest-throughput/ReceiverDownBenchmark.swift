import BenchmarkFigures
import Foundation
import Hummingbird
import Logging
import StoreCore
import Storekeeper
import StorekeeperDemo
import StorekeeperServer
import StorekeeperStorage

/// What a webhook delivery round costs while the endpoint's receiver is down with a backlog
/// queued (see main.swift): the server's own dispatcher, on a fresh database, delivering to a
/// loopback receiver that answers every request with 503.
///
/// First each of `customers` customers gets one event, and the dispatcher's round attempts each
/// (all fail, each to be retried an hour later): rounds are then timed with those first
/// deliveries pending, the baseline. Then `pending` events more are written over the same
/// customers and queued, all waiting behind their customer's failed first, and rounds are timed
/// again. A round whose cost followed the backlog rather than the deliveries that can be due read
/// every waiting delivery each time (1.4 s on PostgreSQL with 100,000 waiting).
struct ReceiverDownBenchmark {
    let options: SimulatedDeployment.Options
    let storageName: String
    let pending: Int
    let customers: Int
    static let rounds = 15

    func run() async throws {
        let receiver = try await FailingReceiver.start(logger: options.logger)
        defer { receiver.stop() }
        try FileManager.default.createDirectory(at: options.directory, withIntermediateDirectories: true)
        let (baseline, backlog, queueRate) = try await withFreshDatabase(options) { options in
            let location = options.storageURL ?? options.directory.appendingPathComponent("backlog.sqlite").path
            let storage = try await StorageFactory.open(location, logger: options.logger)
            do {
                let result = try await measure(storage, receiverURL: receiver.url)
                try await storage.close()
                return result
            } catch {
                try? await storage.close()
                throw error
            }
        }
        print(
            "receiver-down \(storageName): a delivery round takes \(format(backlog * 1000)) ms with "
                + "\(customers + pending) pending over \(customers) customers, \(format(baseline * 1000)) ms with "
                + "\(customers) (each customer's first); ratio \(format(backlog / baseline)); "
                + "backlog queued at \(Int(queueRate))/s")
    }

    private func measure(_ storage: any Storage, receiverURL: URL) async throws -> (Double, Double, Double) {
        try await storage.migrate()
        let endpoint = try WebhookEndpoint(
            name: "down", url: receiverURL, secrets: [try WebhookSecret("whsec_benchmark_0123456789")])
        let dispatcher = WebhookDispatcher(
            settings: WebhookSettings(endpoints: [endpoint], timeout: 5, retrySchedule: [3600, 3600]),
            storage: storage, clock: SystemWallClock(), logger: options.logger)
        do {
            let result = try await measure(dispatcher, storage: storage)
            try await dispatcher.shutdown()
            return result
        } catch {
            try? await dispatcher.shutdown()
            throw error
        }
    }

    private func measure(_ dispatcher: WebhookDispatcher, storage: any Storage) async throws -> (Double, Double, Double)
    {
        try await append(count: customers, to: storage)
        let first = try await dispatcher.run()
        guard first.failed == customers else {
            throw BenchmarkError("expected \(customers) failed first attempts, the round made \(first)")
        }
        let baseline = try await timeRounds(of: dispatcher)

        try await append(count: pending, to: storage)
        let start = ContinuousClock.now
        let queued = try await dispatcher.run()
        let queueSeconds = seconds(ContinuousClock.now - start)
        guard queued.queued == pending, queued.failed == 0 else {
            throw BenchmarkError("expected \(pending) queued and none attempted, the round made \(queued)")
        }
        let backlog = try await timeRounds(of: dispatcher)
        return (baseline, backlog, Double(pending) / queueSeconds)
    }

    /// The median of ``rounds`` rounds, each of which must find nothing due.
    private func timeRounds(of dispatcher: WebhookDispatcher) async throws -> Double {
        var times: [Double] = []
        for _ in 0..<Self.rounds {
            let start = ContinuousClock.now
            let round = try await dispatcher.run()
            times.append(seconds(ContinuousClock.now - start))
            guard round.sequenced + round.queued + round.delivered + round.failed + round.deadLettered == 0 else {
                throw BenchmarkError("a round with the receiver down found something to do: \(round)")
            }
        }
        return median(times)
    }

    /// `count` events, round robin over the customers, a thousand per transaction.
    private func append(count: Int, to storage: any Storage) async throws {
        var written = 0
        while written < count {
            let events = (written..<min(written + 1000, count)).map { index in
                let customer = "customer-\(index % customers)"
                return StoredEvent(
                    id: UUID(), type: .balanceChanged, customerID: CustomerID(customer), environment: .production,
                    orderingKey: "customer:\(customer)", occurredAt: Date(),
                    body: Data(#"{"customer":"\#(customer)","index":\#(index)}"#.utf8))
            }
            try await storage.transaction { try await $0.appendEvents(events) }
            written += events.count
        }
    }
}

/// A loopback HTTP server answering every request with 503: a receiver that is down.
private struct FailingReceiver {
    let url: URL
    let task: Task<Void, any Error>

    static func start(logger: Logger) async throws -> FailingReceiver {
        let router = Router()
        router.post("hook") { _, _ -> Response in Response(status: .serviceUnavailable) }
        let (bound, continuation) = AsyncStream.makeStream(of: Int.self)
        let application = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) }, logger: logger)
        let task = Task { try await application.runService(gracefulShutdownSignals: []) }
        var ports = bound.makeAsyncIterator()
        guard let port = await ports.next(), port > 0, let url = URL(string: "http://127.0.0.1:\(port)/hook") else {
            task.cancel()
            throw BenchmarkError("the failing receiver did not start")
        }
        return FailingReceiver(url: url, task: task)
    }

    func stop() { task.cancel() }
}
