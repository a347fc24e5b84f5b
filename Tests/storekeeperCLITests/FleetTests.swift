import Foundation
import StoreSimulator
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Two `storekeeper serve` processes on one PostgreSQL database, Google Play pushing each
/// notification to either at random, and the one running the background jobs SIGKILLed in the
/// middle of the burst. Every notification is applied exactly once; the end state is the one a
/// single instance reaches with the same story delivered in order; the catch-up and the
/// acknowledgement sweep ran on one instance at a time; and the two together never exceeded the
/// Google quota, counted from the simulator's request log.
@Suite struct FleetTests {
    static let packageName = "com.example.fleet"
    static let pushAudience = "https://storekeeper.example.com/push"
    static let pushAccount = "pubsub-push@storekeeper-simulator.iam.gserviceaccount.com"
    static let apiKey = "sk_test_fleet_0123456789abcdef"
    static let customers = ["dora", "eli"]
    static let purchases = 30
    /// Where the burst kills an instance: two thirds in, when both instances have been
    /// processing against the shared quota for a while.
    static let killAfter = 20

    /// The quota both instances share: small, so the burst runs into it.
    static let window: TimeInterval = 2
    /// Each limit's calls: by the simulator's bucket (nil: all), and by the bucket the instances
    /// record a call's turn under (nil: all).
    static let limits: [(key: String, buckets: Set<String>?, admitted: Set<String>?, requests: Int)] = [
        ("oneTimePurchases", ["purchases.productsv2", "purchases.products"], ["one-time-purchases"], 10),
        ("subscriptions", ["purchases.subscriptionsv2", "purchases.subscriptions"], ["subscriptions"], 6),
        ("voidedPurchases", ["purchases.voidedpurchases"], ["voided-purchases"], 3),
        ("overall", nil, nil, 14),
    ]
    /// How far a turn (the instance's wall clock, stored in whole milliseconds) and an arrival (the
    /// simulator's monotonic clock, put on the wall clock at the run's start) may disagree.
    static let clockTolerance: TimeInterval = 0.005

    @Test(.enabled(if: PostgresAdmin.serverURL != nil, "needs STOREKEEPER_TEST_POSTGRES_URL (run .ci/postgres.sh)"))
    func twoInstancesOneKilledMidBurstApplyEverythingOnceWithinTheQuota() async throws {
        let serverURL = try #require(PostgresAdmin.serverURL)
        // The reference: one instance, every notification delivered in order, no kill.
        let reference = try await PostgresAdmin.withFreshDatabase(serverURL: serverURL) { url in
            try await Self.run(storageURL: url, instances: 1, kill: false, quotas: false)
        }
        let fleet = try await PostgresAdmin.withFreshDatabase(serverURL: serverURL) { url in
            try await Self.run(storageURL: url, instances: 2, kill: true, quotas: true)
        }
        #expect(fleet.views == reference.views, "the end state differs from a single in-order instance's")
        #expect(fleet.processed == reference.processed)
    }

    struct Outcome {
        /// Each customer's view with what differs between runs (dates, tokens) left out.
        var views: [String: NormalizedJSON]
        var processed: Int
    }

