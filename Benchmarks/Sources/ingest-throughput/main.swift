import AppStoreServer
import BenchmarkFigures
import Foundation
import LoadHTTP
import Logging
import NIOCore
import NIOPosix
import StoreSimulator
import Storekeeper
import StorekeeperDemo
import StorekeeperServer
import StorekeeperStorage

// Notification ingest over HTTP: App Store Server Notifications posted to running Storekeeper
// servers (verified, stored durably before the 200, then processed), on SQLite or PostgreSQL, with
// one or several instances. Next to it, measured in the same run on the same payloads and with the
// same concurrency, the verifier alone: the ceiling that signature and chain checks put on ingest.
// The last line printed:
//
//     ingest sqlite: <N>/s processed, p99 <X> ms; verifier alone: <M>/s; ratio: <R>
//
// Run in release (see Benchmarks/README.md):
//     swift run -c release --package-path Benchmarks ingest-throughput [sqlite|postgres]
//         [--instances N] [--count C] [--concurrency K] [--customers N] [--workers W] [--batch-size B]
// PostgreSQL needs STOREKEEPER_BENCH_POSTGRES_URL (the URL `.ci/postgres.sh` prints).
//
// The purchases are consumables credited to one customer (the default), or spread round robin over
// `--customers N`. One customer is the worst case: every credit updates the same running balance,
// whose row lock serializes PostgreSQL's processing transactions.
//
// With --webhooks the run ingests twice, each on a fresh deployment, with the notifications spread
// over 64 customers: first with no webhook endpoint (the baseline), then with one endpoint posting
// every event to a loopback receiver while ingest goes on. It prints both ingest rates, the
// slowdown, and the events delivered per second (all events, from the first POST until the last
// delivery):
//
//     webhooks sqlite: ingest <B>/s without delivery, <W>/s with (<S>% slower); <E> events delivered at <D>/s
//
// With --backlog the notifications are not posted: they are verified by the server's own adapter and
// stored in one transaction, as a backlog the server finds waiting (a store's redelivery after an
// outage, a mass renewal extension), and the run times processing alone, for the first and the
// second half of the backlog (a claim whose cost grew with the backlog made the first half slower):
//
//     backlog sqlite: <N> notifications processed at <P>/s (first half <A>/s, second half <B>/s); verifier alone: <M>/s
//
// (the timing starts as processing is woken, as a stored webhook wakes it; a half done within one
// of the 50 ms looks that tell the halves apart says so instead of a rate).
//
// With --receiver-down nothing is ingested: the server's webhook dispatcher delivers to a loopback
// receiver answering 503, with a backlog written straight to the event log (`--count`, 100,000 by
// default, over `--customers`, 1,000 by default), each customer's first delivery failed and
// waiting for its retry. It prints the median delivery round with the backlog queued, next to the
// median round with only each customer's first delivery pending (measured first, in the same run):
//
//     receiver-down sqlite: a delivery round takes <X> ms with <N> pending over <C> customers, <Y> ms with <C> (each customer's first); ratio <R>; backlog queued at <Q>/s; drained at <D>/s once the receiver is back
//
// (the drain: the receiver then answers 200, the dispatcher's clock passes the retries, and the
// whole backlog is delivered, timed).
//
// On PostgreSQL every run gets a fresh database on the server STOREKEEPER_BENCH_POSTGRES_URL
// names (created, then dropped; with --webhooks, one for each of its two deployments): on the URL's
// own database, rows piled up from run to run and later runs were slower.

struct Arguments {
    var storage = "sqlite"
    var instances = 1
    /// Given with `--count`; each run has its default (``count(default:)``).
    var givenCount: Int?
    var concurrency = 32
    var webhooks = false
    var backlog = false
    var receiverDown = false
    /// Given with `--customers`; each run has its default (``customers(default:)``).
    var givenCustomers: Int?
    /// Processing loops per instance (`processing.workers`; the server's default when not given).
    var workers: Int?
    /// Notifications claimed at once (`processing.batchSize`; the server's default when not given).
    var batchSize: Int?

