public import AsyncHTTPClient
import Foundation
public import Hummingbird
public import Logging
public import ServiceLifecycle
public import StoreCore
public import Storekeeper
public import StorekeeperStorage

/// A whole Storekeeper server built from its configuration: the HTTP API, the notification inbox
/// and the worker that processes it. Run ``makeHTTPServer(host:port:onBound:)`` and
/// ``backgroundServices`` in one `ServiceGroup`.
public final class StorekeeperApplication: Sendable {
    public let configuration: StorekeeperConfiguration
    public let storage: any Storage
    /// One adapter per store; nothing else knows a store.
    public let stores: StoreAdapters
    public let customers: CustomerService
    /// Signs offers and requests for StoreKit with each App Store app's key.
    public let offers: OfferSigningService
    /// Links customers to their App Store app transactions.
    public let appTransactions: AppTransactionService
    public let inbox: NotificationInbox
    /// Settles purchases with their stores; its sweep retries what a store still waits for.
    public let settler: PurchaseSettler
    let metrics: ServerMetrics
    let worker: NotificationWorker

    /// Has the inbox's processing look for due notifications now, as every stored webhook does,
    /// rather than at its next poll: for notifications stored by other means (the ingest
    /// benchmark's `--backlog`, stored in one transaction, waited up to the poll interval).
    public func wakeProcessing() { worker.wake() }
    let sweeper: PeriodicService
    let catchUp: PeriodicService
    let refundAnswering: PeriodicService
    /// Runs ``rollup`` (only with the console enabled).
    let overviewRollup: PeriodicService
    /// Keeps the console overview's rollup (run by ``backgroundServices``; ``OverviewRollup/run(recount:)``
    /// is callable directly, e.g. by tests and the demo on a simulated clock).
    public let rollup: OverviewRollup
    /// Answers refund consumption requests (run by ``backgroundServices``; callable directly, e.g.
    /// by tests and the demo on a simulated clock).
    public let refundAnswers: RefundRequestAnswerer
    let webhookDelivery: WebhookDeliveryService
    /// Delivers events to the configured webhook endpoints (run by ``backgroundServices``;
    /// ``WebhookDispatcher/run()`` is callable directly, e.g. by tests on a simulated clock).
    public let webhooks: WebhookDispatcher
    /// Webhook endpoints created, changed and deleted through the API.
    public let webhookEndpoints: WebhookEndpointService
    /// Deletes events and delivery attempts past their retention (run by ``backgroundServices``;
    /// callable directly, e.g. by tests on a simulated clock).
    public let pruner: EventPruner
    let pruning: PeriodicService
    /// Catches up on what the stores failed to deliver (run by ``backgroundServices``; callable
    /// directly, e.g. by tests on a simulated clock).
    public let recovery: MissedNotificationRecovery
    /// This instance's name among those sharing the database (``HTTPSettings/instance``).
    public let instance: String
    let logger: Logger
    /// The operators' console, when operators are configured.
    let console: Console?