    /// Runs the story against `instances` servers on the database at `storageURL`.
    static func run(storageURL: String, instances count: Int, kill: Bool, quotas: Bool) async throws -> Outcome {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-fleet-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // Real time (rate 1): the servers' clocks and the simulator's agree, and Pub/Sub redelivers
        // within a second.
        let simulatorConfiguration = StoreSimulator.Configuration(
            rate: 1, directory: directory,
            googlePlay: GooglePlaySimulation.Configuration(
                seed: 18, minimumBackoff: 0.2, maximumBackoff: 0.5, deliveryTimeout: .seconds(1), deliverySeed: 42))
        return try await StoreSimulator.withRunning(configuration: simulatorConfiguration) { simulator, endpoints in
            let configPath = try prepare(
                simulator, endpoints: endpoints, directory: directory, storageURL: storageURL, quotas: quotas)
            let admissions = quotas ? try await keepAdmissions(config: configPath, storageURL: storageURL) : nil
            // Where the simulator's arrivals (monotonic) fall on the wall clock turns are taken on.
            let (wallStart, monotonicStart) = (Date(), ContinuousClock.now)
            let wallClock = { (arrival: ContinuousClock.Instant) -> Date in
                let (seconds, attoseconds) = (arrival - monotonicStart).components
                return wallStart.addingTimeInterval(Double(seconds) + Double(attoseconds) / 1e18)
            }
            var servers: [ServerProcess] = []
            defer { for server in servers where server.process.isRunning { server.process.terminate() } }
            for index in 0..<count {
                servers.append(
                    try await ServerProcess.start(config: configPath, environment: ["SERVER_INSTANCE": "i\(index)"]))
            }
            var tokens: [String: UUID] = [:]
            for customer in customers {
                tokens[customer] = try await createCustomer(customer, on: servers[0].baseURL)
            }
            let endpointsOfServers = servers.map { $0.baseURL + "/v1/notifications/google-play" }
            try simulator.googlePlay.setPushSubscription(
                PlayPushSubscription(
                    endpoint: endpointsOfServers[0], audience: pushAudience, serviceAccountEmail: pushAccount,
                    otherEndpoints: Array(endpointsOfServers.dropFirst())),
                packageName: packageName)
            let play = simulator.googlePlay
            func catchUpCalls() -> [GooglePlaySimulation.APIRequest] {
                play.apiRequests.filter { $0.userAgent?.contains("job catch-up") == true }
            }
            var killed: (instance: String, at: ContinuousClock.Instant)?
            if kill {
                // The instance holding the catch-up is the one killed: the job must move.
                try await waitUntil(timeout: 30) { !catchUpCalls().isEmpty }
            }

            for index in 0..<purchases {
                let customer = customers[index % customers.count]
                let options = PlayPurchaseOptions(obfuscatedExternalAccountId: tokens[customer]?.uuidString)
                if index % 10 == 3 {
                    _ = try play.purchaseSubscription(packageName: packageName, productId: "premium", options: options)
                } else {
                    _ = try play.purchaseProduct(
                        packageName: packageName, productId: "gems", quantity: 1 + index % 3, options: options)
                }
                if kill, index == killAfter {
                    // Both instances took deliveries and worked against the quota before one dies.
                    try await waitUntil(timeout: 30) {
                        play.pushes.filter { !$0.attempts.isEmpty }.count >= killAfter / 2
                    }
                    let holder = try #require(catchUpCalls().last.flatMap { instance(of: $0) })
                    let victim = try #require(Int(holder.dropFirst()))
                    let server = servers[victim]
                    // Noted as the signal goes: the test process may notice the death late.
                    let killedAt = ContinuousClock.now
                    #expect(try await server.stop(signal: SIGKILL), "SIGKILL did not end the server")
                    killed = (holder, killedAt)
                }
                // Paced so that deliveries and processing overlap on both instances before the kill.
                try await Task.sleep(for: .milliseconds(150))
            }

            // Every push acknowledged (the ones that met the dead instance redelivered to the live one)…
            try await waitUntil(timeout: 90) { play.pushes.allSatisfy { $0.status == .acknowledged } }
            let pushes = play.pushes
            #expect(pushes.count == purchases)
            let live = servers.filter(\.process.isRunning)
            #expect(live.count == count - (kill ? 1 : 0))
            let liveURL = try #require(live.first?.baseURL)
            // …and every stored notification processed, none failed or waiting.
            try await waitUntil(timeout: 60) {
                let processed = try? await inbox("processed", on: liveURL)
                let pending = try? await inbox("pending", on: liveURL)
                return processed == pushes.count && pending == 0
            }
            #expect(try await inbox("failed", on: liveURL) == 0)
            let processed = try await inbox("processed", on: liveURL)
            #expect(processed == pushes.count, "each notification is stored and applied once")

            if let killed {
                let attempted = Set(pushes.flatMap { $0.attempts.compactMap(\.endpoint) })
                #expect(attempted.count == count, "pushes went to both instances")
                #expect(
                    pushes.contains { $0.attempts.contains { $0.httpStatus == nil } },
                    "some push met the killed instance and was redelivered")
                // The catch-up moves to the survivor once the dead holder's lease runs out.
                try await waitUntil(timeout: 30) {
                    catchUpCalls().contains { instance(of: $0) != killed.instance }
                }
                for job in ["catch-up", "acknowledgement sweep"] {
                    let calls = play.apiRequests.filter { $0.userAgent?.contains("job \(job)") == true }
                    expectOneInstanceAtATime(calls, job: job, killed: killed, mustMove: job == "catch-up")
                }
                if let admissions {
                    expectWithinQuota(
                        play.apiRequests, turns: try await admissions.turns(), wallClock: wallClock)
                }
            }

            var views: [String: NormalizedJSON] = [:]
            for customer in customers {
                views[customer] = NormalizedJSON(try await customerView(customer, on: liveURL))
            }
            for server in live { #expect(try await server.stop(signal: SIGTERM)) }
            return Outcome(views: views, processed: processed)
        }
    }

