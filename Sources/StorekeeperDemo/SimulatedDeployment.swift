import Crypto
public import Foundation
public import Logging
import ServiceLifecycle
public import StoreSimulator
public import Storekeeper
public import StorekeeperServer
public import StorekeeperStorage

/// A Storekeeper server on loopback wired to a running store simulator for both stores: one or
/// more apps (by default ``App/main``: `com.example.storekeeper` on the App Store,
/// `com.example.storekeeper.android` on Google Play), each in both environments, with a small
/// catalog, the simulator's keys and roots in the configuration, and both stores' notifications
/// (Production and Sandbox) pointed at the server's webhooks. `storekeeper demo` and the
/// end-to-end tests run on it.
public struct SimulatedDeployment: Sendable {
    public static let bundleID = App.main.bundleID
    public static let appAppleID = App.main.appAppleID
    public static let packageName = App.main.packageName
    public static let pushAudience = "https://storekeeper.example.com/v1/notifications/google-play"
    public static let pushAccount = "pubsub-push@storekeeper-simulator.iam.gserviceaccount.com"
    public static let day: TimeInterval = 86_400

    /// One app of the deployment, on both stores. Its products are the demo catalog's ids with
    /// `productPrefix` in front (the simulator keys products by id across apps).
    public struct App: Sendable, Hashable {
        /// The configuration's name for it.
        public var name: String
        public var bundleID: String
        public var appAppleID: Int64
        public var packageName: String
        public var productPrefix: String

        public init(name: String, bundleID: String, appAppleID: Int64, packageName: String, productPrefix: String) {
            self.name = name
            self.bundleID = bundleID
            self.appAppleID = appAppleID
            self.packageName = packageName
            self.productPrefix = productPrefix
        }

        public static let main = App(
            name: "demo", bundleID: "com.example.storekeeper", appAppleID: 1_234_567_890,
            packageName: "com.example.storekeeper.android", productPrefix: "")
        /// A second app (another product of the same company).
        public static let second = App(
            name: "second", bundleID: "com.example.second", appAppleID: 1_234_567_891,
            packageName: "com.example.second.android", productPrefix: "second.")