    public init(
        configuration: StorekeeperConfiguration, storage: any Storage, clock: any WallClock = SystemWallClock(),
        httpClient: HTTPClient = .shared, logger: Logger = Logger(label: "storekeeper"),
        quotaClock: any WallClock = SystemWallClock()
    ) throws {
        self.configuration = configuration
        self.storage = storage
        self.logger = logger
        let metrics = ServerMetrics()
        self.metrics = metrics
        let catalog = configuration.catalog
        let instance = configuration.server.instance ?? UUID().uuidString
        self.instance = instance
        // Store quotas are counted in PostgreSQL, where several instances may share the database and
        // must keep within them together; a SQLite database has one process, which counts alone.
        let quotas: StoreQuotas =
            storage.backend == .postgresql ? .shared(storage: storage, clock: quotaClock) : .inProcess
        let appStoreApps = try AppStoreApps(
            configuration: configuration, clock: clock, httpClient: httpClient, quotas: quotas)
        offers = try OfferSigningService(
            storage: storage, apps: appStoreApps, catalog: catalog, policies: configuration.policies, clock: clock)
        let stores = StoreAdapters([
            AppStoreAdapter(
                apps: appStoreApps, catalog: catalog, policies: configuration.policies, clock: clock, logger: logger),
            GooglePlayAdapter(
                apps: try GooglePlayApps(
                    configuration: configuration, clock: clock, httpClient: httpClient, logger: logger,
                    quotas: quotas, userAgent: "storekeeper (instance \(instance))"),
                catalog: catalog, storage: storage, clock: clock, logger: logger),
        ])
        self.stores = stores
        let recorder = PurchaseRecorder(catalog: catalog, access: configuration.access, clock: clock)
        appTransactions = AppTransactionService(
            storage: storage, apps: appStoreApps, recorder: recorder, policies: configuration.policies, clock: clock)
        let settler = PurchaseSettler(stores: stores, storage: storage, recorder: recorder, logger: logger)
        self.settler = settler
        let customers = CustomerService(
            storage: storage, recorder: recorder, policies: configuration.policies, stores: stores, settler: settler,
            clock: clock, logger: logger)
        self.customers = customers
        let ingestActivity = IngestActivity()
        let inbox = NotificationInbox(
            storage: storage, recorder: recorder, stores: stores, settler: settler, settings: configuration.processing,
            clock: clock, logger: logger, activity: ingestActivity,
            onProcessed: { store, outcome in metrics.notificationProcessed(store: store, result: outcome) },
            onBatchSplit: { metrics.processingBatchSplit() }
        )
        self.inbox = inbox
        let worker = NotificationWorker(inbox: inbox, interval: configuration.processing.pollInterval, logger: logger)
        self.worker = worker
        // Background jobs run on one instance at a time among those sharing the database: the one
        // holding the job's lease, renewed every third of it (during long rounds too) and taken over
        // once a dead holder's runs out.
        let jobLease = configuration.processing.jobLease
        func lease(_ name: String, every interval: TimeInterval) -> JobLease {
            JobLease(
                name: name, holder: instance, duration: jobLease ?? (2 * interval + 60), storage: storage, clock: clock)
        }
        let sweepInterval = configuration.processing.acknowledgementSweepInterval
        sweeper = PeriodicService(
            "acknowledgement sweep", every: sweepInterval, lease: lease("acknowledgement-sweep", every: sweepInterval),
            logger: logger
        ) {
            let tried = try await settler.sweepUnacknowledged()
            if tried > 0 { logger.info("retried store acknowledgements", metadata: ["count": "\(tried)"]) }
        }
        var refundPolicies: [AppID: RefundPolicy] = [:]
        for app in configuration.apps {
            if let appStore = app.appStore { refundPolicies[AppID(appStore.bundleID)] = appStore.refundPolicy }
        }
        let refundAnswers = RefundRequestAnswerer(
            storage: storage, stores: stores, catalog: catalog, access: configuration.access,
            policies: refundPolicies, settings: configuration.processing.refundAnswers, events: recorder.events,
            clock: clock, logger: logger,
            onSettled: { metrics.refundRequestSettled($0) })
        self.refundAnswers = refundAnswers
        let refundInterval = configuration.processing.refundAnswers.interval
        refundAnswering = PeriodicService(
            "refund answers", every: refundInterval, lease: lease("refund-answers", every: refundInterval),
            logger: logger
        ) {
            while try await refundAnswers.answerDue() > 0 {}
        }
        console =
            configuration.console.isEnabled
            ? Console(
                settings: configuration.console, storage: storage, customers: customers, stores: stores,
                recorder: recorder, clock: clock, logger: logger, wake: { worker.wake() })
            : nil
        let rollup = OverviewRollup(storage: storage, catalog: catalog, clock: clock)
        self.rollup = rollup
        let rollupInterval = OverviewRollup.interval
        overviewRollup = PeriodicService(
            "overview rollup", every: rollupInterval, enabled: configuration.console.isEnabled,
            lease: lease("overview-rollup", every: rollupInterval), logger: logger
        ) {
            try await rollup.run()
        }
        let webhooks = WebhookDispatcher(
            settings: configuration.webhooks, storage: storage, clock: clock, logger: logger, metrics: metrics,
            ingest: ingestActivity)
        self.webhooks = webhooks
        let deliveryInterval = configuration.webhooks.pollInterval
        // Always on: endpoints created through the API appear while running (a round without any
        // endpoint only reads that there is none).
        let deliveryJob = PeriodicService(
            "webhook delivery", every: deliveryInterval, enabled: true,
            lease: lease("webhook-delivery", every: deliveryInterval), logger: logger
        ) {
            try await webhooks.run()
        } heldElsewhere: {
            metrics.webhookDeliveryHeldElsewhere()
            try await webhooks.dropMetricsOfDeletedEndpoints()
        }
        webhookDelivery = WebhookDeliveryService(job: deliveryJob, dispatcher: webhooks)
        webhookEndpoints = WebhookEndpointService(configured: configuration.webhooks, storage: storage, clock: clock)
        let pruner = EventPruner(
            settings: configuration.retention, webhooks: configuration.webhooks, storage: storage, clock: clock,
            logger: logger, metrics: metrics)
        self.pruner = pruner
        let pruneInterval = configuration.retention.interval
        pruning = PeriodicService(
            "event pruning", every: pruneInterval, enabled: configuration.retention.prunes,
            lease: lease("event-pruning", every: pruneInterval), logger: logger
        ) {
            try await pruner.run()
        }
        let recovery = MissedNotificationRecovery(inbox: inbox, settings: configuration.processing.catchUp)
        self.recovery = recovery
        // What the catch-up stores it processes itself; the worker's poll retries any failure.
        catchUp = PeriodicService(
            "catch-up", every: recovery.settings.interval, enabled: recovery.settings.enabled,
            lease: lease("catch-up", every: recovery.settings.interval), logger: logger
        ) {
            let report = await recovery.run()
            metrics.caughtUp(report)
            let found: [String] = report.counts.map { kind, count in "\(kind.rawValue)=\(count)" }
            logger.debug("catch-up ran", metadata: ["found": .string(found.sorted().joined(separator: " "))])
        } heldElsewhere: {
            metrics.catchUpHeldElsewhere()
        }
    }