    /// The instance named in a request's User-Agent: `storekeeper (instance i0; job catch-up)`.
    static func instance(of request: GooglePlaySimulation.APIRequest) -> String? {
        guard let agent = request.userAgent, let range = agent.range(of: "instance ") else { return nil }
        return String(agent[range.upperBound...].prefix { $0 != ";" && $0 != ")" })
    }

    /// A job's calls came from one instance until it was killed, then from another: the instance
    /// changes at most once, and never back.
    static func expectOneInstanceAtATime(
        _ calls: [GooglePlaySimulation.APIRequest], job: String,
        killed: (instance: String, at: ContinuousClock.Instant), mustMove: Bool
    ) {
        let sequence = calls.compactMap { instance(of: $0) }
        if mustMove { #expect(Set(sequence).count == 2, "\(job) did not move from the killed instance") }
        #expect(sequence.count == calls.count, "every \(job) call names its instance")
        var runs: [String] = []
        for name in sequence where runs.last != name { runs.append(name) }
        #expect(runs.count <= 2, "\(job) calls alternated between instances: \(runs)")
        if runs.count == 2 {
            #expect(runs[0] == killed.instance, "\(job) moved away from an instance that was not killed")
            let firstOfSurvivor = calls.first { instance(of: $0) == runs[1] }
            #expect(firstOfSurvivor.map { $0.arrival > killed.at } ?? false, "\(job) ran on both instances at once")
        }
    }

    /// The quota, checked where it is decided and where the store sees it:
    /// - the turns the instances gave their calls (every one recorded, whichever instance) never
    ///   put more calls in a window of the limit's length than it allows, and the burst did fill a
    ///   window of one-time purchases;
    /// - every call the simulator logged arrived at or after a turn of its own (the k-th arrival
    ///   is no earlier than the k-th turn), so no call went around the quota;
    /// - counted from the simulator's log, no window shorter than the limit's by the delay between
    ///   a turn and its call's arrival holds more calls than the limit. The delay is measured, as
    ///   the smallest that matches every arrival with a turn before it: on a loaded machine a call
    ///   reaches the store well after its turn (0.9 s was seen), which no fixed allowance covers.
    static func expectWithinQuota(
        _ requests: [GooglePlaySimulation.APIRequest], turns: [Admission],
        wallClock: (ContinuousClock.Instant) -> Date
    ) {
        for limit in limits {
            let calls = requests.filter { limit.buckets?.contains($0.bucket) ?? true }
                .sorted { $0.arrival < $1.arrival }
            let arrivals = calls.map { wallClock($0.arrival).timeIntervalSince1970 }
            let given = turns.filter { limit.admitted?.contains($0.bucket) ?? true }.map(\.time).sorted()

            let busiestTurns = busiest(given, within: window)
            #expect(
                busiestTurns.count <= limit.requests,
                "\(busiestTurns.count) \(limit.key) turns within \(window) s, over the limit of \(limit.requests)")
            if limit.key == "oneTimePurchases" {
                #expect(
                    busiestTurns.count == limit.requests, "the burst should have run into the \(limit.key) limit")
            }

            #expect(
                arrivals.count <= given.count, "\(arrivals.count) \(limit.key) calls with \(given.count) turns")
            let early = zip(arrivals, given).enumerated().first { $0.element.0 < $0.element.1 - clockTolerance }
            #expect(
                early == nil,
                """
                \(limit.key) call \(early.map { "\($0.offset + 1)" } ?? "") arrived before as many turns were given: \
                \(describe(calls[...]))
                """)

            guard early == nil, arrivals.count <= given.count else { continue }
            let delay = turnToArrivalDelay(arrivals: arrivals, turns: given)
            // The matching allows each pair the clocks' tolerance on either side: an arrival window
            // this short holds arrivals whose turns fit in one window of the limit's length.
            let checked = window - delay - 2 * clockTolerance
            guard checked > 0 else { continue }
            let busiestArrivals = busiest(arrivals, within: checked)
            #expect(
                busiestArrivals.count <= limit.requests,
                """
                \(busiestArrivals.count) \(limit.key) calls arrived within \(checked) s (the limit's window less \
                the \(delay) s a call took from its turn, less the clocks' tolerance twice), over the limit of \
                \(limit.requests): \(describe(calls[busiestArrivals.range]))
                """)
        }
    }

    /// The most `times` (sorted, in seconds) within any window of `length`, and which.
    static func busiest(_ times: [TimeInterval], within length: TimeInterval) -> (count: Int, range: Range<Int>) {
        var most = (count: 0, range: 0..<0)
        var start = 0
        for end in times.indices {
            while times[end] - times[start] >= length { start += 1 }
            if end - start + 1 > most.count { most = (end - start + 1, start..<(end + 1)) }
        }
        return most
    }

    /// The smallest delay `d` (to the millisecond) such that each arrival can be given a turn of
    /// its own no earlier than `d` before it (both sorted, each arrival no earlier than its rank's
    /// turn). Matching each arrival in order with the earliest turn still in reach is optimal, so
    /// a delay is feasible when that greedy matching succeeds.
    static func turnToArrivalDelay(arrivals: [TimeInterval], turns: [TimeInterval]) -> TimeInterval {
        func feasible(_ delay: TimeInterval) -> Bool {
            var next = 0
            for arrival in arrivals {
                while next < turns.count, turns[next] < arrival - delay - clockTolerance { next += 1 }
                guard next < turns.count, turns[next] <= arrival + clockTolerance else { return false }
                next += 1
            }
            return true
        }
        var (low, high) = (0, Int(((arrivals.last ?? 0) - (turns.first ?? 0)) * 1000) + 1)
        while low < high {
            let middle = (low + high) / 2
            if feasible(Double(middle) / 1000) { high = middle } else { low = middle + 1 }
        }
        return Double(low) / 1000
    }

    /// A call's turn, as an instance recorded it.
    struct Admission {
        var bucket: String
        /// Seconds since 1970.
        var time: TimeInterval
    }

    /// Copies every quota admission as it is recorded into a table of the test's own:
    /// `SharedQuota` forgets the admissions that no longer count, and the test checks all of them
    /// after the run. The schema is migrated first (as a deployment would), so the copy is in
    /// place before an instance starts.
    static func keepAdmissions(config: String, storageURL: String) async throws -> KeptAdmissions {
        let migrated = try await CLI.run(["migrate", "--config", config])
        try #require(migrated.status == 0, "migrate failed: \(migrated.standardError)")
        let admin = try PostgresAdmin(url: storageURL)
        try await admin.execute("CREATE TABLE kept_admissions (bucket TEXT NOT NULL, admitted_at BIGINT NOT NULL)")
        try await admin.execute(
            """
            CREATE FUNCTION keep_admission() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN INSERT INTO kept_admissions VALUES (NEW.bucket, NEW.admitted_at); RETURN NEW; END $$
            """)
        try await admin.execute(
            """
            CREATE TRIGGER keep_admissions AFTER INSERT ON quota_admissions
            FOR EACH ROW EXECUTE FUNCTION keep_admission()
            """)
        return KeptAdmissions(admin: admin)
    }

    struct KeptAdmissions {
        let admin: PostgresAdmin

        func turns() async throws -> [Admission] {
            try await admin.column("SELECT bucket || ' ' || admitted_at FROM kept_admissions").map { row in
                let fields = row.split(separator: " ")
                let milliseconds = try #require(fields.count == 2 ? Int64(fields[1]) : nil, "admission \(row)")
                return Admission(bucket: String(fields[0]), time: Double(milliseconds) / 1000)
            }
        }
    }

    /// Calls as `+<ms after the first> <instance> <User-Agent's job>`, to tell a late arrival from
    /// two instances' calls crowding one window.
    static func describe(_ calls: ArraySlice<GooglePlaySimulation.APIRequest>) -> String {
        guard let first = calls.first?.arrival else { return "none" }
        return calls.map { call in
            let offset = (call.arrival - first).components
            let milliseconds = offset.seconds * 1000 + offset.attoseconds / 1_000_000_000_000_000
            return "+\(milliseconds) ms \(instance(of: call) ?? "?") \(call.userAgent ?? "-") \(call.path)"
        }.joined(separator: "; ")
    }

    /// Fills the simulator's catalog, writes the service-account key and a configuration for `serve`.
    static func prepare(
        _ simulator: StoreSimulator, endpoints: StoreSimulator.Endpoints, directory: URL, storageURL: String,
        quotas: Bool
    ) throws -> String {
        simulator.googlePlay.addApp(SimulatedPlayApp(packageName: packageName))
        try simulator.googlePlay.addProduct(
            SimulatedPlayProduct(packageName: packageName, productId: "gems", maxQuantity: 10))
        try simulator.googlePlay.addSubscription(
            SimulatedPlaySubscription(
                packageName: packageName, productId: "premium",
                basePlans: [SimulatedBasePlan(basePlanId: "monthly", billingPeriod: .iso8601("P1M"))]))
        let account = try simulator.googleIdentity.makeServiceAccount()
        let keyPath = directory.appendingPathComponent("service-account.json")
        try account.jsonKey.write(to: keyPath)
        var quotaSection: [String: Any] = ["maxWait": 60]
        if quotas {
            for limit in limits { quotaSection[limit.key] = "\(limit.requests)/\(Int(window))s" }
        } else {
            for limit in limits { quotaSection[limit.key] = "none" }
        }
        let configuration: [String: Any] = [
            "server": ["host": "127.0.0.1", "port": 0],
            "environment": "sandbox",
            "storage": ["url": storageURL],
            "apiKeys": ["backend": ["scope": "secret", "secret": apiKey]],
            // Short leases: what the killed instance was processing, and the jobs it held, are
            // taken over within seconds. A job lease is renewed every third of it, so a live holder
            // keeps its jobs through a stall of up to two thirds of it (4 s: CI machines stall).
            "processing": [
                "initialRetryDelay": 0.1, "maxRetryDelay": 1, "pollInterval": 0.1, "lease": 2, "jobLease": 6,
                "acknowledgementSweepInterval": 0.5, "catchUp": ["interval": 0.5],
            ],
            "quotas": ["googlePlay": quotaSection],
            "apps": [
                "main": [
                    "googlePlay": [
                        "packageName": packageName, "serviceAccountKeyPath": keyPath.path,
                        "pushAudience": pushAudience, "pushServiceAccount": pushAccount,
                        "apiBaseUrl": endpoints.baseURL, "jwksUrl": simulator.googleIdentity.jwksURL ?? "",
                    ]
                ]
            ],
            "products": [
                "googlePlay": [
                    "gems": ["kind": "consumable", "balance": "gems", "credits": 10],
                    "premium": ["kind": "subscription", "entitlements": ["premium"]],
                ]
            ],
        ]
        let path = directory.appendingPathComponent("storekeeper.json")
        try JSONSerialization.data(withJSONObject: configuration).write(to: path)
        return path.path
    }

    static func request(_ path: String, on baseURL: String, method: String = "GET") async throws -> Any {
        try await ServerAPI(baseURL: baseURL, apiKey: apiKey).json(path, method: method)
    }

    static func createCustomer(_ id: String, on baseURL: String) async throws -> UUID {
        try await ServerAPI(baseURL: baseURL, apiKey: apiKey).createCustomer(id)
    }

    static func customerView(_ id: String, on baseURL: String) async throws -> Any {
        try await request("/v1/customers/\(id)", on: baseURL)
    }

    /// How many stored notifications have `status`.
    static func inbox(_ status: String, on baseURL: String) async throws -> Int {
        let object = try await request("/v1/inbox?status=\(status)&limit=1000", on: baseURL) as? [String: Any]
        return (object?["notifications"] as? [Any])?.count ?? -1
    }
}

/// JSON with what differs between two runs of one story left out: dates (keys ending in `At`,
/// `asOf`) and the customer's generated app account token.
struct NormalizedJSON: Equatable, CustomStringConvertible {
    let text: String

    init(_ value: Any) {
        func strip(_ value: Any) -> Any {
            if let object = value as? [String: Any] {
                var kept: [String: Any] = [:]
                for (key, item) in object
                where !key.hasSuffix("At") && key != "asOf" && key != "appAccountToken" {
                    kept[key] = strip(item)
                }
                return kept
            }
            if let array = value as? [Any] { return array.map(strip) }
            return value
        }
        let data = (try? JSONSerialization.data(withJSONObject: strip(value), options: [.sortedKeys])) ?? Data()
        text = String(decoding: data, as: UTF8.self)
    }

    var description: String { text }
}
