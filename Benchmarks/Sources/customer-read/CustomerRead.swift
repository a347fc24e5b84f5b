import AsyncHTTPClient
import BenchmarkFigures
import Foundation
import LoadHTTP
import Logging
import NIOCore
import Storekeeper
import StorekeeperDemo
import StorekeeperServer
import StorekeeperStorage

/// One storage's run: a server on each seeded database, both read in alternating windows.
struct CustomerRead {
    struct Options {
        var rate: Double = 1000
        /// Measured seconds per database (split into `rounds` windows). A p99 is the 1 % slowest:
        /// of 10 s (100 requests) it moved with whichever window met one of the host's slow
        /// stretches (the same database's 2-s windows had p99s from 0.8 to 3 ms in one run); 30 s
        /// in 15 windows of 2 s spreads those stretches over both databases alike.
        var seconds: Double = 30
        var rounds = 15
        var large = 1_000_000
        var small = 10_000
        var seed: UInt64 = 18
        var cacheDirectory: URL
        /// The rate the console's customer page is read at, next to the API at the same rate.
        var consoleRate: Double = 50

        init(arguments: [String]) throws {
            cacheDirectory = Self.defaultCacheDirectory()
            var remaining = arguments[...]
            while let flag = remaining.popFirst() {
                guard let value = remaining.popFirst() else { throw BenchmarkError("\(flag) needs a value") }
                switch flag {
                case "--rate": rate = try Self.number(value, flag)
                case "--seconds": seconds = try Self.number(value, flag)
                case "--rounds": rounds = Int(try Self.number(value, flag))
                case "--seed": seed = UInt64(try Self.number(value, flag))
                case "--cache": cacheDirectory = URL(fileURLWithPath: value)
                case "--console-rate": consoleRate = try Self.number(value, flag)
                case "--customers":
                    let sizes = value.split(separator: ",").compactMap { Int($0) }
                    guard sizes.count == 2, sizes.allSatisfy({ $0 > 0 }) else {
                        throw BenchmarkError("--customers takes two sizes, e.g. 1000000,10000")
                    }
                    (large, small) = (sizes[0], sizes[1])
                default:
                    throw BenchmarkError(
                        "unknown option \(flag) (known: --rate, --seconds, --rounds, --customers, --cache, --seed, "
                            + "--console-rate)")
                }
            }
            guard rate > 0, seconds > 0, rounds > 0, consoleRate > 0 else {
                throw BenchmarkError("rates, seconds and rounds must be > 0")
            }
        }

        private static func number(_ text: String, _ flag: String) throws -> Double {
            guard let value = Double(text), value >= 0 else { throw BenchmarkError("\(flag) \(text) is not a number") }
            return value
        }

        /// STOREKEEPER_BENCH_CACHE; else `customer-read-cache` in the `.build` folder the
        /// executable was built in; else the temporary directory.
        static func defaultCacheDirectory() -> URL {
            if let path = ProcessInfo.processInfo.environment["STOREKEEPER_BENCH_CACHE"], !path.isEmpty {
                return URL(fileURLWithPath: path)
            }
            let executable = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL.path
            if let build = executable.range(of: "/.build/") {
                return URL(fileURLWithPath: String(executable[..<build.lowerBound]) + "/.build/customer-read-cache")
            }
            return FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-customer-read-cache")
        }
    }

    /// Latencies of one database's windows together.
    struct Measured: Sendable {
        var p50 = 0.0
        var p90 = 0.0
        var p99 = 0.0
        var p999 = 0.0
        var max = 0.0
        var requests = 0
        var failures = 0
        var achievedRate = 0.0
        /// How late the load generator wrote its requests (``OpenLoopReader/Window/sendLateness``).
        var sendLatenessP99 = 0.0
        var sendLatenessMax = 0.0
    }

    struct Result: Sendable {
        var large: Measured
        var small: Measured
        /// The lower of the two databases' achieved rates.
        var achievedRate: Double
    }

    let options: Options
    let backend: SeededDatabase.Backend
    let large: SeededDatabase
    let small: SeededDatabase
    let logger: Logger

