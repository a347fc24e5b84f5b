import Crypto
public import Foundation
public import Logging
import ServiceLifecycle
public import StoreSimulator
public import Storekeeper
public import StorekeeperServer
public import StorekeeperStorage

/// A Storekeeper server on loopback wired to a running store simulator for both stores: one app
/// (`com.example.storekeeper` on the App Store, `com.example.storekeeper.android` on Google
/// Play) with a small catalog, the simulator's keys and roots in the configuration, and both
/// stores' notifications pointed at the server's webhooks. `storekeeper demo` and the end-to-end
/// tests run on it.
public struct SimulatedDeployment: Sendable {
    public static let bundleID = "com.example.storekeeper"
    public static let appAppleID: Int64 = 1_234_567_890
    public static let packageName = "com.example.storekeeper.android"
    public static let pushAudience = "https://storekeeper.example.com/v1/notifications/google-play"
    public static let pushAccount = "pubsub-push@storekeeper-simulator.iam.gserviceaccount.com"
    public static let day: TimeInterval = 86_400

    /// What to run.
    public struct Options: Sendable {
        /// When the simulated clock starts.
        public var start: Date
        /// Simulated seconds per real second (0: time moves only when advanced).
        public var rate: Double
        /// The storage URL; nil: SQLite in `directory`.
        public var storageURL: String?
        public var policies: Policies
        /// The App Store billing grace period in days (nil: none, failed renewals go to billing retry).
        public var appStoreGracePeriodDays: Int?
        /// API keys the server accepts (a secret one and a read-only one).
        public var secretAPIKey: String
        public var readOnlyAPIKey: String
        /// Where keys, the simulator's root and the SQLite database are written.
        public var directory: URL
        public var processing: ProcessingSettings
        /// Seeds the simulated stores' ids (transaction ids, notification UUIDs, purchase tokens).
        public var simulatorSeed: UInt64
        public var logger: Logger
        /// Changes the server's configuration before it starts (e.g. more apps, set up in the
        /// simulator too).
        public var customize: (@Sendable (StoreSimulator, inout StorekeeperConfiguration) throws -> Void)?

        public init(
            start: Date = Date(timeIntervalSince1970: 1_767_225_600), rate: Double = 0, storageURL: String? = nil,
            policies: Policies = Policies(), appStoreGracePeriodDays: Int? = nil,
            secretAPIKey: String = "sk_demo_0123456789abcdef0123",
            readOnlyAPIKey: String = "ro_demo_0123456789abcdef0123",
            directory: URL,
            processing: ProcessingSettings = ProcessingSettings(
                initialRetryDelay: 0.05, maxRetryDelay: 1, pollInterval: 0.05),
            simulatorSeed: UInt64 = 1, logger: Logger = Logger(label: "storekeeper.demo")
        ) {
            self.simulatorSeed = simulatorSeed
            self.start = start
            self.rate = rate
            self.storageURL = storageURL
            self.policies = policies
            self.appStoreGracePeriodDays = appStoreGracePeriodDays
            self.secretAPIKey = secretAPIKey
            self.readOnlyAPIKey = readOnlyAPIKey
            self.directory = directory
            self.processing = processing
            self.logger = logger
        }
    }

    public let options: Options
    public let simulator: StoreSimulator
    public let application: StorekeeperApplication
    public let storage: any Storage
    /// The server's `http://127.0.0.1:PORT`.
    public let baseURL: String

    /// The catalog the deployment sells, on both stores.
    public static let catalog = Catalog([
        CatalogProduct(id: "pro.monthly", store: .appStore, kind: .subscription, entitlements: ["pro"]),
        CatalogProduct(id: "max.monthly", store: .appStore, kind: .subscription, entitlements: ["pro", "max"]),
        CatalogProduct(id: "coins.100", store: .appStore, kind: .consumable, balance: "coins", credits: 100),
        CatalogProduct(id: "premium", store: .googlePlay, kind: .subscription, entitlements: ["pro"]),
        CatalogProduct(id: "premium.max", store: .googlePlay, kind: .subscription, entitlements: ["pro", "max"]),
        CatalogProduct(id: "gems", store: .googlePlay, kind: .consumable, balance: "coins", credits: 10),
        CatalogProduct(id: "lifetime", store: .googlePlay, kind: .nonConsumable, entitlements: ["lifetime"]),
    ])

