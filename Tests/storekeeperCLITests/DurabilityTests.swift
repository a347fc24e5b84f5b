import Foundation
import StoreSimulator
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A `storekeeper serve` process killed with SIGKILL in the middle of a burst of store
/// notifications: after a restart on the same database, and the stores' redeliveries, every
/// purchase is credited exactly once.
@Suite struct DurabilityTests {
    static let bundleID = "com.example.storekeeper"
    static let packageName = "com.example.storekeeper.android"
    static let pushAudience = "https://storekeeper.example.com/push"
    static let pushAccount = "pubsub-push@storekeeper-simulator.iam.gserviceaccount.com"
    static let apiKey = "sk_test_0123456789abcdef0123"

    @Test func aKilledServerLosesNothingAndAppliesNothingTwice() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-kill-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // Real time (rate 1), so the server's clock and the simulator's agree; the stores retry
        // within seconds instead of hours.
        let configuration = StoreSimulator.Configuration(
            rate: 1, directory: directory,
            appStore: AppStoreSimulation.Configuration(retryIntervals: Array(repeating: 0.5, count: 40)),
            googlePlay: GooglePlaySimulation.Configuration(minimumBackoff: 0.2, maximumBackoff: 0.5))
        try await StoreSimulator.withRunning(configuration: configuration) { simulator, endpoints in
            let configPath = try Self.prepare(simulator, endpoints: endpoints, directory: directory)
            var server = try await ServerProcess.start(config: configPath)
            defer { if server.process.isRunning { server.process.terminate() } }
            let port = server.port
            let token = try await Self.createCustomer("dora", on: server.baseURL)
            try simulator.appStore.setNotificationURL(
                server.baseURL + "/v1/notifications/app-store", bundleId: Self.bundleID)
            try simulator.googlePlay.setPushSubscription(
                PlayPushSubscription(
                    endpoint: server.baseURL + "/v1/notifications/google-play", audience: Self.pushAudience,
                    serviceAccountEmail: Self.pushAccount),
                packageName: Self.packageName)

            // The burst: 30 purchases per store, the server killed after the tenth.
            let purchases = 30
            for index in 0..<purchases {
                try simulator.appStore.purchase(customer: "dora", product: "coins.100", appAccountToken: token)
                try simulator.googlePlay.purchaseProduct(
                    packageName: Self.packageName, productId: "gems", quantity: 2,
                    options: PlayPurchaseOptions(obfuscatedExternalAccountId: token.uuidString))
                if index == 10 {
                    #expect(try await server.stop(signal: SIGKILL), "SIGKILL did not end the server")
                    #expect(server.process.termination == .signalled(SIGKILL))
                }
                try await Task.sleep(for: .milliseconds(15))
            }
            // Both stores meet the dead server before it comes back (otherwise a fast restart can
            // take every delivery on its first attempt and nothing is redelivered).
            try await waitUntil(timeout: 30) {
                simulator.appStore.notifications.contains { $0.attempts.contains { $0.sendAttemptResult != "SUCCESS" } }
                    && simulator.googlePlay.pushes.contains { $0.attempts.contains { !$0.acknowledged } }
            }
            server = try await ServerProcess.start(config: configPath, port: port)

            // Every notification is eventually answered with a 2xx…
            try await waitUntil(timeout: 90) {
                simulator.appStore.notifications.allSatisfy { $0.status == .delivered }
                    && simulator.googlePlay.pushes.allSatisfy { $0.status == .acknowledged }
            }
            #expect(simulator.appStore.notifications.count == purchases)
            #expect(simulator.googlePlay.pushes.count == purchases)
            let redelivered =
                simulator.appStore.notifications.filter { $0.attempts.count > 1 }.count
                + simulator.googlePlay.pushes.filter { $0.attempts.count > 1 }.count
            #expect(redelivered > 0, "the kill should have made the stores redeliver")

            // …and processed exactly once: 100 coins per App Store purchase, 2 × 10 per Google one.
            let expected = purchases * 100 + purchases * 20
            try await waitUntil(timeout: 60) {
                (try? await Self.coins("dora", on: server.baseURL)) == expected
            }
            try await Task.sleep(for: .milliseconds(500))
            #expect(try await Self.coins("dora", on: server.baseURL) == expected)
            #expect(try await server.stop(signal: SIGTERM))
        }
    }

    /// Fills the simulator's catalogs, writes the keys, and writes a configuration for `serve`.
    static func prepare(
        _ simulator: StoreSimulator, endpoints: StoreSimulator.Endpoints, directory: URL
    ) throws -> String {
        simulator.appStore.addApp(SimulatedApp(bundleId: bundleID, appAppleId: 1_234_567_890, environment: .sandbox))
        try simulator.appStore.addProduct(.oneTime("coins.100", bundleId: bundleID, kind: .consumable, price: 990))
        simulator.googlePlay.addApp(SimulatedPlayApp(packageName: packageName))
        try simulator.googlePlay.addProduct(
            SimulatedPlayProduct(packageName: packageName, productId: "gems", maxQuantity: 10))
        let account = try simulator.googleIdentity.makeServiceAccount()
        let keyPath = directory.appendingPathComponent("service-account.json")
        try account.jsonKey.write(to: keyPath)
        let configuration: [String: Any] = [
            "server": ["host": "127.0.0.1", "port": 0],
            // The simulator's purchases are Sandbox ones: a sandbox deployment lets them grant.
            "environment": "sandbox",
            "storage": ["url": directory.appendingPathComponent("storekeeper.sqlite").path],
            "apiKeys": ["backend": ["scope": "secret", "secret": apiKey]],
            // A short lease: what the killed instance was processing is taken over within seconds.
            "processing": ["initialRetryDelay": 0.1, "maxRetryDelay": 1, "pollInterval": 0.1, "lease": 2],
            "apps": [
                "main": [
                    "appStore": [
                        "bundleId": bundleID, "environments": ["Sandbox"],
                        "allowedRootFiles": [endpoints.rootCertificatePath],
                    ],
                    "googlePlay": [
                        "packageName": packageName, "serviceAccountKeyPath": keyPath.path,
                        "pushAudience": pushAudience, "pushServiceAccount": pushAccount,
                        "apiBaseUrl": endpoints.baseURL, "jwksUrl": simulator.googleIdentity.jwksURL ?? "",
                    ],
                ]
            ],
            "products": [
                "appStore": ["coins.100": ["kind": "consumable", "balance": "coins", "credits": 100]],
                "googlePlay": ["gems": ["kind": "consumable", "balance": "coins", "credits": 10]],
            ],
        ]
        let path = directory.appendingPathComponent("storekeeper.json")
        try JSONSerialization.data(withJSONObject: configuration).write(to: path)
        return path.path
    }

    static func createCustomer(_ id: String, on baseURL: String) async throws -> UUID {
        try await ServerAPI(baseURL: baseURL, apiKey: apiKey).createCustomer(id)
    }

    static func coins(_ id: String, on baseURL: String) async throws -> Int {
        let object = try await ServerAPI(baseURL: baseURL, apiKey: apiKey).json("/v1/customers/\(id)") as? [String: Any]
        return (object?["balances"] as? [String: Int])?["coins"] ?? 0
    }
}
