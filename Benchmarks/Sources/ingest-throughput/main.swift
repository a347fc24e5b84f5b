import AppStoreServer
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import StoreSimulator
import StorekeeperDemo
import StorekeeperServer
import StorekeeperStorage

// Notification ingest over HTTP: App Store Server Notifications posted to a running Storekeeper
// server (verified, stored durably before the 200, then processed), on SQLite and — when
// STOREKEEPER_BENCH_POSTGRES_URL names a database — PostgreSQL. Next to it, measured in the same
// run on the same payloads and with the same concurrency, the verifier alone: the ceiling that
// signature and chain checks put on ingest. Each storage runs twice: with processing as the server
// does it by default (`processing.batchSize` 50 — one transaction per claimed batch — and 4
// `processing.workers`) and, as the baseline, one worker with batches of 1 (one transaction per
// notification). One line per storage, last:
//
//     ingest[sqlite]: <N> notifications/s (p50 <A> ms, p99 <B> ms) verifier: <M>/s ratio: <R> batch-1: <S>/s
//
// Run in release: swift run -c release --package-path Benchmarks ingest-throughput [count] [concurrency]

let arguments = CommandLine.arguments.dropFirst()
let count = arguments.first.flatMap { Int($0) } ?? 2000
let concurrency = arguments.dropFirst().first.flatMap { Int($0) } ?? 16
var storages: [(name: String, url: String?)] = [("sqlite", nil)]
if let url = ProcessInfo.processInfo.environment["STOREKEEPER_BENCH_POSTGRES_URL"], !url.isEmpty {
    storages.append(("postgresql", url))
}
var logger = Logger(label: "ingest-throughput")
logger.logLevel = .critical
for storage in storages {
    var results: [Int: IngestResult] = [:]
    for batchSize in [1, ProcessingSettings().batchSize] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-ingest-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let options = SimulatedDeployment.Options(
            start: Date(), storageURL: storage.url, directory: directory,
            processing: ProcessingSettings(
                initialRetryDelay: 0.05, maxRetryDelay: 1, pollInterval: 0.05,
                catchUp: CatchUpSettings(enabled: false), batchSize: batchSize, workers: batchSize == 1 ? 1 : 4),
            simulatorSeed: UInt64.random(in: 1...UInt64.max), logger: logger)
        results[batchSize] = try await SimulatedDeployment.withRunning(options) { deployment in
            try await IngestRun(
                deployment: deployment, storageName: "\(storage.name), batch \(batchSize)", count: count,
                concurrency: concurrency
            ).run()
        }
    }
    guard let batched = results[ProcessingSettings().batchSize], let single = results[1] else { continue }
    print(
        "ingest[\(storage.name)]: \(Int(batched.ingestRate)) notifications/s (p50 \(format(batched.p50)) ms, "
            + "p99 \(format(batched.p99)) ms) verifier: \(Int(batched.verifyRate))/s ratio: "
            + "\(format(batched.ingestRate / batched.verifyRate)) batch-1: \(Int(single.ingestRate))/s")
}

func format(_ value: Double) -> String { String(format: "%.2f", value) }

struct IngestResult {
    var ingestRate: Double
    var verifyRate: Double
    var p50: Double
    var p99: Double
}

struct IngestRun {
    let deployment: SimulatedDeployment
    let storageName: String
    let count: Int
    let concurrency: Int

    func run() async throws -> IngestResult {
        let store = deployment.simulator.appStore
        // Made by the simulator but not sent: the benchmark posts them itself.
        try store.setNotificationURL(nil, bundleId: SimulatedDeployment.bundleID)
        let customer = "bench-\(UUID().uuidString.prefix(8))"
        let token = try await CustomerAPI(baseURL: deployment.baseURL, apiKey: deployment.options.secretAPIKey)
            .createCustomer(customer)
        for _ in 0..<count {
            try store.purchase(customer: customer, product: "coins.100", appAccountToken: token)
        }
        let payloads = store.notifications.suffix(count).map(\.signedPayload)
        print("\(storageName): \(payloads.count) ONE_TIME_CHARGE notifications, concurrency \(concurrency)")

        // The verifier alone, as the server configures it.
        let verifier = try SignedDataVerifier(
            configuration: .init(
                trustedRoots: try TrustedRoots(
                    appleRootFiles: [], allowedRootFiles: [deployment.simulator.endpoints?.rootCertificatePath ?? ""]),
                bundleId: SimulatedDeployment.bundleID, appAppleId: SimulatedDeployment.appAppleID,
                environment: .sandbox))
        let verifyStart = ContinuousClock.now
        try await forEach(payloads) { payload in _ = try await verifier.verifyNotification(payload) }
        let verifySeconds = seconds(ContinuousClock.now - verifyStart)

        // Ingest: POST each (200 = verified and durable), then wait until every one is processed.
        let url = deployment.baseURL + "/v1/notifications/app-store"
        let latencies = LatencyLog()
        let ingestStart = ContinuousClock.now
        try await forEach(payloads) { payload in
            var request = HTTPClientRequest(url: url)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: #"{"signedPayload":"\#(payload)"}"#))
            let sent = ContinuousClock.now
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
            _ = try await response.body.collect(upTo: 1 << 16)
            guard response.status == .ok else { throw BenchmarkError("HTTP \(response.status.code)") }
            latencies.record(ContinuousClock.now - sent)
        }
        let durableSeconds = seconds(ContinuousClock.now - ingestStart)
        while true {
            let counts = try await deployment.storage.transaction { try await $0.notificationCounts() }
            if (counts[.pending] ?? 0) == 0 && (counts[.failed] ?? 0) == 0 { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        let processedSeconds = seconds(ContinuousClock.now - ingestStart)
        let view = try await CustomerAPI(baseURL: deployment.baseURL, apiKey: deployment.options.secretAPIKey)
            .customer(customer)
        guard view.balances["coins"] == count * 100 else {
            throw BenchmarkError("expected \(count * 100) coins, found \(view.balances["coins"] ?? 0)")
        }
        let ingestRate = Double(count) / processedSeconds
        let verifyRate = Double(count) / verifySeconds
        let sorted = latencies.sorted
        print(
            "\(storageName): durable (all 200s) after \(format(durableSeconds)) s, processed after "
                + "\(format(processedSeconds)) s; verifier alone \(format(verifySeconds)) s")
        let result = IngestResult(
            ingestRate: ingestRate, verifyRate: verifyRate, p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99))
        print(
            "\(storageName): \(Int(ingestRate)) notifications/s (p50 \(format(result.p50)) ms, "
                + "p99 \(format(result.p99)) ms), verifier \(Int(verifyRate))/s")
        return result
    }

    /// Runs `body` on every payload, `concurrency` at a time.
    func forEach(_ payloads: [String], _ body: @escaping @Sendable (String) async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            var iterator = payloads.makeIterator()
            for _ in 0..<concurrency {
                guard let payload = iterator.next() else { break }
                group.addTask { try await body(payload) }
            }
            while try await group.next() != nil {
                guard let payload = iterator.next() else { continue }
                group.addTask { try await body(payload) }
            }
        }
    }

    func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * fraction).rounded(.down)))]
    }
}

/// Request latencies in milliseconds, from many tasks.
final class LatencyLog: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Double] = []

    func record(_ duration: Duration) {
        let millis = Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
        lock.withLock { values.append(millis) }
    }

    var sorted: [Double] { lock.withLock { values.sorted() } }
}

struct BenchmarkError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