    /// Seeds (or finds) the database and says which.
    static func prepare(_ backend: SeededDatabase.Backend, customers: Int, logger: Logger) async throws
        -> SeededDatabase
    {
        say("\(backend.name), \(customers) customers: preparing (seeding takes minutes when not cached)")
        let database = try await SeededDatabase.prepare(backend, customers: customers, logger: logger)
        let contents = database.contents
        say(
            "\(backend.name), \(customers) customers: \(contents.purchases) purchases, \(contents.transactions) "
                + "billing events, \(contents.stateChanges) state changes, \(contents.ledgerEntries) ledger entries; "
                + (database.seededNow ? "seeded in " : "reused (seeded in ") + format(contents.seedSeconds) + " s"
                + (database.seededNow ? "" : ")"))
        if case .sqlite = backend {
            // A long-running server has its database in the page cache; one just started, or one
            // whose file other work pushed out, reads each page from disk at first (at 1 M
            // customers that alone put p99 at hundreds of ms here). Read once, start warm.
            let started = ContinuousClock.now
            let bytes = try readThrough(database.storageURL)
            say(
                "\(backend.name), \(customers) customers: read the file (\(bytes / 1_000_000) MB) into the page cache "
                    + "in \(format(seconds(ContinuousClock.now - started))) s")
        }
        return database
    }

    /// Reads the file at `path` to its end; returns how many bytes.
    private static func readThrough(_ path: String) throws -> Int {
        guard let file = FileHandle(forReadingAtPath: path) else { throw BenchmarkError("cannot read \(path)") }
        defer { try? file.close() }
        var total = 0
        while let chunk = try file.read(upToCount: 8 << 20), !chunk.isEmpty { total += chunk.count }
        return total
    }

    func run() async throws -> Result {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("customer-read-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        return try await SimulatedDeployment.withRunning(deploymentOptions(large, directory, "large")) { largeServer in
            try await SimulatedDeployment.withRunning(deploymentOptions(small, directory, "small")) { smallServer in
                try await measure(largeServer, smallServer)
            }
        }
    }

    private func deploymentOptions(_ database: SeededDatabase, _ directory: URL, _ name: String)
        -> SimulatedDeployment.Options
    {
        // The server's clock stands at the moment the seed describes. The catch-up is off: its
        // store calls would go to a simulator that knows none of the seeded purchases (its queries
        // are timed below instead); everything else runs as configured by default.
        var options = SimulatedDeployment.Options(
            start: SeedSQL.now, storageURL: database.storageURL, directory: directory.appendingPathComponent(name),
            processing: ProcessingSettings(catchUp: CatchUpSettings(enabled: false)), logger: logger)
        // The operators' console, signed in to by ``measureConsole``.
        options.customize = { _, configuration in
            configuration.console = ConsoleSettings(operators: [
                ConsoleOperator(name: "bench", role: .readOnly, credential: .password(Self.consolePassword))
            ])
        }
        return options
    }

    static let consolePassword = "benchmark console password"

    private func reader(_ server: SimulatedDeployment, customers: Int) -> LoadProcess {
        LoadProcess(
            baseURL: server.baseURL, page: .customerAPI(apiKey: server.options.secretAPIKey),
            customers: customers, rate: options.rate, checkEvery: 50)
    }