    init(_ arguments: [String]) throws {
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            func number() throws -> Int {
                guard let value = rest.popFirst().flatMap({ Int($0) }), value > 0 else {
                    throw BenchmarkError("\(argument) needs a positive number")
                }
                return value
            }
            switch argument {
            case "sqlite", "postgres": storage = argument
            case "--instances": instances = try number()
            case "--count": givenCount = try number()
            case "--concurrency": concurrency = try number()
            case "--webhooks": webhooks = true
            case "--backlog": backlog = true
            case "--receiver-down": receiverDown = true
            case "--customers": givenCustomers = try number()
            case "--workers": workers = try number()
            case "--batch-size": batchSize = try number()
            default:
                throw BenchmarkError(
                    "usage: ingest-throughput [sqlite|postgres] [--instances N] [--count C] [--concurrency K] [--customers N] [--workers W] [--batch-size B] [--webhooks | --backlog | --receiver-down]"
                )
            }
        }
        if (webhooks || backlog || receiverDown) && instances > 1 {
            throw BenchmarkError("--webhooks, --backlog and --receiver-down run one instance")
        }
        if [webhooks, backlog, receiverDown].filter({ $0 }).count > 1 {
            throw BenchmarkError("--webhooks, --backlog and --receiver-down are separate runs: give one")
        }
        if storage == "sqlite" && instances > 1 {
            throw BenchmarkError("several instances share a PostgreSQL database; use postgres")
        }
    }
}

extension Arguments {
    func count(default value: Int) -> Int { givenCount ?? value }
    func customers(default value: Int) -> Int { givenCustomers ?? value }
}

/// The arguments, and the PostgreSQL server's URL when they name PostgreSQL. A usage error is
/// said on standard error, with exit status 2 (as `customer-read` does), not as a crash.
func argumentsOrExit() -> (Arguments, storageURL: String?) {
    do {
        let arguments = try Arguments(Array(CommandLine.arguments.dropFirst()))
        guard arguments.storage == "postgres" else { return (arguments, nil) }
        guard let url = ProcessInfo.processInfo.environment["STOREKEEPER_BENCH_POSTGRES_URL"], !url.isEmpty else {
            throw BenchmarkError("set STOREKEEPER_BENCH_POSTGRES_URL (e.g. to what `bash .ci/postgres.sh` prints)")
        }
        return (arguments, url)
    } catch {
        FileHandle.standardError.write(Data("ingest-throughput: \(error)\n".utf8))
        exit(2)
    }
}
let (arguments, storageURL) = argumentsOrExit()
var logger = Logger(label: "ingest-throughput")
logger.logLevel = .critical
let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-ingest-\(UUID())")
// The server's own processing settings but quick retries and no catch-up. Its poll interval too
// (1 s): every stored notification wakes the worker, so the poll finds only retries; polling every
// 50 ms, as this benchmark once did, made three quarters of all claims, each an empty transaction.
// Simulated time runs at the real rate, as a server's clock does (the deployment's default stands
// still): what is stamped with the time, such as event ids, is then as ordered as in production.
let options = SimulatedDeployment.Options(
    start: Date(), rate: 1, storageURL: storageURL, directory: directory,
    processing: ProcessingSettings(
        initialRetryDelay: 0.05, maxRetryDelay: 1, catchUp: CatchUpSettings(enabled: false),
        batchSize: arguments.batchSize ?? ProcessingSettings().batchSize,
        workers: arguments.workers ?? ProcessingSettings().workers),
    simulatorSeed: UInt64.random(in: 1...UInt64.max), logger: logger)