    /// Starts the simulator and the server, runs `body`, then shuts both down (also when `body` throws).
    public static func withRunning<Result: Sendable>(
        _ options: Options, _ body: (SimulatedDeployment) async throws -> Result
    ) async throws -> Result {
        try FileManager.default.createDirectory(at: options.directory, withIntermediateDirectories: true)
        let simulatorConfiguration = StoreSimulator.Configuration(
            start: options.start, rate: options.rate, directory: options.directory, logger: options.logger,
            appStore: AppStoreSimulation.Configuration(seed: options.simulatorSeed),
            googlePlay: GooglePlaySimulation.Configuration(seed: options.simulatorSeed))
        return try await StoreSimulator.withRunning(configuration: simulatorConfiguration) { simulator, endpoints in
            var configuration = try prepare(simulator, endpoints: endpoints, options: options)
            try options.customize?(simulator, &configuration)
            let storage = try await StorageFactory.open(configuration.storageURL, logger: options.logger)
            do {
                try await storage.migrate()
                let application = try StorekeeperApplication(
                    configuration: configuration, storage: storage, clock: simulator.clock, logger: options.logger)
                let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
                let server = application.makeHTTPServer(onBound: { port in
                    portContinuation.yield(port)
                    portContinuation.finish()
                })
                let group = ServiceGroup(
                    services: application.backgroundServices + [server], gracefulShutdownSignals: [],
                    logger: options.logger)
                let running = Task { try await group.run() }
                var iterator = ports.makeAsyncIterator()
                guard let port = await iterator.next() else {
                    _ = await running.result
                    throw DeploymentError(description: "the server did not start")
                }
                let deployment = SimulatedDeployment(
                    options: options, simulator: simulator, application: application, storage: storage,
                    baseURL: "http://127.0.0.1:\(port)")
                try deployment.connectWebhooks()
                let result: Result
                do {
                    result = try await body(deployment)
                } catch {
                    await group.triggerGracefulShutdown()
                    _ = await running.result
                    throw error
                }
                await group.triggerGracefulShutdown()
                _ = await running.result
                try await storage.close()
                return result
            } catch {
                try? await storage.close()
                throw error
            }
        }
    }