    private func measure(_ largeServer: SimulatedDeployment, _ smallServer: SimulatedDeployment) async throws
        -> Result
    {
        let servers = [(largeServer, options.large), (smallServer, options.small)]
        var random = SplitMix64(seed: options.seed)
        for (server, customers) in servers {
            // The console overview's rollup, as the server's own job fills it: its first round on a
            // seeded database folds the seeded history (there are no events), then recounts states.
            let started = ContinuousClock.now
            let folded = try await server.application.rollup.run(recount: true)
            say(
                "\(backend.name), \(customers) customers: overview rollup ready in "
                    + "\(Self.format(seconds(ContinuousClock.now - started))) s (\(folded) events folded; "
                    + "a first round folds the history from the tables)")
            try await checkViews(server, customers: customers, random: &random)
            // Connections, caches and the first pages of the database.
            _ = try await reader(server, customers: customers).run(seconds: 1, random: &random)
        }
        var windows: [[OpenLoopReader.Window]] = [[], []]
        // This process's CPU during each database's windows: its server's (the load generator runs in
        // a process of its own), steadier than the latencies on a host whose CPUs slow down at times.
        var cpuSeconds = [0.0, 0.0]
        // The share of the machine's CPU time the hypervisor gave elsewhere during each window.
        var steal: [[Double?]] = [[], []]
        for _ in 0..<options.rounds {
            for (index, (server, customers)) in servers.enumerated() {
                let cpuStart = processCPUSeconds()
                let hostStart = HostCPUTime.now()
                windows[index].append(
                    try await reader(server, customers: customers).run(
                        seconds: options.seconds / Double(options.rounds), random: &random))
                steal[index].append(stealPercent(since: hostStart))
                cpuSeconds[index] += processCPUSeconds() - cpuStart
            }
        }
        var measured: [Measured] = []
        for (index, (server, customers)) in servers.enumerated() {
            let result = Self.summarize(windows[index])
            measured.append(result)
            let firstFailure = windows[index].compactMap(\.firstFailure).first.map { "; first: \($0)" } ?? ""
            say(
                "\(backend.name), \(customers) customers: \(result.requests) GETs scheduled at "
                    + "\(Int(options.rate)) req/s, \(Self.format(result.achievedRate)) req/s achieved: "
                    + "p50 \(Self.format(result.p50)) ms, p90 \(Self.format(result.p90)) ms, "
                    + "p99 \(Self.format(result.p99)) ms, p99.9 \(Self.format(result.p999)) ms, "
                    + "max \(Self.format(result.max)) ms; \(result.failures) failed\(firstFailure); the load "
                    + "generator's sends \(Self.format(result.sendLatenessP99)) ms late at p99, "
                    + "\(Self.format(result.sendLatenessMax)) ms at most (time the server never saw); server CPU "
                    + "\(Int((cpuSeconds[index] / Double(max(result.requests, 1)) * 1e6).rounded())) µs per GET; "
                    + "each window's p99 / max in ms (the host's steal), in order: "
                    + zip(windows[index], steal[index]).map { window, steal in
                        let sorted = window.latencies.sorted()
                        return "\(Self.format(percentile(0.99, of: sorted))) / \(Self.format(sorted.last ?? 0))"
                            + (steal.map { " (\(Self.formatPercent($0)))" } ?? "")
                    }.joined(separator: ", ") + Self.stealSummary(windows[index], steal[index]))
            try await timeJobQueries(server, customers: customers)
            try await measureConsole(server, customers: customers, random: &random)
        }
        return Result(
            large: measured[0], small: measured[1],
            achievedRate: min(measured[0].achievedRate, measured[1].achievedRate))
    }