/// The run the arguments name; each prints its own last line.
func runBenchmark() async throws {
    let (instances, count, concurrency) = (arguments.instances, arguments.count(default: 5000), arguments.concurrency)
    let customers = arguments.customers(default: 1)
    if arguments.webhooks {
        try await WebhookBenchmark(
            options: options, storageName: arguments.storage, count: count, concurrency: concurrency
        ).run()
    } else if arguments.receiverDown {
        try await ReceiverDownBenchmark(
            options: options, storageName: arguments.storage, pending: arguments.count(default: 100_000),
            customers: arguments.customers(default: 1000)
        ).run()
    } else if arguments.backlog {
        let line = try await withFreshDatabase(options) { options in
            try await SimulatedDeployment.withRunning(options) { deployment in
                try await IngestRun(
                    deployment: deployment, instanceURLs: [deployment.baseURL], count: count,
                    concurrency: concurrency, customers: customers
                )
                .runBacklog()
            }
        }
        print("backlog \(arguments.storage): \(line)")
    } else {
        let result = try await withFreshDatabase(options) { options in
            try await SimulatedDeployment.withRunning(options) { deployment in
                try await withInstances(instances, of: deployment, urls: [deployment.baseURL]) { urls in
                    try await IngestRun(
                        deployment: deployment, instanceURLs: urls, count: count, concurrency: concurrency,
                        customers: customers
                    ).run()
                }
            }
        }
        let verifyRate = result.verifyRate ?? .nan  // always timed here
        print(
            "ingest \(arguments.storage): \(Int(result.ingestRate))/s processed, p99 \(format(result.p99)) ms; "
                + "verifier alone: \(Int(verifyRate))/s; ratio: \(format(result.ingestRate / verifyRate))")
    }
}

// The deployment's directory (the SQLite database, keys) is removed however the run ends: runs that
// ended early, or in another mode than ingest, once left theirs behind (146 of them, up to 138 MB
// each, in one machine's temporary directory).
do {
    try await runBenchmark()
    try? FileManager.default.removeItem(at: directory)
} catch {
    try? FileManager.default.removeItem(at: directory)
    FileHandle.standardError.write(Data("ingest-throughput: \(error)\n".utf8))
    exit(1)
}

/// Runs `body` with the base URLs of `count` server instances of `deployment`.
func withInstances<Result: Sendable>(
    _ count: Int, of deployment: SimulatedDeployment, urls: [String],
    _ body: @Sendable ([String]) async throws -> Result
) async throws -> Result {
    guard urls.count < count else { return try await body(urls) }
    return try await deployment.withAnotherInstance { url in
        try await withInstances(count, of: deployment, urls: urls + [url], body)
    }
}

func format(_ value: Double) -> String { String(format: "%.2f", value) }

struct IngestResult {
    var ingestRate: Double
    /// Nil where the run did not time the verifier (``IngestRun/timesVerifier``).
    var verifyRate: Double?
    var p50: Double
    var p99: Double
}

struct IngestRun {
    let deployment: SimulatedDeployment
    /// The instances' base URLs; each notification goes to one of them at random, as a load
    /// balancer would send it.
    let instanceURLs: [String]
    let count: Int
    let concurrency: Int
    /// How many customers the purchases are spread over (round robin).
    var customers = 1
    /// Whether the verifier alone is timed before and after ingest. The webhook benchmark does
    /// not: its deliveries go on after ingest, and would share the cores with the passes.
    var timesVerifier = true

