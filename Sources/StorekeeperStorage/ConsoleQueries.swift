public import Foundation
public import Storekeeper

/// The reads (and the one log) the operators' console needs beyond what processing uses: finding
/// a purchase or billing event by a store id alone, the inbox newest first, and the actions
/// operators took. Part of every ``StorageTransaction``.
public protocol ConsoleQueries: Sendable {
    /// Purchases whose store id (App Store originalTransactionId, Google purchase token) is `id`,
    /// in any store; read without locking.
    func purchases(storeID id: String) async throws -> [Purchase]
    /// Billing events whose id (App Store transactionId, Google orderId) is `id`, in any store.
    func transactions(storeID id: String) async throws -> [TransactionRecord]
    /// Stored notifications with `status`, newest first (by arrival, then store and key), after
    /// `last` (the previous page's last one) when given.
    func recentNotifications(status: InboxNotification.Status, after last: InboxPosition?, limit: Int) async throws
        -> [InboxNotification]

    /// Records what an operator did in the console.
    func appendConsoleAction(_ action: ConsoleAction) async throws
    /// The actions recorded about `target` (a purchase key, a notification …), oldest first.
    func consoleActions(target: String) async throws -> [ConsoleAction]
    /// The most recent actions, newest first.
    func recentConsoleActions(limit: Int) async throws -> [ConsoleAction]
    /// A customer's events, newest written first, whether or not the feed has numbered them yet.
    func recentEvents(of customer: CustomerID, limit: Int) async throws -> [StoredEvent]
}

/// Where a page of the inbox ended: a notification's arrival, store and key.
public struct InboxPosition: Sendable, Hashable {
    public var receivedAt: Date
    public var store: Store
    public var dedupeKey: String

    public init(receivedAt: Date, store: Store, dedupeKey: String) {
        self.receivedAt = receivedAt
        self.store = store
        self.dedupeKey = dedupeKey
    }
}

/// One thing an operator did in the console, with who did it and how it ended.
public struct ConsoleAction: Sendable, Hashable {
    /// The operator's name in the configuration.
    public var operatorName: String
    /// What was done (`extend-renewal-date`, `retry-notification`, …).
    public var action: String
    /// What it was done to (`app_store:2000000123`, `google_play/message-7`, …).
    public var target: String
    /// The operator's input (days, reason …).
    public var detail: String
    /// What the store or the server answered.
    public var outcome: String
    public var at: Date

    public init(operatorName: String, action: String, target: String, detail: String, outcome: String, at: Date) {
        self.operatorName = operatorName
        self.action = action
        self.target = target
        self.detail = detail
        self.outcome = outcome
        self.at = at
    }
}

/// The overview's rollup (migration 12): counts per store, app, environment and day, kept by a
/// background job off the processing path, and the subscriptions by state as last recounted.
/// Part of every ``StorageTransaction``.
public protocol OverviewRollupQueries: Sendable {
    /// Folds what was recorded before the rollup existed (state changes, billing events and their
    /// prices, refunds) into it, once, and returns the last event position it covers: the event
    /// fold goes on after it. On PostgreSQL the outbox is locked against new events meanwhile, so
    /// no change is counted both here and from its event.
    func backfillOverviewRollup() async throws -> Int
    /// Holds the rollup for this transaction (PostgreSQL: an advisory lock; SQLite runs one
    /// transaction at a time), so two folds never read the same cursor.
    func lockOverviewRollup() async throws
    /// Adds `deltas` to the rollup's counts and amounts.
    func addOverviewActivity(_ deltas: [OverviewActivity]) async throws
    /// Counts the subscriptions by state (trials apart), as of `day`: it reads every subscription
    /// in a counted state, so run it in ``Storage/readAside(_:)``, where nothing waits for it.
    func countOverviewStates(day: Date) async throws -> [OverviewStateCount]
    /// Keeps `counts` as `day`'s recount, replacing what that day held.
    func replaceOverviewStates(_ counts: [OverviewStateCount], day: Date) async throws
    /// The rollup's rows whose day is in `range`.
    func overviewActivity(in range: Range<Date>) async throws -> [OverviewActivity]
    /// The subscriptions by state as recounted on `day` (none when nothing counted).
    func overviewStates(day: Date) async throws -> [OverviewStateCount]
}

/// Where a rollup row belongs: one store, app (nil: not known) and environment.
public struct OverviewSlice: Sendable, Hashable {
    public var store: Store
    public var app: AppID?
    public var environment: PurchaseEnvironment

    public init(store: Store, app: AppID?, environment: PurchaseEnvironment) {
        self.store = store
        self.app = app
        self.environment = environment
    }
}

/// One row of the daily rollup: how many of `kind` happened on `day` in one slice, and for
/// revenue the amount in `currency`.
public struct OverviewActivity: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// A subscription recorded for the first time.
        case new
        /// A billing event of a subscription after its first.
        case renewed
        /// A subscription that ended (expired, or revoked without a refund).
        case churned
        /// A billing event refunded, in full or in part, of any product.
        case refunded
        /// Billing events with their price (`count` of them, `amountMicros` net of refunds) per
        /// currency; `currency` nil counts billing events whose store reported no price.
        case revenue
    }

    public var slice: OverviewSlice
    /// The day's start (UTC midnight).
    public var day: Date
    public var kind: Kind
    public var currency: CurrencyCode?
    public var count: Int
    public var amountMicros: Int64

    public init(
        slice: OverviewSlice, day: Date, kind: Kind, currency: CurrencyCode? = nil, count: Int,
        amountMicros: Int64 = 0
    ) {
        self.slice = slice
        self.day = day
        self.kind = kind
        self.currency = currency
        self.count = count
        self.amountMicros = amountMicros
    }
}

/// The states the overview counts subscriptions in: those that grant access (a free trial apart
/// from paid ones) and those that may come back.
public enum OverviewState: String, Sendable, Hashable, CaseIterable {
    case active
    /// Active or canceled, in a free trial (its current billing event is a free trial).
    case trial
    case canceled
    case gracePeriod = "grace_period"
    case billingRetry = "billing_retry"
    case paused
}

/// How many subscriptions of one slice were in one state at the last recount.
public struct OverviewStateCount: Sendable, Hashable {
    public var slice: OverviewSlice
    public var state: OverviewState
    public var count: Int
    /// The day of the recount.
    public var day: Date

    public init(slice: OverviewSlice, state: OverviewState, count: Int, day: Date) {
        self.slice = slice
        self.state = state
        self.count = count
        self.day = day
    }
}
