public import AppStoreServer
public import Crypto
public import Foundation
import Synchronization

/// The simulated App Store: an in-memory catalog, customers and purchases whose lifecycles run on
/// the simulator clock, producing signed App Store Server Notifications V2 and delivering them to
/// each app's notification URL with Apple's retries (see `docs/simulator.md`).
///
/// Scenario methods (``purchase(customer:product:appAccountToken:offer:ownership:)``,
/// ``setAutoRenew(_:on:)``, ``failBilling(_:)``, ``refund(transactionId:revocationPercentage:reason:)``,
/// …) change state at the simulated now and record the notifications the change causes;
/// ``advance(by:)`` moves the clock and fires what became due (renewals, expiries, grace ends).
/// Delivery runs in the background; ``deliveriesSettled(timeout:)`` waits for it.
public final class AppStoreSimulation: Sendable {
    /// How ids are made and how delivery behaves.
    public struct Configuration: Sendable {
        /// Seeds ids and notification UUIDs: the same seed and scenario give the same ids.
        public var seed: UInt64
        /// Delays between a failed attempt and the next one (Apple: 1, 12, 24, 48 and 72 hours after
        /// the previous attempt).
        public var retryIntervals: [TimeInterval]
        /// How long Apple retries billing before the subscription expires (60 days).
        public var billingRetryDuration: TimeInterval
        /// How long one delivery attempt may take.
        public var deliveryTimeout: Duration
        /// How often the background loop checks for due events and deliveries (real time).
        public var pollInterval: Duration

        /// The defaults mirror Apple's production behaviour.
        public init(
            seed: UInt64 = 1,
            retryIntervals: [TimeInterval] = [1, 12, 24, 48, 72].map { $0 * 3_600 },
            billingRetryDuration: TimeInterval = 60 * 86_400,
            deliveryTimeout: Duration = .seconds(5),
            pollInterval: Duration = .milliseconds(20)
        ) {
            self.seed = seed
            self.retryIntervals = retryIntervals
            self.billingRetryDuration = billingRetryDuration
            self.deliveryTimeout = deliveryTimeout
            self.pollInterval = pollInterval
        }
    }

    /// What a purchase created.
    public struct PurchaseResult: Codable, Sendable, Hashable {
        /// The original transaction id (the subscription's id; the transaction id for one-time products).
        public var originalTransactionId: String
        /// The new transaction's id.
        public var transactionId: String
        /// The purchase's environment (Sandbox or Production).
        public var environment: Environment
    }

    /// A subscription's current state, as the simulator holds it.
    public struct SubscriptionSnapshot: Codable, Sendable, Hashable {
        /// The subscription's id.
        public var originalTransactionId: String
        /// The app's bundle id.
        public var bundleId: String
        /// Sandbox or Production: the environment it was bought in.
        public var environment: Environment
        /// The product of the current period.
        public var productId: String
        /// The product the next renewal bills.
        public var autoRenewProductId: String
        /// Whether it renews.
        public var autoRenew: Bool
        /// Apple's status (1 active … 5 revoked).
        public var status: SubscriptionStatus
        /// End of the current period.
        public var expiresDate: Date
        /// End of the grace period, while in one.
        public var gracePeriodExpiresDate: Date?
        /// Every transaction, oldest first.
        public var transactionIds: [String]
    }

    /// The ways a product change is classified within a subscription group.
    public enum ProductChange: String, Codable, Sendable, Hashable {
        /// To a higher level: immediate.
        case upgrade
        /// To a lower level: at the next renewal.
        case downgrade
        /// To the same level: immediate with the same period, else at the next renewal.
        case crossgrade
        /// Back to the current product, undoing a pending downgrade.
        case downgradeCanceled
    }

