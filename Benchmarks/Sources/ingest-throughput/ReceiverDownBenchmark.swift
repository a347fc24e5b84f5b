import BenchmarkFigures
import Foundation
import Hummingbird
import Logging
import StoreCore
import StoreSimulator
import Storekeeper
import StorekeeperDemo
import StorekeeperServer
import StorekeeperStorage
import Synchronization

/// What a webhook delivery round costs while the endpoint's receiver is down with a backlog
/// queued (see main.swift): the server's own dispatcher, on a fresh database, delivering to a
/// loopback receiver that answers every request with 503.
///
/// First each of `customers` customers gets one event, and the dispatcher's round attempts each
/// (all fail, each to be retried an hour later): rounds are then timed with those first
/// deliveries pending, the baseline. Then `pending` events more are written over the same
/// customers and queued, all waiting behind their customer's failed first, and rounds are timed
/// again. A round whose cost followed the backlog rather than the deliveries that can be due read
/// every waiting delivery each time (325–458 ms on PostgreSQL with 100,000 waiting). Last, the
/// receiver comes back (answers 200), the clock moves past the retries, and the whole backlog is
/// delivered, timed.
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
        let (baseline, backlog, queueRate, drainRate) = try await withFreshDatabase(options) { options in
            let location = options.storageURL ?? options.directory.appendingPathComponent("backlog.sqlite").path
            let storage = try await StorageFactory.open(location, logger: options.logger)
            do {
                let result = try await measure(storage, receiver: receiver)
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
                + "backlog queued at \(Int(queueRate))/s; drained at \(Int(drainRate))/s once the receiver is back")
    }

    private func measure(_ storage: any Storage, receiver: FailingReceiver) async throws -> (
        Double, Double, Double, Double
    ) {
        try await storage.migrate()
        let endpoint = try WebhookEndpoint(
            name: "down", url: receiver.url, secrets: [try WebhookSecret("whsec_benchmark_0123456789")])
        // The real time, moved forward by hand: the retries an hour away come due without waiting.
        let clock = SimulatorClock()
        let dispatcher = WebhookDispatcher(
            settings: WebhookSettings(endpoints: [endpoint], timeout: 5, retrySchedule: [3600, 3600]),
            storage: storage, clock: clock, logger: options.logger)
        do {
            let result = try await measure(dispatcher, storage: storage, receiver: receiver, clock: clock)
            try await dispatcher.shutdown()
            return result
        } catch {
            try? await dispatcher.shutdown()
            throw error
        }
    }

    private func measure(
        _ dispatcher: WebhookDispatcher, storage: any Storage, receiver: FailingReceiver, clock: SimulatorClock
    ) async throws -> (Double, Double, Double, Double) {
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

        receiver.recover()
        clock.advance(by: 3601)
        let drainStart = ContinuousClock.now
        var delivered = 0
        while delivered < customers + pending {
            let round = try await dispatcher.run()
            guard round.delivered > 0, round.failed == 0 else {
                throw BenchmarkError("draining the backlog, a round made \(round) after \(delivered) delivered")
            }
            delivered += round.delivered
        }
        let drainSeconds = seconds(ContinuousClock.now - drainStart)
        return (baseline, backlog, Double(pending) / queueSeconds, Double(delivered) / drainSeconds)
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

/// A receiver that is down, answering every delivery with 503, until ``recover()``; then with 200.
private struct FailingReceiver {
    let receiver: LoopbackReceiver
    let recovered: Recovered

    final class Recovered: Sendable {
        let value = Atomic(false)
    }

    var url: URL { receiver.url }

    static func start(logger: Logger) async throws -> FailingReceiver {
        let recovered = Recovered()
        let receiver = try await LoopbackReceiver.start(logger: logger) {
            recovered.value.load(ordering: .relaxed) ? .ok : .serviceUnavailable
        }
        return FailingReceiver(receiver: receiver, recovered: recovered)
    }

    func recover() { recovered.value.store(true, ordering: .relaxed) }

    func stop() { receiver.stop() }
}