    /// Fills both simulated stores' catalogs, writes the keys the server needs, and returns the
    /// server's configuration.
    static func prepare(
        _ simulator: StoreSimulator, endpoints: StoreSimulator.Endpoints, options: Options
    ) throws -> StorekeeperConfiguration {
        let directory = options.directory
        let apiKeyID = "DEMOKEY001"
        let signingKey = P256.Signing.PrivateKey()
        let keyPath = directory.appendingPathComponent("AuthKey_\(apiKeyID).p8").path
        try signingKey.pemRepresentation.write(toFile: keyPath, atomically: true, encoding: .utf8)
        let appStore = simulator.appStore
        appStore.registerAPIKey(keyId: apiKeyID, publicKey: signingKey.publicKey)
        appStore.addApp(
            SimulatedApp(
                bundleId: bundleID, appAppleId: appAppleID, environment: .sandbox,
                gracePeriodDays: options.appStoreGracePeriodDays))
        try appStore.addProduct(
            .autoRenewable("pro.monthly", bundleId: bundleID, group: "pro", level: 2, period: "P1M", price: 9_990))
        try appStore.addProduct(
            .autoRenewable("max.monthly", bundleId: bundleID, group: "pro", level: 1, period: "P1M", price: 19_990))
        try appStore.addProduct(.oneTime("coins.100", bundleId: bundleID, kind: .consumable, price: 990))

        let play = simulator.googlePlay
        play.addApp(SimulatedPlayApp(packageName: packageName))
        try play.addSubscription(
            SimulatedPlaySubscription(
                packageName: packageName, productId: "premium",
                basePlans: [SimulatedBasePlan(basePlanId: "monthly", billingPeriod: .iso8601("P1M"))]))
        try play.addSubscription(
            SimulatedPlaySubscription(
                packageName: packageName, productId: "premium.max",
                basePlans: [
                    SimulatedBasePlan(
                        basePlanId: "monthly", billingPeriod: .iso8601("P1M"), price: PlayPrice(priceMicros: 9_990_000))
                ]))
        try play.addProduct(SimulatedPlayProduct(packageName: packageName, productId: "gems", maxQuantity: 10))
        try play.addProduct(SimulatedPlayProduct(packageName: packageName, productId: "lifetime", consumable: false))
        let serviceAccount = try simulator.googleIdentity.makeServiceAccount()
        let serviceAccountPath = directory.appendingPathComponent("service-account.json")
        try serviceAccount.jsonKey.write(to: serviceAccountPath)

        return StorekeeperConfiguration(
            server: HTTPSettings(host: "127.0.0.1", port: 0),
            storageURL: options.storageURL ?? directory.appendingPathComponent("storekeeper.sqlite").path,
            policies: options.policies,
            apiKeys: [
                ConfiguredAPIKey(name: "backend", scope: .secret, secret: options.secretAPIKey),
                ConfiguredAPIKey(name: "app", scope: .readOnly, secret: options.readOnlyAPIKey),
            ],
            apps: [
                AppConfiguration(
                    name: "demo",
                    appStore: AppStoreAppConfiguration(
                        bundleID: bundleID, appAppleID: appAppleID, environments: ["Sandbox"], keyID: apiKeyID,
                        issuerID: "57246542-96fe-1a63-e053-0824d011072a", privateKeyPath: keyPath,
                        allowedRootFiles: [endpoints.rootCertificatePath], apiBaseURL: endpoints.baseURL,
                        sandboxAPIBaseURL: endpoints.baseURL),
                    googlePlay: GooglePlayAppConfiguration(
                        packageName: packageName, serviceAccountKeyPath: serviceAccountPath.path,
                        pushAudience: pushAudience, pushServiceAccount: pushAccount, apiBaseURL: endpoints.baseURL,
                        jwksURL: simulator.googleIdentity.jwksURL))
            ],
            catalog: catalog,
            processing: options.processing)
    }

    /// Points both stores' notifications at this server's webhooks.
    func connectWebhooks() throws {
        try simulator.appStore.setNotificationURL(baseURL + "/v1/notifications/app-store", bundleId: Self.bundleID)
        try simulator.googlePlay.setPushSubscription(
            PlayPushSubscription(
                endpoint: baseURL + "/v1/notifications/google-play", audience: Self.pushAudience,
                serviceAccountEmail: Self.pushAccount),
            packageName: Self.packageName)
    }

    // MARK: Driving

    /// Waits until both stores delivered everything due and the server processed its inbox.
    public func settle(timeout: Duration = .seconds(30)) async throws {
        try await simulator.appStore.deliveriesSettled()
        try await simulator.googlePlay.deliveriesSettled()
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while ContinuousClock.now < deadline {
            let counts = try await storage.transaction { try await $0.notificationCounts() }
            if (counts[.pending] ?? 0) == 0 && (counts[.failed] ?? 0) == 0 { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw DeploymentError(description: "the notification inbox did not drain within \(timeout)")
    }

    /// Moves the shared clock; both stores fire what became due, then everything settles.
    public func advance(days: Double) async throws {
        try simulator.appStore.advance(by: days * Self.day)
        simulator.googlePlay.processDueEvents()
        try await settle()
    }
}

/// The simulated deployment could not start or settle.
public struct DeploymentError: Error, CustomStringConvertible {
    public var description: String
}