        /// This app's id for a demo catalog product (`pro.monthly`, `premium`, …).
        public func product(_ id: String) -> String { productPrefix + id }
    }

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
        /// The apps, each on both stores and in both environments.
        public var apps: [App]
        /// The environment the server serves: `sandbox` (the default here) lets every purchase
        /// grant access; `production` only Production ones (and the apps' switches).
        public var environment: PurchaseEnvironment
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
            simulatorSeed: UInt64 = 1, logger: Logger = Logger(label: "storekeeper.demo"), apps: [App] = [.main],
            environment: PurchaseEnvironment = .sandbox
        ) {
            self.apps = apps
            self.environment = environment
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

    /// The catalog one app sells, on both stores.
    public static func products(of app: App) -> [CatalogProduct] {
        [
            // One subscription group, "pro", on both stores: offers are decided across them.
            CatalogProduct(
                id: app.product("pro.monthly"), store: .appStore, kind: .subscription, entitlements: ["pro"],
                group: "pro", promotionalOffers: ["comeback.3months"]),
            CatalogProduct(
                id: app.product("max.monthly"), store: .appStore, kind: .subscription, entitlements: ["pro", "max"],
                group: "pro"),
            CatalogProduct(
                id: app.product("coins.100"), store: .appStore, kind: .consumable, balance: "coins", credits: 100),
            // A prorated refund takes the unlock back from half of it refunded; a season pass stays.
            CatalogProduct(
                id: app.product("lifetime.unlock"), store: .appStore, kind: .nonConsumable, entitlements: ["lifetime"],
                proratedRefund: .revokeFromPercent(50)),
            CatalogProduct(
                id: app.product("pass.season"), store: .appStore, kind: .nonRenewingSubscription,
                entitlements: ["season"], proratedRefund: .keep),
            CatalogProduct(
                id: app.product("premium"), store: .googlePlay, kind: .subscription, entitlements: ["pro"], group: "pro"
            ),
            CatalogProduct(
                id: app.product("premium.max"), store: .googlePlay, kind: .subscription, entitlements: ["pro", "max"],
                group: "pro"),
            CatalogProduct(
                id: app.product("gems"), store: .googlePlay, kind: .consumable, balance: "coins", credits: 10),
            CatalogProduct(
                id: app.product("lifetime"), store: .googlePlay, kind: .nonConsumable, entitlements: ["lifetime"]),
        ]
    }

    /// How the demo answers refund requests: decline when more than half was consumed, else
    /// prefer a prorated refund.
    public static let refundPolicy = RefundPolicy(
        preference: .byConsumedShare(declineAbovePercent: 50, otherwise: .grantProrated))

    /// The catalog of the main app alone.
    public static let catalog = Catalog(products(of: .main))

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
                try await application.backfillApps()
                let result = try await serve(application, logger: options.logger) { baseURL in
                    let deployment = SimulatedDeployment(
                        options: options, simulator: simulator, application: application, storage: storage,
                        baseURL: baseURL)
                    try deployment.connectWebhooks()
                    return try await body(deployment)
                }
                try await storage.close()
                return result
            } catch {
                try? await storage.close()
                throw error
            }
        }
    }

    /// Runs `application`'s HTTP server on a free loopback port and its background services while
    /// `body` runs with the server's base URL; then shuts them down gracefully.
    static func serve<Result: Sendable>(
        _ application: StorekeeperApplication, logger: Logger, _ body: (String) async throws -> Result
    ) async throws -> Result {
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let server = application.makeHTTPServer(onBound: { port in
            portContinuation.yield(port)
            portContinuation.finish()
        })
        let group = ServiceGroup(
            services: application.backgroundServices + [server], gracefulShutdownSignals: [], logger: logger)
        let running = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            _ = await running.result
            throw DeploymentError(description: "the server did not start")
        }
        let result: Result
        do {
            result = try await body("http://127.0.0.1:\(port)")
        } catch {
            await group.triggerGracefulShutdown()
            _ = await running.result
            throw error
        }
        await group.triggerGracefulShutdown()
        _ = await running.result
        return result
    }

    /// Runs `body` with one more instance of this deployment's server: the same configuration on
    /// its own connection to the same database (so only on PostgreSQL), with its own HTTP port, inbox
    /// worker and background jobs, as a second `storekeeper serve` behind a load balancer would be.
    /// `body` gets its base URL; the stores still deliver to the first instance.
    public func withAnotherInstance<Result: Sendable>(_ body: (String) async throws -> Result) async throws -> Result {
        guard storage.backend == .postgresql else {
            throw DeploymentError(
                description: "several instances share a PostgreSQL database, not \(storage.backend.rawValue)")
        }
        let configuration = application.configuration
        let storage = try await StorageFactory.open(configuration.storageURL, logger: options.logger)
        do {
            let application = try StorekeeperApplication(
                configuration: configuration, storage: storage, clock: simulator.clock, logger: options.logger)
            let result = try await Self.serve(application, logger: options.logger, body)
            try await storage.close()
            return result
        } catch {
            try? await storage.close()
            throw error
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
        simulator.appStore.registerAPIKey(keyId: apiKeyID, publicKey: signingKey.publicKey)
        let serviceAccount = try simulator.googleIdentity.makeServiceAccount()
        let serviceAccountPath = directory.appendingPathComponent("service-account.json")
        try serviceAccount.jsonKey.write(to: serviceAccountPath)
        var apps: [AppConfiguration] = []
        for app in options.apps {
            try addToSimulator(app, simulator, gracePeriodDays: options.appStoreGracePeriodDays)
            var appStore = AppStoreAppConfiguration(
                bundleID: app.bundleID, appAppleID: app.appAppleID, environments: [.production, .sandbox],
                keyID: apiKeyID, issuerID: "57246542-96fe-1a63-e053-0824d011072a", privateKeyPath: keyPath,
                allowedRootFiles: [endpoints.rootCertificatePath], apiBaseURL: endpoints.productionBaseURL,
                sandboxAPIBaseURL: endpoints.sandboxBaseURL)
            appStore.refundPolicy = Self.refundPolicy
            apps.append(
                AppConfiguration(
                    name: app.name,
                    appStore: appStore,
                    googlePlay: GooglePlayAppConfiguration(
                        packageName: app.packageName, serviceAccountKeyPath: serviceAccountPath.path,
                        pushAudience: pushAudience, pushServiceAccount: pushAccount, apiBaseURL: endpoints.baseURL,
                        jwksURL: simulator.googleIdentity.jwksURL)))
        }
        return StorekeeperConfiguration(
            server: HTTPSettings(host: "127.0.0.1", port: 0), environment: options.environment,
            storageURL: options.storageURL ?? directory.appendingPathComponent("storekeeper.sqlite").path,
            policies: options.policies,
            apiKeys: [
                ConfiguredAPIKey(name: "backend", scope: .secret, secret: options.secretAPIKey),
                ConfiguredAPIKey(name: "app", scope: .readOnly, secret: options.readOnlyAPIKey),
            ],
            apps: apps, catalog: Catalog(options.apps.flatMap(products(of:))), processing: options.processing)
    }

    /// The app's products in both simulated stores.
    static func addToSimulator(_ app: App, _ simulator: StoreSimulator, gracePeriodDays: Int?) throws {
        let appStore = simulator.appStore
        appStore.addApp(
            SimulatedApp(
                bundleId: app.bundleID, appAppleId: app.appAppleID, environment: .sandbox,
                gracePeriodDays: gracePeriodDays))
        var proMonthly = SimulatedProduct.autoRenewable(
            app.product("pro.monthly"), bundleId: app.bundleID, group: app.product("pro"), level: 2, period: "P1M",
            price: 9_990)
        // What customers of apps in other storefronts pay, in their currency.
        proMonthly.storefrontPrices = [
            "DEU": StorefrontPrice(price: 9_990, currency: "EUR"),
            "GBR": StorefrontPrice(price: 8_990, currency: "GBP"),
            "JPN": StorefrontPrice(price: 1_500_000, currency: "JPY"),
        ]
        try appStore.addProduct(proMonthly)
        try appStore.addProduct(
            .autoRenewable(
                app.product("max.monthly"), bundleId: app.bundleID, group: app.product("pro"), level: 1, period: "P1M",
                price: 19_990))
        try appStore.addProduct(
            .oneTime(app.product("coins.100"), bundleId: app.bundleID, kind: .consumable, price: 990))
        try appStore.addProduct(
            .oneTime(app.product("lifetime.unlock"), bundleId: app.bundleID, kind: .nonConsumable, price: 29_990))
        try appStore.addProduct(
            .oneTime(app.product("pass.season"), bundleId: app.bundleID, kind: .nonRenewing, price: 14_990))

        let play = simulator.googlePlay
        let package = app.packageName
        play.addApp(SimulatedPlayApp(packageName: package))
        try play.addSubscription(
            SimulatedPlaySubscription(
                packageName: package, productId: app.product("premium"),
                basePlans: [
                    SimulatedBasePlan(basePlanId: "monthly", billingPeriod: .iso8601("P1M")),
                    SimulatedBasePlan(
                        basePlanId: "yearly", billingPeriod: .iso8601("P1Y"), price: PlayPrice(priceMicros: 49_990_000)),
                    // Topped up by the customer instead of renewing.
                    SimulatedBasePlan(basePlanId: "prepaid", billingPeriod: .iso8601("P1M"), autoRenewing: false),
                ]))
        try play.addSubscription(
            SimulatedPlaySubscription(
                packageName: package, productId: app.product("premium.max"),
                basePlans: [
                    SimulatedBasePlan(
                        basePlanId: "monthly", billingPeriod: .iso8601("P1M"), price: PlayPrice(priceMicros: 9_990_000))
                ]))
        try play.addProduct(SimulatedPlayProduct(packageName: package, productId: app.product("gems"), maxQuantity: 10))
        try play.addProduct(
            SimulatedPlayProduct(packageName: package, productId: app.product("lifetime"), consumable: false))
    }

    /// Points both stores' notifications (both App Store environments) of every app at this
    /// server's webhooks.
    func connectWebhooks() throws {
        for app in options.apps {
            try simulator.appStore.setNotificationURL(baseURL + "/v1/notifications/app-store", bundleId: app.bundleID)
            try simulator.googlePlay.setPushSubscription(
                PlayPushSubscription(
                    endpoint: baseURL + "/v1/notifications/google-play", audience: Self.pushAudience,
                    serviceAccountEmail: Self.pushAccount),
                packageName: app.packageName)
        }
    }

    // MARK: Driving

    /// Waits until both stores delivered everything due and the server processed its inbox.
    public func settle(timeout: Duration = .seconds(30)) async throws {
        try await simulator.appStore.deliveriesSettled()
        try await simulator.googlePlay.deliveriesSettled()
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while ContinuousClock.now < deadline {
            let counts = try await storage.read { try await $0.unfinishedNotificationCounts() }
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
