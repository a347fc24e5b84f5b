public import Foundation
public import GooglePlay
import Synchronization

/// The simulated Google Play: an in-memory catalog (apps, subscriptions with base plans, one-time
/// products) and purchases whose lifecycles run on the simulator clock, served through the Android
/// Publisher API at Google's paths, with real-time developer notifications pushed the way Cloud
/// Pub/Sub pushes them (see `docs/simulator.md`).
///
/// Scenario methods (``purchaseSubscription(packageName:productId:basePlanId:options:)``,
/// ``failBilling(_:)``, ``cancelSubscription(_:)``, ``refund(orderId:quantity:revoke:reason:)``, …)
/// change state at the simulated now and record the notifications the change causes;
/// ``advance(by:)`` moves the clock and fires what became due (renewals, grace and hold ends,
/// expiries, refunds of purchases not acknowledged in time). Pushes run in the background;
/// ``deliveriesSettled(timeout:)`` waits for them.
public final class GooglePlaySimulation: Sendable {
    /// How ids are made, how long Google keeps things and how Pub/Sub redelivers.
    public struct Configuration: Sendable {
        /// Seeds order ids, purchase tokens and message ids: the same seed and scenario give the same ids.
        public var seed: UInt64
        /// How long after a purchase (its completion, for a pending one) it must be acknowledged
        /// before Google refunds and revokes it (3 days).
        public var acknowledgementWindow: TimeInterval
        /// How long after it ended a subscription purchase can still be queried; older ones answer 410.
        public var expiredPurchaseRetention: TimeInterval
        /// Pub/Sub's exponential backoff between redeliveries: the first delay.
        public var minimumBackoff: TimeInterval
        /// Pub/Sub's exponential backoff: the longest delay.
        public var maximumBackoff: TimeInterval
        /// Attempts after which a message is given up (a dead-letter policy); nil: until retention ends.
        public var maxDeliveryAttempts: Int?
        /// How long an unacknowledged message is redelivered (Pub/Sub's message retention, 7 days).
        public var messageRetention: TimeInterval
        /// How long one push may take.
        public var deliveryTimeout: Duration
        /// How often the background loop checks for due events and pushes (real time).
        public var pollInterval: Duration
        /// Seeds the choice among a push subscription's several endpoints.
        public var deliverySeed: UInt64
        /// How long (simulated time) an endpoint that did not answer is passed over while another
        /// endpoint of the subscription may answer, as a load balancer takes out a dead instance.
        public var unansweredEndpointHold: TimeInterval

        /// The defaults mirror Google's behaviour.
        public init(
            seed: UInt64 = 1, acknowledgementWindow: TimeInterval = 3 * 86_400,
            expiredPurchaseRetention: TimeInterval = 60 * 86_400, minimumBackoff: TimeInterval = 10,
            maximumBackoff: TimeInterval = 600, maxDeliveryAttempts: Int? = nil,
            messageRetention: TimeInterval = 7 * 86_400, deliveryTimeout: Duration = .seconds(5),
            pollInterval: Duration = .milliseconds(20), deliverySeed: UInt64 = 1,
            unansweredEndpointHold: TimeInterval = 60
        ) {
            self.deliverySeed = deliverySeed
            self.unansweredEndpointHold = unansweredEndpointHold
            self.seed = seed
            self.acknowledgementWindow = acknowledgementWindow
            self.expiredPurchaseRetention = expiredPurchaseRetention
            self.minimumBackoff = minimumBackoff
            self.maximumBackoff = maximumBackoff
            self.maxDeliveryAttempts = maxDeliveryAttempts
            self.messageRetention = messageRetention
            self.deliveryTimeout = deliveryTimeout
            self.pollInterval = pollInterval
        }
    }

    /// A subscription purchase's current state, as the simulator holds it.
    public struct SubscriptionSnapshot: Codable, Sendable, Hashable {
        /// The purchase token.
        public var purchaseToken: String
        /// The app's package name.
        public var packageName: String
        /// The product id.
        public var productId: String
        /// A license tester's purchase (Google's test environment: `testPurchase` in subscriptionsv2).
        public var testPurchase: Bool
        /// The base plan id.
        public var basePlanId: String
        /// Google's state (`SUBSCRIPTION_STATE_ACTIVE`, …).
        public var subscriptionState: String
        /// Whether it renews.
        public var autoRenewEnabled: Bool
        /// End of the paid period (of the grace period while in one).
        public var expiryTime: Date
        /// Whether it was acknowledged.
        public var acknowledged: Bool
        /// Every order id, oldest first.
        public var orderIds: [String]
        /// The purchase it replaced.
        public var linkedPurchaseToken: String?
        /// The purchase that replaced it.
        public var replacedBy: String?
    }

