public import AsyncHTTPClient
public import Foundation
public import Hummingbird
public import Logging
public import ServiceLifecycle
public import StoreCore
import Storekeeper
public import StorekeeperStorage

/// A whole Storekeeper server built from its configuration: the HTTP API, the notification inbox
/// and the worker that processes it. Run ``makeHTTPServer(host:port:onBound:)`` and
/// ``backgroundServices`` in one `ServiceGroup`.
public final class StorekeeperApplication: Sendable {
    public let configuration: StorekeeperConfiguration
    public let storage: any Storage
    public let customers: CustomerService
    public let inbox: NotificationInbox
    let metrics: ServerMetrics
    let worker: NotificationWorker
    let sweeper: AcknowledgementSweeper
    let catchUp: CatchUpService
    /// Catches up on what the stores failed to deliver (run by ``backgroundServices``; callable
    /// directly, e.g. by tests on a simulated clock).
    public let recovery: MissedNotificationRecovery
    let logger: Logger

    public init(
        configuration: StorekeeperConfiguration, storage: any Storage, clock: any WallClock = SystemWallClock(),
        httpClient: HTTPClient = .shared, logger: Logger = Logger(label: "storekeeper")
    ) throws {
        self.configuration = configuration
        self.storage = storage
        self.logger = logger
        let metrics = ServerMetrics()
        self.metrics = metrics
        let appStore = try AppStoreApps(configuration: configuration, clock: clock, httpClient: httpClient)
        let recorder = PurchaseRecorder(catalog: configuration.catalog)
        let googlePlay = GooglePlayPurchases(
            apps: try GooglePlayApps(
                configuration: configuration, clock: clock, httpClient: httpClient, logger: logger),
            catalog: configuration.catalog, storage: storage, clock: clock, logger: logger)
        customers = CustomerService(
            storage: storage, recorder: recorder, policies: configuration.policies, appStore: appStore,
            googlePlay: googlePlay, clock: clock, logger: logger
        )
        let inbox = NotificationInbox(
            storage: storage, recorder: recorder, appStore: appStore, googlePlay: googlePlay,
            settings: configuration.processing,
            clock: clock, logger: logger,
            onProcessed: { store, succeeded in
                metrics.notificationProcessed(store: store.rawValue, result: succeeded ? "processed" : "failed")
            }
        )
        self.inbox = inbox
        worker = NotificationWorker(inbox: inbox, interval: configuration.processing.pollInterval, logger: logger)
        sweeper = AcknowledgementSweeper(
            purchases: googlePlay, interval: configuration.processing.acknowledgementSweepInterval, logger: logger)
        let recovery = MissedNotificationRecovery(inbox: inbox, settings: configuration.processing.catchUp)
        self.recovery = recovery
        // What the catch-up stores it processes itself; the worker's poll retries any failure.
        catchUp = CatchUpService(recovery: recovery, logger: logger) { report in metrics.caughtUp(report) }
    }

    /// The HTTP routes (also usable with Hummingbird's testing client).
    public func makeRouter() -> Router<BasicRequestContext> {
        let metrics = self.metrics
        let router = Router()
        router.add(middleware: ErrorMappingMiddleware(metrics: metrics))
        let storage = self.storage
        HealthRoutes(storage: storage, metrics: metrics) {
            let counts = try await storage.transaction { try await $0.notificationCounts() }
            for status in InboxNotification.Status.allCases {
                metrics.inbox(status: status.rawValue, count: counts[status] ?? 0)
            }
        }.register(on: router)
        let v1 = router.group("v1")
        let worker = self.worker
        NotificationRoutes(inbox: inbox, metrics: metrics, wake: { worker.wake() }).register(on: v1)
        let authenticated = v1.group().add(middleware: APIKeyMiddleware(keys: configuration.apiKeys))
        CustomerRoutes(service: customers).register(on: authenticated)
        InboxRoutes(storage: storage).register(on: authenticated)
        return router
    }

    /// The HTTP server on `host:port` (port 0 picks a free one; `onBound` gets it).
    public func makeHTTPServer(
        host: String? = nil, port: Int? = nil, onBound: (@Sendable (Int) async -> Void)? = nil
    ) -> some Service {
        Application(
            router: makeRouter(),
            configuration: .init(
                address: .hostname(host ?? configuration.server.host, port: port ?? configuration.server.port),
                serverName: "storekeeper"
            ),
            onServerRunning: { channel in await onBound?(channel.localAddress?.port ?? 0) },
            logger: logger
        )
    }

    /// The background work: processing stored notifications, retrying Google Play
    /// acknowledgements that failed, and catching up on missed notifications.
    public var backgroundServices: [any Service] { [worker, sweeper, catchUp] }
}
