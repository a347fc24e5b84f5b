import AppStoreServer
import AsyncHTTPClient
import Crypto
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import StoreSimulator
import Storekeeper
import StorekeeperServer
import StorekeeperStorage
import Testing

/// A Storekeeper server on loopback, on real storage, wired to a running store simulator on a
/// stopped clock: the simulator delivers its notifications to the server's webhooks, and the
/// server calls the simulator's APIs.
struct ServerHarness {
    static let start = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01T00:00:00Z
    static let bundleID = "com.example.storekeeper"
    static let apiKey = "sk_test_0123456789abcdef0123"
    static let readOnlyKey = "ro_test_0123456789abcdef0123"
    static let day: TimeInterval = 86_400

    let simulator: StoreSimulator
    let application: StorekeeperApplication
    let storage: any Storage
    let baseURL: String

    /// Runs `body` with a fresh server on `backend`'s storage and a fresh simulator.
    static func run(
        storageURL: String? = nil, policy: OwnershipPolicy = .keep, _ body: (ServerHarness) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        try await StoreSimulator.withRunning(configuration: .init(start: start, rate: 0, directory: directory)) {
            simulator, endpoints in
            let signingKey = P256.Signing.PrivateKey()
            let keyPath = directory.appendingPathComponent("AuthKey_TESTKEY001.p8").path
            try signingKey.pemRepresentation.write(toFile: keyPath, atomically: true, encoding: .utf8)
            simulator.appStore.registerAPIKey(keyId: "TESTKEY001", publicKey: signingKey.publicKey)
            simulator.appStore.addApp(
                SimulatedApp(bundleId: bundleID, appAppleId: 1_234_567_890, environment: .sandbox))
            try simulator.appStore.addProduct(
                .autoRenewable("pro.monthly", bundleId: bundleID, group: "pro", level: 2, period: "P1M", price: 9_990)
            )
            try simulator.appStore.addProduct(
                .autoRenewable("max.monthly", bundleId: bundleID, group: "pro", level: 1, period: "P1M", price: 19_990)
            )
            try simulator.appStore.addProduct(.oneTime("coins.100", bundleId: bundleID, kind: .consumable, price: 990))

            let configuration = StorekeeperConfiguration(
                server: HTTPSettings(host: "127.0.0.1", port: 0),
                storageURL: storageURL ?? directory.appendingPathComponent("storekeeper.sqlite").path,
                policies: Policies(ownershipConflict: policy),
                apiKeys: [
                    ConfiguredAPIKey(name: "backend", scope: .secret, secret: apiKey),
                    ConfiguredAPIKey(name: "app", scope: .readOnly, secret: readOnlyKey),
                ],
                apps: [
                    AppConfiguration(
                        name: "demo",
                        appStore: AppStoreAppConfiguration(
                            bundleID: bundleID, appAppleID: 1_234_567_890, environments: ["Sandbox"],
                            keyID: "TESTKEY001", issuerID: "57246542-96fe-1a63-e053-0824d011072a",
                            privateKeyPath: keyPath, allowedRootFiles: [endpoints.rootCertificatePath],
                            apiBaseURL: endpoints.baseURL, sandboxAPIBaseURL: endpoints.baseURL
                        )
                    )
                ],
                catalog: Catalog([
                    CatalogProduct(id: "pro.monthly", store: .appStore, kind: .subscription, entitlements: ["pro"]),
                    CatalogProduct(
                        id: "max.monthly", store: .appStore, kind: .subscription, entitlements: ["pro", "max"]
                    ),
                    CatalogProduct(
                        id: "coins.100", store: .appStore, kind: .consumable, balance: "coins", credits: 100),
                ]),
                processing: ProcessingSettings(initialRetryDelay: 0.05, maxRetryDelay: 1, pollInterval: 0.05)
            )
            let storage = try await StorageFactory.open(configuration.storageURL, logger: logger)
            try await storage.migrate()
            let application = try StorekeeperApplication(
                configuration: configuration, storage: storage, clock: simulator.clock, logger: logger
            )
            let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
            let server = application.makeHTTPServer(onBound: { port in
                portContinuation.yield(port)
                portContinuation.finish()
            })
            let group = ServiceGroup(
                services: [server] + application.backgroundServices, gracefulShutdownSignals: [], logger: logger
            )
            let running = Task { try await group.run() }
            var iterator = ports.makeAsyncIterator()
            let port = try #require(await iterator.next())
            let baseURL = "http://127.0.0.1:\(port)"
            try simulator.appStore.setNotificationURL("\(baseURL)/v1/notifications/app-store", bundleId: bundleID)
            let harness = ServerHarness(
                simulator: simulator, application: application, storage: storage, baseURL: baseURL)
            do {
                try await body(harness)
            } catch {
                await group.triggerGracefulShutdown()
                _ = await running.result
                try? await storage.close()
                throw error
            }
            await group.triggerGracefulShutdown()
            _ = await running.result
            try await storage.close()
        }
    }

    // MARK: Driving

    /// Waits until the simulator delivered everything due and the server processed its inbox.
    func settle() async throws {
        try await simulator.appStore.deliveriesSettled()
        let deadline = ContinuousClock.now.advanced(by: .seconds(20))
        while ContinuousClock.now < deadline {
            let counts = try await storage.transaction { try await $0.notificationCounts() }
            if (counts[.pending] ?? 0) == 0 && (counts[.failed] ?? 0) == 0 { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("the inbox did not drain")
    }

    func advance(days: Double) async throws {
        try simulator.appStore.advance(by: days * Self.day)
        try await settle()
    }

    /// Sends a request to the server with the secret API key (or `key`).
    func request(
        _ method: HTTPMethod, _ path: String, json: String? = nil, key: String? = ServerHarness.apiKey
    ) async throws -> (status: Int, body: [String: Any]) {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        if let key { request.headers.add(name: "Authorization", value: "Bearer \(key)") }
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: json))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(20))
        let body = try await response.body.collect(upTo: 1 << 20)
        let object = (try? JSONSerialization.jsonObject(with: Data(buffer: body))) as? [String: Any] ?? [:]
        return (Int(response.status.code), object)
    }

    /// A GET answered as plain text (e.g. /metrics).
    func text(_ path: String) async throws -> String {
        let response = try await HTTPClient.shared.execute(
            HTTPClientRequest(url: baseURL + path), timeout: .seconds(20))
        return String(buffer: try await response.body.collect(upTo: 1 << 20))
    }

    func createCustomer(_ id: String) async throws -> UUID {
        let (status, body) = try await request(.PUT, "/v1/customers/\(id)")
        #expect(status == 201 || status == 200)
        return try #require(UUID(uuidString: body["appAccountToken"] as? String ?? ""))
    }

    /// The customer's entitlements by name: (active, state).
    func entitlements(_ id: String) async throws -> [String: (active: Bool, state: String)] {
        let (status, body) = try await request(.GET, "/v1/customers/\(id)")
        #expect(status == 200)
        var result: [String: (Bool, String)] = [:]
        for entitlement in body["entitlements"] as? [[String: Any]] ?? [] {
            guard let name = entitlement["name"] as? String else { continue }
            result[name] = (entitlement["active"] as? Bool ?? false, entitlement["state"] as? String ?? "")
        }
        return result
    }

    func balances(_ id: String) async throws -> [String: Int] {
        let (_, body) = try await request(.GET, "/v1/customers/\(id)")
        return body["balances"] as? [String: Int] ?? [:]
    }
}