    struct State: Sendable {
        var apps: [String: SimulatedApp] = [:]
        var products: [String: SimulatedProduct] = [:]
        var customers: [String: CustomerRecord] = [:]
        var subscriptions: [String: SubscriptionRecord] = [:]
        var transactions: [String: TransactionRecord] = [:]
        var notifications: [NotificationRecord] = []
        /// How many of the first notifications are done with delivery (not pending, none in
        /// flight): the delivery scan starts after them (``settleDeliveredPrefix()``).
        var settledNotifications = 0
        var pendingFaults: [DeliveryFault] = []
        var ids: IdentifierGenerator
        var signer: AppStoreSigner?
        var billingRetryDuration: TimeInterval
        var apiKeys: [String: P256.Signing.PublicKey] = [:]
        var testNotificationTokens: [String: Int] = [:]
        /// Consumption information received, by transaction id.
        var consumption: [String: ConsumptionRequest] = [:]
        /// Every consumption answer received, by transaction id, with the decision it led to.
        var consumptionAnswers: [String: [ReceivedConsumption]] = [:]
        /// Transactions the app finished.
        var finishedTransactionIds: Set<String> = []
        /// Renewal-date extensions done, by "environment/requestIdentifier" (they are idempotent).
        var extensions: [String: ExtendRenewalDateResponse] = [:]
        /// Mass extensions, by "environment/productId/requestIdentifier".
        var massExtensions: [String: MassExtendRenewalDateStatusResponse] = [:]
        /// Per bundle id: the app-specific shared secret verifyReceipt checks.
        var sharedSecrets: [String: String] = [:]
    }

    /// The clock lifecycles run on.
    public let clock: SimulatorClock
    /// The configuration it was made with.
    public let configuration: Configuration
    let state: Mutex<State>
    let background = BackgroundLoop()
    let poster: NotificationPoster

    /// Makes an empty App Store on `clock`; it signs once the simulator has its chain.
    public init(clock: SimulatorClock, configuration: Configuration = Configuration()) {
        self.clock = clock
        self.configuration = configuration
        self.state = Mutex(
            State(
                ids: IdentifierGenerator(seed: configuration.seed),
                billingRetryDuration: configuration.billingRetryDuration))
        self.poster = NotificationPoster(timeout: configuration.deliveryTimeout)
    }

    /// Attaches the signing chain (done by ``StoreSimulator/start()``).
    func attach(signer: AppStoreSigner) {
        state.withLock { $0.signer = signer }
    }

    // MARK: Catalog

    /// Adds or replaces an app.
    public func addApp(_ app: SimulatedApp) {
        state.withLock { $0.apps[app.bundleId] = app }
    }

    /// Changes where an app's notifications of `environment` go (nil: nowhere), as App Store Connect's
    /// Production and Sandbox Server URLs do; `environment` nil changes both. Notifications already
    /// created keep the URL they were made for.
    public func setNotificationURL(
        _ url: String?, bundleId: String, environment: Environment? = nil
    ) throws(AppStoreSimulationError) {
        try state.withLock { (state) throws(AppStoreSimulationError) in
            guard var app = state.apps[bundleId] else { throw .unknownApp(bundleId) }
            switch environment {
            case nil: app.notificationURL = url
            case .production?: app.productionNotificationURL = url
            case .sandbox?: app.sandboxNotificationURL = url
            case let other?: throw .invalid("notification URLs are for Sandbox or Production, not \(other)")
            }
            state.apps[bundleId] = app
        }
    }

    /// Registers an App Store Connect API key: bearer tokens whose `kid` is `keyId` must be signed by
    /// its private key.
    public func registerAPIKey(keyId: String, publicKey: P256.Signing.PublicKey) {
        state.withLock { $0.apiKeys[keyId] = publicKey }
    }

    /// Adds or replaces a product; its app must exist.
    public func addProduct(_ product: SimulatedProduct) throws(AppStoreSimulationError) {
        if product.kind == .autoRenewable {
            guard product.subscriptionGroupIdentifier != nil, product.period.flatMap(SubscriptionPeriod.init) != nil
            else {
                throw .invalid("an auto-renewable product needs a subscription group and an ISO 8601 period")
            }
        }
        try state.withLock { (state) throws(AppStoreSimulationError) in
            guard state.apps[product.bundleId] != nil else { throw .unknownApp(product.bundleId) }
            state.products[product.productId] = product
        }
    }

