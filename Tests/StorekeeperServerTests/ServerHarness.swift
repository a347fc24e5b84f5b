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
import StorekeeperDemo
import StorekeeperServer
import StorekeeperStorage
import TestSupport
import Testing

/// A Storekeeper server on loopback, on real storage, wired to a running store simulator on a
/// stopped clock (the ``SimulatedDeployment`` the demo runs on): the simulator delivers its
/// notifications to the server's webhooks, and the server calls the simulator's APIs.
struct ServerHarness {
    static let start = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01T00:00:00Z
    static let bundleID = SimulatedDeployment.bundleID
    static let packageName = SimulatedDeployment.packageName
    static let pushAudience = SimulatedDeployment.pushAudience
    static let pushAccount = SimulatedDeployment.pushAccount
    static let apiKey = "sk_test_0123456789abcdef0123"
    static let readOnlyKey = "ro_test_0123456789abcdef0123"
    static let day: TimeInterval = 86_400
    /// Fast retries; the catch-up is off, so tests run it themselves (``recover()``) at the
    /// simulated moment they choose.
    /// Refund requests are answered when a test says so (``answerRefundRequests()``), too.
    static let processing: ProcessingSettings = {
        var settings = ProcessingSettings(
            initialRetryDelay: 0.05, maxRetryDelay: 1, pollInterval: 0.05, catchUp: CatchUpSettings(enabled: false))
        settings.refundAnswers.interval = 24 * 3600
        return settings
    }()

    let deployment: SimulatedDeployment
    var simulator: StoreSimulator { deployment.simulator }
    var application: StorekeeperApplication { deployment.application }
    var storage: any Storage { deployment.storage }
    var baseURL: String { deployment.baseURL }

    /// Runs `body` with a fresh server on a fresh database of `backend` and a fresh simulator.
    static func run(
        on backend: StorageBackend, policy: OwnershipPolicy = .keep, appStoreGracePeriodDays: Int? = nil,
        processing: ProcessingSettings = ServerHarness.processing,
        apps: [SimulatedDeployment.App] = [.main], environment: PurchaseEnvironment = .sandbox,
        customize: (@Sendable (StoreSimulator, inout StorekeeperConfiguration) throws -> Void)? = nil,
        _ body: (ServerHarness) async throws -> Void
    ) async throws {
        switch backend {
        case .sqlite:
            try await run(
                storageURL: nil, policy: policy, appStoreGracePeriodDays: appStoreGracePeriodDays,
                processing: processing, apps: apps, environment: environment, customize: customize, body)
        case .postgresql:
            guard let serverURL = PostgresAdmin.serverURL else {
                Issue.record("PostgreSQL tests ran without STOREKEEPER_TEST_POSTGRES_URL")
                return
            }
            try await PostgresAdmin.withFreshDatabase(serverURL: serverURL) { url in
                try await run(
                    storageURL: url, policy: policy, appStoreGracePeriodDays: appStoreGracePeriodDays,
                    processing: processing, apps: apps, environment: environment, customize: customize, body)
            }
        }
    }

    /// Runs `body` with a fresh server on `storageURL` (SQLite in a temporary directory by
    /// default) and a fresh simulator.
    static func run(
        storageURL: String? = nil, policy: OwnershipPolicy = .keep, appStoreGracePeriodDays: Int? = nil,
        processing: ProcessingSettings = ServerHarness.processing,
        apps: [SimulatedDeployment.App] = [.main], environment: PurchaseEnvironment = .sandbox,
        customize: (@Sendable (StoreSimulator, inout StorekeeperConfiguration) throws -> Void)? = nil,
        _ body: (ServerHarness) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        var options = SimulatedDeployment.Options(
            start: start, storageURL: storageURL, policies: Policies(ownershipConflict: policy),
            appStoreGracePeriodDays: appStoreGracePeriodDays,
            secretAPIKey: apiKey, readOnlyAPIKey: readOnlyKey, directory: directory, processing: processing,
            logger: logger, apps: apps, environment: environment)
        options.customize = customize
        try await SimulatedDeployment.withRunning(options) { deployment in
            try await body(ServerHarness(deployment: deployment))
        }
    }

    // MARK: Driving

    /// Waits until the simulator delivered everything due and the server processed its inbox.
    func settle() async throws {
        try await deployment.settle()
    }

    /// Moves the shared clock; both stores fire what became due.
    func advance(days: Double) async throws {
        try await deployment.advance(days: days)
    }

    /// Runs the server's catch-up for missed notifications once, then lets what it stored settle.
    @discardableResult
    func recover() async throws -> CatchUpReport {
        let report = await application.recovery.run()
        try await settle()
        return report
    }

    /// Answers the refund requests due now (as the background job would), then lets the store's
    /// decision settle.
    @discardableResult
    func answerRefundRequests() async throws -> Int {
        let answered = try await application.refundAnswers.answerDue()
        try await settle()
        return answered
    }

