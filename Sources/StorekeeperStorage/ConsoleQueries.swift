public import Foundation
public import Storekeeper

/// The reads (and the one log) the operators' console needs beyond what processing uses: finding
/// a purchase or billing event by a store id alone, the inbox newest first, the actions operators
/// took, and the overview's counts. Part of every ``StorageTransaction``.
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

    /// Subscriptions that grant access or are in billing retry or on hold now, counted per
    /// store, app, environment and state.
    func subscriptionStateCounts() async throws -> [SubscriptionStateCount]
    /// New subscriptions, renewals, churned subscriptions and refunded billing events (of any
    /// product) per day (UTC) in `range`, per store, app and environment.
    func subscriptionActivity(in range: Range<Date>) async throws -> [SubscriptionActivityCount]
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

/// How many subscriptions of one store, app and environment are in one state.
public struct SubscriptionStateCount: Sendable, Hashable {
    public var store: Store
    public var app: AppID?
    public var environment: PurchaseEnvironment
    public var state: SubscriptionState
    public var count: Int

    public init(store: Store, app: AppID?, environment: PurchaseEnvironment, state: SubscriptionState, count: Int) {
        self.store = store
        self.app = app
        self.environment = environment
        self.state = state
        self.count = count
    }
}

/// What happened to subscriptions on one day.
public struct SubscriptionActivityCount: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// A subscription's first recorded state.
        case new
        /// A billing event after a subscription's first.
        case renewed
        /// A subscription that stopped granting access for good (expired or revoked).
        case churned
        /// A billing event refunded (revoked, fully or in part), of any kind of product.
        case refunded
    }

    public var store: Store
    public var app: AppID?
    public var environment: PurchaseEnvironment
    public var kind: Kind
    /// The day's start (UTC midnight).
    public var day: Date
    public var count: Int

    public init(
        store: Store, app: AppID?, environment: PurchaseEnvironment, kind: Kind, day: Date, count: Int
    ) {
        self.store = store
        self.app = app
        self.environment = environment
        self.kind = kind
        self.day = day
        self.count = count
    }
}