    /// Records, on purchases stored before apps were recorded, the app of each store that has
    /// exactly one configured app (which alone could have accepted them), and says how many of
    /// the rest stay unknown until their next notification or submission. Run at start-up and by
    /// `storekeeper migrate`.
    @discardableResult
    public func backfillApps() async throws -> [Store: Int] {
        let ids: [Store: [AppID]] = [
            .appStore: configuration.apps.compactMap { $0.appStore.map { AppID($0.bundleID) } },
            .googlePlay: configuration.apps.compactMap { $0.googlePlay.map { AppID($0.packageName) } },
        ]
        let unknown = try await storage.transaction { transaction in
            for (store, apps) in ids where apps.count == 1 {
                _ = try await transaction.assignApp(apps[0], toPurchasesOf: store)
            }
            return try await transaction.purchasesWithoutApp()
        }
        for (store, count) in unknown.sorted(by: { $0.key.rawValue < $1.key.rawValue }) where count > 0 {
            logger.warning(
                """
                purchases stored before apps were recorded whose app is not known: this store has several \
                configured apps, or none; each is recorded with its next notification or submission, and store \
                calls for it are refused until then
                """,
                metadata: ["store": "\(store.rawValue)", "count": "\(count)"])
        }
        return unknown
    }

    /// The HTTP routes (also usable with Hummingbird's testing client).
    public func makeRouter() -> Router<BasicRequestContext> {
        let metrics = self.metrics
        let router = Router()
        router.add(middleware: ErrorMappingMiddleware(metrics: metrics))
        let storage = self.storage
        HealthRoutes(storage: storage, metrics: metrics) {
            // Unfinished ones only: counting every notification ever received grew with the inbox
            // (132 ms a scrape at a million); processed ones are counted by
            // storekeeper_notifications_processed_total.
            let counts = try await storage.read { try await $0.unfinishedNotificationCounts() }
            for (status, count) in counts { metrics.inbox(status: status, count: count) }
            if let postgres = storage as? PostgresStorage { metrics.transactionsRerun(postgres.transactionsRerun) }
        }.register(on: router)
        let v1 = router.group("v1")
        let worker = self.worker
        NotificationRoutes(inbox: inbox, metrics: metrics, wake: { worker.wake() }).register(on: v1)
        let authenticated = v1.group().add(middleware: APIKeyMiddleware(keys: configuration.apiKeys))
        CustomerRoutes(service: customers).register(on: authenticated)
        RefundRoutes(service: customers).register(on: authenticated)
        SignatureRoutes(service: offers).register(on: authenticated)
        AppTransactionRoutes(service: appTransactions).register(on: authenticated)
        InboxRoutes(storage: storage).register(on: authenticated)
        console?.register(on: router)
        let eventRoutes = EventRoutes(storage: storage, dispatcher: webhooks)
        eventRoutes.register(on: authenticated)
        WebhookEndpointRoutes(service: webhookEndpoints, events: eventRoutes).register(on: authenticated)
        return router
    }

    /// The HTTP server on `host:port` (port 0 picks a free one; `onBound` gets it).
    public func makeHTTPServer(
        host: String? = nil, port: Int? = nil, onBound: (@Sendable (Int) async -> Void)? = nil
    ) -> some Service {
        Application(
            router: makeRouter(),
            server: .http1OnConnectionEventLoops(),
            configuration: .init(
                address: .hostname(host ?? configuration.server.host, port: port ?? configuration.server.port),
                serverName: "storekeeper"
            ),
            onServerRunning: { channel in await onBound?(channel.localAddress?.port ?? 0) },
            logger: logger
        )
    }

    /// The background work: processing stored notifications, retrying Google Play
    /// acknowledgements that failed, catching up on missed notifications, answering refund
    /// consumption requests, delivering events to the webhook endpoints, pruning events and
    /// delivery attempts past their retention, and keeping the console overview's rollup.
    public var backgroundServices: [any Service] {
        [worker, sweeper, catchUp, refundAnswering, webhookDelivery, pruning, overviewRollup]
    }

}

/// The webhook delivery job, which closes the dispatcher's HTTP client when it ends.
struct WebhookDeliveryService: Service {
    let job: PeriodicService
    let dispatcher: WebhookDispatcher

    func run() async throws {
        do {
            try await job.run()
        } catch {
            try? await dispatcher.shutdown()
            throw error
        }
        try await dispatcher.shutdown()
    }
}