    /// The console's customer page and overview next to the API's view of the same customers at the
    /// same rate, in alternating windows on this server (one operator session).
    private func measureConsole(_ server: SimulatedDeployment, customers: Int, random: inout SplitMix64)
        async throws
    {
        var signIn = HTTPClientRequest(url: server.baseURL + "/console/sign-in")
        signIn.method = .POST
        signIn.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        signIn.body = .bytes(ByteBuffer(string: "name=bench&password=benchmark+console+password"))
        // The answer's redirect is not followed: its cookie is what is wanted.
        let signInClient = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))
        let answer: HTTPClientResponse
        do {
            answer = try await signInClient.execute(signIn, timeout: .seconds(30))
        } catch {
            try? await signInClient.shutdown()
            throw error
        }
        try await signInClient.shutdown()
        guard let setCookie = answer.headers.first(name: "Set-Cookie"),
            let cookie = setCookie.split(separator: ";").first.map(String.init)
        else { throw BenchmarkError("the console refused the benchmark's sign-in: HTTP \(answer.status.code)") }
        let readers: [(String, LoadProcess)] = [
            (
                "GET /v1/customers/{id}",
                LoadProcess(
                    baseURL: server.baseURL, page: .customerAPI(apiKey: server.options.secretAPIKey),
                    customers: customers, rate: options.consoleRate, checkEvery: 50)
            ),
            (
                "console customer page",
                LoadProcess(
                    baseURL: server.baseURL, page: .consoleCustomer(cookie: cookie),
                    customers: customers, rate: options.consoleRate, checkEvery: 1)
            ),
            (
                "console overview (last 7 days)",
                LoadProcess(
                    baseURL: server.baseURL, page: .consoleOverview(cookie: cookie),
                    customers: customers, rate: options.consoleRate, checkEvery: 1)
            ),
        ]
        for (_, reader) in readers { _ = try await reader.run(seconds: 1, random: &random) }
        var windows: [[OpenLoopReader.Window]] = Array(repeating: [], count: readers.count)
        for _ in 0..<options.rounds {
            for (index, (_, reader)) in readers.enumerated() {
                windows[index].append(
                    try await reader.run(seconds: options.seconds / Double(options.rounds), random: &random))
            }
        }
        var parts: [String] = []
        for (index, (name, reader)) in readers.enumerated() {
            let result = Self.summarize(windows[index])
            let firstFailure = windows[index].compactMap(\.firstFailure).first.map { ", first: \($0)" } ?? ""
            if result.failures > 0 {
                throw BenchmarkError("\(name): \(result.failures) failed\(firstFailure)")
            }
            parts.append(
                "\(name) \(result.requests) at \(Self.format(reader.rate)) req/s: p50 \(Self.format(result.p50)) ms, "
                    + "p99 \(Self.format(result.p99)) ms, max \(Self.format(result.max)) ms")
        }
        say("\(backend.name), \(customers) customers, console: " + parts.joined(separator: "; "))
    }

    /// A few views checked against the database itself: the server reads the seeded rows.
    private func checkViews(_ server: SimulatedDeployment, customers: Int, random: inout SplitMix64) async throws {
        let api = CustomerAPI(baseURL: server.baseURL, apiKey: server.options.secretAPIKey)
        let database = server.storage
        for _ in 0..<5 {
            let id = CustomerID(SeedSQL.customerID(Int(random.next() % UInt64(customers)) + 1))
            let view = try await api.customer(id.rawValue)
            let (purchases, balances) = try await database.transaction { transaction in
                // The view lists every purchase but consumables (their credits are the balances).
                (try await transaction.entitlementPurchases(of: id).count, try await transaction.ledgerEntries(of: id))
            }
            let coins = balances.filter { $0.balance == "coins" }.reduce(0) { $0 + $1.amount }
            guard view.subscriptions.count + view.oneTimePurchases.count == purchases,
                view.balances["coins"] ?? 0 == coins
            else {
                throw BenchmarkError(
                    "the view of \(id) does not match its rows (\(purchases) purchases but consumables, \(coins) coins): \(view)"
                )
            }
        }
    }

    /// The background jobs' queries on this database, each the median of 9 runs through the
    /// server's own storage.
    private func timeJobQueries(_ server: SimulatedDeployment, customers: Int) async throws {
        let storage = server.storage
        let settings = CatchUpSettings()
        let now = SeedSQL.now
        func median(_ body: @escaping @Sendable () async throws -> Int) async throws -> (Double, Int) {
            var times: [Double] = []
            var found = 0
            for _ in 0..<9 {
                let started = ContinuousClock.now
                found = try await body()
                times.append(seconds(ContinuousClock.now - started) * 1000)
            }
            return (times.sorted()[times.count / 2], found)
        }
        let overdue = try await median {
            try await storage.transaction {
                try await $0.subscriptionsOverdue(
                    accessEndedBefore: now - settings.overdueAfter, notRefreshedSince: now - settings.refreshInterval,
                    limit: settings.refreshBatch
                ).count
            }
        }
        let awaitingNews = try await median {
            try await storage.transaction {
                try await $0.subscriptionsAwaitingNews(
                    lastNews: (now - settings.awaitingNewsWatch)..<(now - settings.refreshInterval),
                    notRefreshedSince: now - settings.refreshInterval, limit: settings.refreshBatch
                ).count
            }
        }
        let sweep = try await median {
            try await storage.transaction {
                try await $0.purchasesNeedingAcknowledgement(store: .googlePlay, after: nil, limit: 100).count
            }
        }
        let withoutApp = try await median {
            try await storage.transaction { try await $0.purchasesWithoutApp().values.reduce(0, +) }
        }
        let counts = try await median {
            try await storage.read { try await $0.unfinishedNotificationCounts().values.reduce(0, +) }
        }
        // Counted aside, as the rollup job does (SQLite: on a connection opened for it).
        let recount = try await median {
            try await storage.readAside { try await $0.countOverviewStates(day: now).reduce(0) { $0 + $1.count } }
        }
        say(
            "\(backend.name), \(customers) customers: job queries (median of 9): overdue refresh page "
                + "\(Self.format(overdue.0)) ms (\(overdue.1) found), awaiting-news refresh page "
                + "\(Self.format(awaitingNews.0)) ms (\(awaitingNews.1)), acknowledgement sweep page "
                + "\(Self.format(sweep.0)) ms (\(sweep.1)), apps backfill count \(Self.format(withoutApp.0)) ms "
                + "(\(withoutApp.1)), inbox counts for /metrics "
                + "\(Self.format(counts.0)) ms (\(counts.1) unfinished notifications), overview rollup's recount of "
                + "states \(Self.format(recount.0)) ms (\(recount.1) subscriptions)")
    }

    static func summarize(_ windows: [OpenLoopReader.Window]) -> Measured {
        let latencies = windows.flatMap(\.latencies).sorted()
        let lateness = windows.flatMap(\.sendLateness).sorted()
        let requests = windows.reduce(0) { $0 + $1.requests }
        let elapsed = windows.reduce(0) { $0 + $1.elapsed }
        return Measured(
            p50: percentile(0.5, of: latencies), p90: percentile(0.9, of: latencies),
            p99: percentile(0.99, of: latencies), p999: percentile(0.999, of: latencies),
            max: latencies.last ?? 0, requests: requests, failures: windows.reduce(0) { $0 + $1.failures },
            achievedRate: elapsed > 0 ? Double(latencies.count) / elapsed : 0,
            sendLatenessP99: percentile(0.99, of: lateness), sendLatenessMax: lateness.last ?? 0)
    }

    static func format(_ value: Double) -> String { String(format: "%.2f", value) }

    static func formatPercent(_ value: Double) -> String { String(format: "%.1f %%", value) }

    /// Context, not the figure: the steal over all of a database's windows, and the p99 of the
    /// windows in which the host stole little, next to that of the others. Where the two differ
    /// much, the host's bursts, not the server, set the p99 (Benchmarks/README.md).
    static func stealSummary(_ windows: [OpenLoopReader.Window], _ steal: [Double?]) -> String {
        let known = steal.compactMap { $0 }
        guard known.count == windows.count, !known.isEmpty else { return "" }
        let mean = known.reduce(0, +) / Double(known.count)
        let quiet = zip(windows, known).filter { $0.1 < quietStealPercent }.map(\.0)
        let busy = zip(windows, known).filter { $0.1 >= quietStealPercent }.map(\.0)
        func p99(_ windows: [OpenLoopReader.Window]) -> String {
            windows.isEmpty ? "none" : "p99 \(format(percentile(0.99, of: windows.flatMap(\.latencies).sorted()))) ms"
        }
        return "; the host stole \(formatPercent(mean)) of the CPU time over these windows; the \(quiet.count) "
            + "windows with steal under \(formatPercent(quietStealPercent)): \(p99(quiet)), the \(busy.count) others: "
            + p99(busy)
    }

    /// Below this steal a window counts as quiet in ``stealSummary(_:_:)``.
    static let quietStealPercent = 2.0
}

struct BenchmarkError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Prints a line at once, also into a file or a pipe: seeding takes minutes, and progress should show.
func say(_ line: String) {
    print(line)
    fflush(nil)
}