    /// Registers a customer with the account token the app gives StoreKit (purchases also create them).
    public func addCustomer(_ id: String, appAccountToken: UUID? = nil) {
        state.withLock { state in
            var customer = state.customers[id] ?? CustomerRecord()
            if let appAccountToken { customer.appAccountToken = appAccountToken }
            state.customers[id] = customer
        }
    }

    // MARK: Queries

    /// A subscription's state.
    public func subscription(_ originalTransactionId: String) -> SubscriptionSnapshot? {
        state.withLock { state in
            guard let record = state.subscriptions[originalTransactionId] else { return nil }
            var grace: Date?
            if case .gracePeriod(let expires, _) = record.phase { grace = expires }
            return SubscriptionSnapshot(
                originalTransactionId: record.originalTransactionId, bundleId: record.bundleId,
                environment: record.environment, productId: record.productId,
                autoRenewProductId: record.autoRenewProductId, autoRenew: record.autoRenew,
                status: record.phase.status, expiresDate: record.expiresDate, gracePeriodExpiresDate: grace,
                transactionIds: record.transactionIds)
        }
    }

    /// A transaction as the App Store would sign it now.
    public func transaction(_ transactionId: String) -> JWSTransaction? {
        let now = clock.now()
        return state.withLock { state in
            guard let record = state.transactions[transactionId], let app = state.apps[record.bundleId] else {
                return nil
            }
            return PayloadBuilder.transaction(record, app: app, signedDate: now)
        }
    }

    /// Every notification created so far, oldest first, with its deliveries.
    public var notifications: [SentNotification] {
        state.withLock { $0.notifications.map(\.notification) }
    }

    // MARK: Time

    /// Moves the simulated clock forward and fires every event that became due, in date order.
    public func advance(by seconds: TimeInterval) throws(AppStoreSimulationError) {
        clock.advance(by: seconds)
        try processDueEvents()
    }

    /// Fires every event due at the simulated now (renewals, expiries, grace and retry ends).
    public func processDueEvents() throws(AppStoreSimulationError) {
        let now = clock.now()
        try state.withLock { (state) throws(AppStoreSimulationError) in try state.processDue(now: now) }
    }

    /// Runs `body` on the state after firing due events, at the simulated now.
    func mutate<Result: Sendable>(
        _ body: (inout State, Date) throws(AppStoreSimulationError) -> Result
    ) throws(AppStoreSimulationError) -> Result {
        let now = clock.now()
        return try state.withLock { (state) throws(AppStoreSimulationError) -> Result in
            guard state.signer != nil else { throw .notStarted }
            try state.processDue(now: now)
            return try body(&state, now)
        }
    }
}

/// Why a scenario step was refused.
public enum AppStoreSimulationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The simulator has not started (no signing chain yet).
    case notStarted
    /// No such app.
    case unknownApp(String)
    /// No such product.
    case unknownProduct(String)
    /// No such subscription (original transaction id).
    case unknownSubscription(String)
    /// No such transaction.
    case unknownTransaction(String)
    /// The customer already has an active subscription in the group.
    case alreadySubscribed(originalTransactionId: String)
    /// The step does not apply in the current state.
    case invalid(String)
    /// Signing a payload failed.
    case signing(String)
    /// Deliveries did not settle in time.
    case timeout

    /// A readable explanation.
    public var description: String {
        switch self {
        case .notStarted: "the simulator has not started"
        case .unknownApp(let id): "no app with bundle id \(id)"
        case .unknownProduct(let id): "no product \(id)"
        case .unknownSubscription(let id): "no subscription with original transaction id \(id)"
        case .unknownTransaction(let id): "no transaction \(id)"
        case .alreadySubscribed(let id): "already subscribed in this group (\(id))"
        case .invalid(let reason): reason
        case .signing(let reason): "signing failed: \(reason)"
        case .timeout: "deliveries did not settle in time"
        }
    }

    var isNotFound: Bool {
        switch self {
        case .unknownApp, .unknownProduct, .unknownSubscription, .unknownTransaction: true
        default: false
        }
    }
}
