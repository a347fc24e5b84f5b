import Foundation
import HTTPTypes
import Hummingbird
import Logging
import StoreSimulator
import Synchronization
import Testing

/// A `storekeeper serve` process SIGKILLed while it delivers webhooks to a slow receiver: after a
/// restart on the same database every event of the feed reaches the receiver (at least once, each
/// customer's in order by first arrival), none lost.
@Suite struct WebhookDurabilityTests {
    /// Records each delivery's event id, in arrival order, answering 200 after `delay`.
    final class Receiver: Sendable {
        let ids = Mutex<[String]>([])
        let delay: Duration

        init(delay: Duration) { self.delay = delay }

        func run<Result: Sendable>(_ body: (Int) async throws -> Result) async throws -> Result {
            let router = Router()
            router.post("hook") { request, _ -> Response in
                _ = try await request.body.collect(upTo: 1 << 20)
                try await Task.sleep(for: self.delay)
                let id = request.headers[HTTPField.Name("Storekeeper-Event-Id")!] ?? ""
                self.ids.withLock { $0.append(id) }
                return Response(status: .ok)
            }
            let (bound, continuation) = AsyncStream.makeStream(of: Int.self)
            let app = Application(
                router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) },
                logger: {
                    var logger = Logger(label: "receiver")
                    logger.logLevel = .critical
                    return logger
                }())
            return try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await app.runService(gracefulShutdownSignals: []) }
                var ports = bound.makeAsyncIterator()
                let port = await ports.next() ?? 0
                do {
                    let result = try await body(port)
                    group.cancelAll()
                    return result
                } catch {
                    group.cancelAll()
                    throw error
                }
            }
        }
    }

    @Test func aKilledServerDeliversEveryEventAfterItsRestart() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-hookkill-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let configuration = StoreSimulator.Configuration(
            rate: 1, directory: directory,
            appStore: AppStoreSimulation.Configuration(retryIntervals: Array(repeating: 0.5, count: 40)))
        let receiver = Receiver(delay: .milliseconds(150))
        try await receiver.run { hookPort in
            try await StoreSimulator.withRunning(configuration: configuration) { simulator, endpoints in
                let basePath = try DurabilityTests.prepare(simulator, endpoints: endpoints, directory: directory)
                // The same configuration with one webhook endpoint, quick retries and a short job
                // lease (a killed holder's lease ends soon).
                var object = try #require(
                    try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: basePath)))
                        as? [String: Any])
                object["webhooks"] = [
                    "pollInterval": 0.1, "timeout": 5, "retrySchedule": Array(repeating: 0.5, count: 20),
                    "endpoints": [
                        "backend": [
                            "url": "http://127.0.0.1:\(hookPort)/hook", "secrets": ["whsec_kill_0123456789abcdef"],
                        ]
                    ],
                ]
                var processing = object["processing"] as? [String: Any] ?? [:]
                processing["jobLease"] = 2
                object["processing"] = processing
                let configPath = directory.appendingPathComponent("storekeeper-webhooks.json").path
                try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: configPath))

                var server = try await ServerProcess.start(config: configPath)
                defer { if server.process.isRunning { server.process.terminate() } }
                let port = server.port
                let api = ServerAPI(baseURL: server.baseURL, apiKey: DurabilityTests.apiKey)
                var tokens: [UUID] = []
                for name in ["kim", "lou"] { tokens.append(try await api.createCustomer(name)) }
                try simulator.appStore.setNotificationURL(
                    server.baseURL + "/v1/notifications/app-store", bundleId: DurabilityTests.bundleID)
                for index in 0..<12 {
                    try simulator.appStore.purchase(
                        customer: index % 2 == 0 ? "kim" : "lou", product: "coins.100",
                        appAccountToken: tokens[index % 2])
                }
                // Killed in the middle of delivering.
                try await waitUntil(timeout: 60) { receiver.ids.withLock { $0.count } >= 4 }
                #expect(try await server.stop(signal: SIGKILL))
                let beforeRestart = receiver.ids.withLock { $0.count }
                server = try await ServerProcess.start(config: configPath, port: port)
                let restarted = ServerAPI(baseURL: server.baseURL, apiKey: DurabilityTests.apiKey)

                // The feed after everything settled: 12 purchases, each purchase.started + balance.changed.
                func feed() async throws -> [[String: Any]] {
                    let page = try await restarted.json("/v1/events?limit=1000") as? [String: Any]
                    return (page?["events"] as? [[String: Any]] ?? []).compactMap { $0["event"] as? [String: Any] }
                }
                try await waitUntil(timeout: 90) { ((try? await feed())?.count ?? 0) >= 24 }
                let events = try await feed()
                #expect(events.count == 24)
                let ids = events.compactMap { $0["id"] as? String }
                try await waitUntil(timeout: 90) { Set(receiver.ids.withLock { $0 }).isSuperset(of: ids) }
                let arrived = receiver.ids.withLock { $0 }
                #expect(Set(arrived) == Set(ids), "every event delivered, nothing else")
                #expect(beforeRestart < ids.count, "the kill should have interrupted delivery")
                // Per customer, first arrivals follow the feed's order.
                var firstArrival: [String] = []
                for id in arrived where !firstArrival.contains(id) { firstArrival.append(id) }
                for customer in ["kim", "lou"] {
                    let expected = events.filter { $0["customerID"] as? String == customer }.compactMap {
                        $0["id"] as? String
                    }
                    #expect(firstArrival.filter { expected.contains($0) } == expected, "\(customer) out of order")
                }
                #expect(try await server.stop(signal: SIGTERM))
            }
        }
    }
}