    /// Sends a request to the server with the secret API key (or `key`).
    func request(
        _ method: HTTPMethod, _ path: String, json: String? = nil, key: String? = ServerHarness.apiKey,
        authorization: String? = nil
    ) async throws -> (status: Int, body: [String: Any]) {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        if let key { request.headers.add(name: "Authorization", value: "Bearer \(key)") }
        if let authorization { request.headers.add(name: "Authorization", value: authorization) }
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: json))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 1 << 20)
        let object = (try? JSONSerialization.jsonObject(with: Data(buffer: body))) as? [String: Any] ?? [:]
        return (Int(response.status.code), object)
    }

    /// A GET answered as plain text (e.g. /metrics).
    func text(_ path: String) async throws -> String {
        let response = try await HTTPClient.shared.execute(
            HTTPClientRequest(url: baseURL + path), timeout: .seconds(60))
        return String(buffer: try await response.body.collect(upTo: 1 << 20))
    }

    func createCustomer(_ id: String) async throws -> UUID {
        let (status, body) = try await request(.PUT, "/v1/customers/\(id)")
        #expect(status == 201 || status == 200)
        return try #require(UUID(uuidString: body["appAccountToken"] as? String ?? ""))
    }

    /// Creates the customer and gives the options of a Google Play purchase made in the app for
    /// them: their app account token as the obfuscated account id, as the app would set it.
    func googlePlayBuyer(_ id: String, pending: Bool = false) async throws -> PlayPurchaseOptions {
        PlayPurchaseOptions(obfuscatedExternalAccountId: try await createCustomer(id).uuidString, pending: pending)
    }

    /// Creates the customer, who subscribes to `product` on Google Play in the app (on its first
    /// base plan unless `basePlan` names one); its purchase token.
    func googlePlaySubscription(_ customer: String, product: String = "premium", basePlan: String? = nil)
        async throws -> String
    {
        let buyer = try await googlePlayBuyer(customer)
        return try simulator.googlePlay.purchaseSubscription(
            packageName: Self.packageName, productId: product, basePlanId: basePlan, options: buyer
        ).purchaseToken
    }

    /// The same story on both stores: alice subscribes to pro.monthly on the App Store and gina to
    /// premium on Google Play, in the app; both are processed and the clock moves on a little.
    /// Alice's original transaction id and gina's purchase token.
    func subscribeOnBothStores() async throws -> (appStore: String, googlePlay: String) {
        let token = try await createCustomer("alice")
        let bought = try simulator.appStore.purchase(customer: "alice", product: "pro.monthly", appAccountToken: token)
        let play = try await googlePlaySubscription("gina")
        try await settle()
        try await advance(days: 0.01)
        return (bought.originalTransactionId, play)
    }

    /// A Google Play subscription to premium whose payment is pending (Google sends nothing yet),
    /// presented by the app for the customer (created here), or presented only once its payment was
    /// canceled; its purchase token.
    func pendingGooglePlaySubscription(_ customer: String, canceledBeforePresented: Bool = false) async throws
        -> String
    {
        let buyer = try await googlePlayBuyer(customer, pending: true)
        let token = try simulator.googlePlay.purchaseSubscription(
            packageName: Self.packageName, productId: "premium", options: buyer
        ).purchaseToken
        if canceledBeforePresented { try simulator.googlePlay.cancelPendingPurchase(token) }
        let (status, body) = try await request(
            .POST, "/v1/customers/\(customer)/purchases/google-play",
            json: #"{"purchaseToken":"\#(token)","packageName":"\#(Self.packageName)"}"#)
        #expect(status == 200, "\(body)")
        return token
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

    /// One entitlement of the customer view, decoded.
    func entitlementView(_ id: String, _ name: String) async throws -> EntitlementView? {
        try await CustomerAPIView.fetch(id, from: self).entitlements.first { $0.name == name }
    }

    func balances(_ id: String) async throws -> [String: Int] {
        let (_, body) = try await request(.GET, "/v1/customers/\(id)")
        return body["balances"] as? [String: Int] ?? [:]
    }
}

/// The storage an end-to-end test runs on: SQLite always, PostgreSQL when
/// STOREKEEPER_TEST_POSTGRES_URL names a server (`StorageBackend.available`, from TestSupport).
extension StorageBackend {
    /// Runs `body` with the storage URL of a fresh database of this backend: a file in a
    /// temporary directory, or a database created on the PostgreSQL test server (both removed
    /// afterwards).
    func withFreshDatabase<Result>(_ body: (String) async throws -> Result) async throws -> Result {
        switch self {
        case .sqlite:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-test-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            return try await body(directory.appendingPathComponent("storekeeper.sqlite").path)
        case .postgresql:
            let serverURL = try #require(
                PostgresAdmin.serverURL, "PostgreSQL tests ran without STOREKEEPER_TEST_POSTGRES_URL")
            return try await PostgresAdmin.withFreshDatabase(serverURL: serverURL) { try await body($0) }
        }
    }
}