    /// One Android Publisher API request that reached the simulator.
    public struct APIRequest: Sendable, Hashable {
        /// `GET`, `POST`.
        public var method: String
        /// The request path.
        public var path: String
        /// The quota bucket it counts against (`purchases.subscriptionsv2`, `purchases.voidedpurchases`, …).
        public var bucket: String
        /// The status answered (a fault's status when one was injected).
        public var status: Int
        /// When it arrived, on the real monotonic clock.
        public var arrival: ContinuousClock.Instant
        /// When it arrived, on the simulated clock.
        public var simulatedDate: Date
        /// The `User-Agent` it came with (a Storekeeper instance names itself, and the job calling).
        public var userAgent: String?
    }

    struct State: Sendable {
        var apps: [String: SimulatedPlayApp] = [:]
        /// Subscription products by "packageName/productId".
        var subscriptionProducts: [String: SimulatedPlaySubscription] = [:]
        /// One-time products by "packageName/productId".
        var products: [String: SimulatedPlayProduct] = [:]
        var subscriptions: [String: PlaySubscriptionRecord] = [:]
        var productPurchases: [String: PlayProductRecord] = [:]
        var orders: [String: PlayOrderRecord] = [:]
        var voided: [PlayVoidedRecord] = []
        var pushes: [PlayPushRecord] = []
        var pendingFaults: [PlayPushFault] = []
        var apiRequests: [APIRequest] = []
        var ids: PlayIdentifiers
        var acknowledgementWindow: TimeInterval
        /// Chooses among a push subscription's endpoints.
        var endpointChoice: SeededRandom
        /// When each endpoint last failed to answer (cleared when it answers).
        var unansweredEndpoints: [String: Date] = [:]
    }

    /// The clock lifecycles run on.
    public let clock: SimulatorClock
    /// Google's identity services (push tokens are minted there).
    public let identity: GooglePlayIdentity
    /// The configuration it was made with.
    public let configuration: Configuration
    let state: Mutex<State>
    let background = BackgroundLoop()
    let poster: PlayPushPoster

    /// Makes an empty Google Play on `clock`, pushing with tokens from `identity`.
    public init(clock: SimulatorClock, identity: GooglePlayIdentity, configuration: Configuration = Configuration()) {
        self.clock = clock
        self.identity = identity
        self.configuration = configuration
        self.state = Mutex(
            State(
                ids: PlayIdentifiers(seed: configuration.seed),
                acknowledgementWindow: configuration.acknowledgementWindow,
                endpointChoice: SeededRandom(state: configuration.deliverySeed)))
        self.poster = PlayPushPoster(timeout: configuration.deliveryTimeout)
    }

    // MARK: Catalog

    /// Adds or replaces an app.
    public func addApp(_ app: SimulatedPlayApp) {
        state.withLock { $0.apps[app.packageName] = app }
    }

    /// Changes where an app's notifications are pushed (nil: nowhere).
    public func setPushSubscription(_ push: PlayPushSubscription?, packageName: String)
        throws(GooglePlaySimulationError)
    {
        try state.withLock { (state) throws(GooglePlaySimulationError) in
            guard state.apps[packageName] != nil else { throw .unknownApp(packageName) }
            state.apps[packageName]?.push = push
        }
    }

    /// Adds or replaces a subscription product; its app must exist.
    public func addSubscription(_ subscription: SimulatedPlaySubscription) throws(GooglePlaySimulationError) {
        guard !subscription.basePlans.isEmpty, subscription.basePlans.allSatisfy({ $0.billingPeriod.isValid }) else {
            throw .invalid("a subscription needs base plans with valid billing periods")
        }
        try state.withLock { (state) throws(GooglePlaySimulationError) in
            guard state.apps[subscription.packageName] != nil else { throw .unknownApp(subscription.packageName) }
            state.subscriptionProducts[subscription.packageName + "/" + subscription.productId] = subscription
        }
    }