    func run() async throws -> IngestResult {
        let (payloads, customer) = try await makePayloads()
        print(
            "\(deployment.storage.backend.rawValue), \(instanceURLs.count) instance(s): \(payloads.count) ONE_TIME_CHARGE "
                + "notifications, \(concurrency) at a time")
        let passesBefore = timesVerifier ? try await timeVerifier(payloads, when: "") : []

        // Ingest: POST each (200 = verified and durable), then wait until every one is processed.
        let poster = try ClosedLoopPoster(
            loop: MultiThreadedEventLoopGroup.singleton.next(), baseURLs: instanceURLs,
            path: "/v1/notifications/app-store", concurrency: concurrency)
        let bodies = payloads.map { ByteBuffer(string: #"{"signedPayload":"\#($0)"}"#) }
        let cpuStart = processCPUSeconds()
        let hostStart = HostCPUTime.now()
        let ingestStart = ContinuousClock.now
        let latencies = try await poster.run(bodies)
        let durableSeconds = seconds(ContinuousClock.now - ingestStart)
        var unfinishedAtDurable: Int?
        while true {
            let counts = try await deployment.storage.read { try await $0.unfinishedNotificationCounts() }
            if unfinishedAtDurable == nil { unfinishedAtDurable = (counts[.pending] ?? 0) + (counts[.failed] ?? 0) }
            if (counts[.pending] ?? 0) == 0 && (counts[.failed] ?? 0) == 0 { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        let processedSeconds = seconds(ContinuousClock.now - ingestStart)
        let cpuSeconds = processCPUSeconds() - cpuStart
        let ingestSteal = stolenMeanwhile(since: hostStart)
        let cpuPerNotification = cpuSeconds / Double(count) * 1e6
        // Below 100 %, ingest waited (for the writer, a sync, the next request) with a core free.
        let coresBusy = cpuSeconds / processedSeconds / Double(ProcessInfo.processInfo.activeProcessorCount) * 100
        try await checkBalance(of: customer)
        let sorted = latencies.sorted()
        let (p50, p99) = (percentile(0.5, of: sorted), percentile(0.99, of: sorted))
        print(
            "durable (all 200s) after \(format(durableSeconds)) s (\(Int(Double(count) / durableSeconds))/s), "
                + "processed after \(format(processedSeconds)) s (\(unfinishedAtDurable ?? 0) unfinished at the last 200); POST p50 \(format(p50)) ms; "
                + "this process's CPU \(Int(cpuPerNotification)) µs per "
                + "notification (the posting client's included), the cores \(Int(coresBusy)) % busy with it"
                + ingestSteal)
        try await timeView(of: customer)
        let passesAfter = timesVerifier ? try await timeVerifier(payloads, when: " after ingest") : []
        let verifyRate = timesVerifier ? Double(count) / median(passesBefore + passesAfter) : nil
        return IngestResult(ingestRate: Double(count) / processedSeconds, verifyRate: verifyRate, p50: p50, p99: p99)
    }

    /// The simulator's App Store notifications of `count` consumable purchases, spread over
    /// `customers` customers created through the API (the first one's name returned).
    func makePayloads() async throws -> (payloads: [String], customer: String) {
        let store = deployment.simulator.appStore
        // Made by the simulator but not sent: the benchmark posts them itself.
        try store.setNotificationURL(nil, bundleId: SimulatedDeployment.bundleID)
        let prefix = "bench-\(UUID().uuidString.prefix(8))"
        let api = CustomerAPI(baseURL: deployment.baseURL, apiKey: deployment.options.secretAPIKey)
        var tokens: [(String, UUID)] = []
        for index in 0..<max(customers, 1) {
            let name = customers == 1 ? prefix : "\(prefix)-\(index)"
            tokens.append((name, try await api.createCustomer(name)))
        }
        for index in 0..<count {
            let (name, token) = tokens[index % tokens.count]
            try store.purchase(customer: name, product: "coins.100", appAccountToken: token)
        }
        return (store.notifications.suffix(count).map(\.signedPayload), tokens[0].0)
    }

    /// The seconds each of three passes of the verifier alone, configured as the server configures
    /// it, takes for `payloads`, `concurrency` at a time. One pass lasts about a second, and on the
    /// 2-core VM one pass's rate varied by a third from run to run (the host's slow stretches,
    /// Benchmarks/README.md), and the ratio with it: ``run()`` takes three passes before ingest
    /// and three after, and divides by their median, so that a slow or fast stretch of the host
    /// while the verifier alone runs weighs less against the ingest between them.
    func timeVerifier(_ payloads: [String], when: String) async throws -> [Double] {
        var passes: [Double] = []
        let cpuStart = processCPUSeconds()
        let hostStart = HostCPUTime.now()
        for _ in 0..<3 { passes.append(try await timeVerifierOnce(payloads)) }
        let cpuPerNotification = (processCPUSeconds() - cpuStart) / Double(3 * payloads.count) * 1e6
        print(
            "verifier alone\(when): passes at "
                + passes.map { "\(Int(Double(payloads.count) / $0))/s" }.joined(separator: ", ")
                + "; this process's CPU \(Int(cpuPerNotification)) µs per notification"
                + stolenMeanwhile(since: hostStart))
        return passes
    }

    func timeVerifierOnce(_ payloads: [String]) async throws -> Double {
        let verifier = try SignedDataVerifier(
            configuration: .init(
                trustedRoots: try TrustedRoots(
                    appleRootFiles: [], allowedRootFiles: [deployment.simulator.endpoints?.rootCertificatePath ?? ""]),
                bundleId: SimulatedDeployment.bundleID, appAppleId: SimulatedDeployment.appAppleID,
                environment: .sandbox))
        let start = ContinuousClock.now
        try await forEach(payloads) { payload in _ = try await verifier.verifyNotification(payload) }
        return seconds(ContinuousClock.now - start)
    }

    /// Checks that the first customer holds the coins of every purchase made for it.
    func checkBalance(of customer: String) async throws {
        let api = CustomerAPI(baseURL: deployment.baseURL, apiKey: deployment.options.secretAPIKey)
        let view = try await api.customer(customer)
        let expected = firstCustomersPurchases * 100
        guard view.balances["coins"] == expected else {
            throw BenchmarkError("expected \(expected) coins, found \(view.balances["coins"] ?? 0)")
        }
    }

    /// Times the first customer's view, which holds every consumable bought for it in its balance
    /// (`--customers 1`: all of them), and prints the median of 21 GETs.
    func timeView(of customer: String) async throws {
        let api = CustomerAPI(baseURL: deployment.baseURL, apiKey: deployment.options.secretAPIKey)
        var times: [Double] = []
        for _ in 0..<21 {
            let start = ContinuousClock.now
            _ = try await api.customer(customer)
            times.append(seconds(ContinuousClock.now - start) * 1000)
        }
        print("view of a customer with \(firstCustomersPurchases) consumables: GET median \(format(median(times))) ms")
    }

    /// How many of the `count` purchases the first customer holds (spread over `customers`, it gets
    /// the rounded-up share).
    var firstCustomersPurchases: Int {
        let customerCount = max(customers, 1)
        return (count + customerCount - 1) / customerCount
    }

    /// Stores `count` notifications at once, verified by the server's App Store adapter, and times
    /// their processing; returns the summary line's figures.
    func runBacklog() async throws -> String {
        let (payloads, customer) = try await makePayloads()
        let verifySeconds = median(try await timeVerifier(payloads, when: ""))
        let adapter = deployment.application.stores(.appStore)
        var stored: [InboxNotification] = []
        for payload in payloads {
            let delivery = WebhookDelivery(body: Data(#"{"signedPayload":"\#(payload)"}"#.utf8))
            let accepted = try await adapter.accept(delivery)
            stored.append(
                InboxNotification(
                    store: .appStore, dedupeKey: accepted.dedupeKey, body: delivery.body, verified: accepted.verified,
                    receivedAt: deployment.application.inbox.clock.now()))
        }
        let storage = deployment.storage
        try await storage.transaction { [stored] transaction in
            for notification in stored { _ = try await transaction.insertNotification(notification) }
        }
        print(
            "\(deployment.storage.backend.rawValue): \(count) ONE_TIME_CHARGE notifications stored at once, processing")
        // Processing is woken as a stored webhook wakes it: left to its next poll (every second),
        // it began up to a second after the timing did.
        let start = ContinuousClock.now
        deployment.application.wakeProcessing()
        var halfway: ContinuousClock.Instant?
        while true {
            let counts = try await storage.read { try await $0.unfinishedNotificationCounts() }
            let left = (counts[.pending] ?? 0) + (counts[.failed] ?? 0)
            if halfway == nil && left <= count / 2 { halfway = ContinuousClock.now }
            if left == 0 { break }
            // Each look counts what is unfinished, thousands of index entries at first: looking
            // every 5 ms took CPU from the processing it measures.
            try await Task.sleep(for: .milliseconds(50))
        }
        let end = ContinuousClock.now
        try await checkBalance(of: customer)
        let half = count / 2
        let first = rate(half, seconds((halfway ?? end) - start))
        let second = rate(count - half, seconds(end - (halfway ?? start)))
        return "\(count) notifications processed at \(Int(Double(count) / seconds(end - start)))/s "
            + "(first half \(first), second half \(second)); "
            + "verifier alone: \(Int(Double(count) / verifySeconds))/s"
    }

    /// `count` over `seconds` per second, or what stands for it when the time is too short to tell:
    /// the halves are told apart by looks 50 ms apart, and a small backlog's second half (or all
    /// of it) may be done within one look.
    private func rate(_ count: Int, _ seconds: Double) -> String {
        seconds >= 0.05 ? "\(Int(Double(count) / seconds))/s" : "within one 50 ms look"
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
}

struct BenchmarkError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