    /// Adds or replaces a one-time product; its app must exist.
    public func addProduct(_ product: SimulatedPlayProduct) throws(GooglePlaySimulationError) {
        guard product.maxQuantity >= 1 else { throw .invalid("maxQuantity must be at least 1") }
        try state.withLock { (state) throws(GooglePlaySimulationError) in
            guard state.apps[product.packageName] != nil else { throw .unknownApp(product.packageName) }
            state.products[product.packageName + "/" + product.productId] = product
        }
    }

    // MARK: Queries

    /// A subscription purchase's state.
    public func subscription(_ purchaseToken: String) -> SubscriptionSnapshot? {
        state.withLock { state in
            guard let record = state.subscriptions[purchaseToken] else { return nil }
            return SubscriptionSnapshot(
                purchaseToken: record.purchaseToken, packageName: record.packageName, productId: record.productId,
                testPurchase: record.options.testPurchase, basePlanId: record.basePlanId,
                subscriptionState: record.subscriptionState.rawValue, autoRenewEnabled: record.autoRenew,
                expiryTime: PlayAnswers.reportedExpiry(record), acknowledged: record.acknowledged,
                orderIds: record.orderIds, linkedPurchaseToken: record.linkedPurchaseToken,
                replacedBy: record.replacedBy)
        }
    }

    /// The subscription purchase as `purchases.subscriptionsv2.get` answers it now.
    public func subscriptionPurchase(_ purchaseToken: String) -> SubscriptionPurchaseV2? {
        let now = clock.now()
        return state.withLock { state in
            guard let record = state.subscriptions[purchaseToken] else { return nil }
            return PlayAnswers.subscriptionV2(record, app: state.apps[record.packageName], now: now)
        }
    }

    /// The one-time purchase as `purchases.products.get` answers it now.
    public func productPurchase(_ purchaseToken: String) -> ProductPurchase? {
        state.withLock { state in
            guard let record = state.productPurchases[purchaseToken] else { return nil }
            return PlayAnswers.productV1(record, app: state.apps[record.packageName])
        }
    }

    /// The voided purchases list, oldest first (every type, partial refunds included).
    public var voidedPurchases: [VoidedPurchase] {
        state.withLock { $0.voided.map(PlayAnswers.voided) }
    }

    /// Every RTDN message created so far, oldest first, with its deliveries.
    public var pushes: [PlayPushMessage] {
        state.withLock { $0.pushes.map(\.message) }
    }

    /// Every Android Publisher API request that reached the simulator, in arrival order.
    public var apiRequests: [APIRequest] {
        state.withLock { $0.apiRequests }
    }

    // MARK: Time

    /// Moves the shared simulated clock forward and fires every event that became due, in date order.
    public func advance(by seconds: TimeInterval) {
        clock.advance(by: seconds)
        processDueEvents()
    }

    /// Fires every event due at the simulated now (renewals, grace and hold ends, expiries, refunds
    /// of unacknowledged purchases).
    public func processDueEvents() {
        let now = clock.now()
        state.withLock { $0.processDue(now: now) }
    }

    /// Runs `body` on the state after firing due events, at the simulated now.
    func mutate<Result: Sendable>(
        _ body: (inout State, Date) throws(GooglePlaySimulationError) -> Result
    ) throws(GooglePlaySimulationError) -> Result {
        let now = clock.now()
        return try state.withLock { (state) throws(GooglePlaySimulationError) -> Result in
            state.processDue(now: now)
            return try body(&state, now)
        }
    }
}

/// Why a Google Play scenario step was refused.
public enum GooglePlaySimulationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// No such app.
    case unknownApp(String)
    /// No such product (or base plan).
    case unknownProduct(String)
    /// No such purchase token.
    case unknownPurchase(String)
    /// No such order.
    case unknownOrder(String)
    /// The step does not apply in the current state.
    case invalid(String)
    /// Pushes did not settle in time.
    case timeout
    /// The background loop is stopping.
    case stopped

    /// A readable explanation (tokens are shortened).
    public var description: String {
        switch self {
        case .unknownApp(let name): "no app with package name \(name)"
        case .unknownProduct(let id): "no product \(id)"
        case .unknownPurchase(let token): "no purchase with token \(token.prefix(24))…"
        case .unknownOrder(let id): "no order \(id)"
        case .invalid(let reason): reason
        case .timeout: "pushes did not settle in time"
        case .stopped: "the simulator is stopping"
        }
    }

    var isNotFound: Bool {
        switch self {
        case .unknownApp, .unknownProduct, .unknownPurchase, .unknownOrder: true
        default: false
        }
    }
}
