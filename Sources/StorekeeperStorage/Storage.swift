public import Foundation
public import Storekeeper

/// Where Storekeeper keeps everything: one protocol, with an embedded SQLite backend (the default)
/// and a PostgreSQL backend for several instances sharing one database.
///
/// All reads and writes happen inside ``transaction(_:)``: processing one notification, one
/// submission or one debit is one transaction, so a crash leaves either all of it or none.
public protocol Storage: Sendable {
    /// Which database this storage keeps its data in.
    var backend: StorageBackend { get }

    /// Brings the schema up to date; returns the versions it applied (none when current). Safe to
    /// call from several instances at once.
    @discardableResult
    func migrate() async throws -> [Int]

    /// The schema version now in place (0 for an empty database).
    func schemaVersion() async throws -> Int

    /// Runs `body` in one database transaction: committed if it returns, rolled back if it throws.
    /// On PostgreSQL, a serialization conflict is retried (the body must tolerate reruns).
    /// `durability` says whether the commit waits for the disk (see ``CommitDurability``).
    func transaction<Result: Sendable>(
        durability: CommitDurability,
        _ body: @Sendable (any StorageTransaction) async throws -> Result
    ) async throws -> Result

    /// Runs `body`, which must only read, on committed data and without waiting behind writes:
    /// on SQLite on a reader connection of its own (a snapshot of the last commit; a write there
    /// fails), on PostgreSQL without BEGIN and COMMIT (two round trips fewer; each statement sees
    /// what was committed when it started). For views answered to clients.
    func read<Result: Sendable>(
        _ body: @Sendable (any StorageTransaction) async throws -> Result
    ) async throws -> Result

    /// Runs `body`, which must only read, where a long read holds up neither writes nor the
    /// clients' reads: on SQLite a reader connection opened for it (``read(_:)``'s one serves the
    /// customer views), on PostgreSQL as ``read(_:)``. For a background job that scans, such as the
    /// overview's recount of states.
    func readAside<Result: Sendable>(
        _ body: @Sendable (any StorageTransaction) async throws -> Result
    ) async throws -> Result

    /// Stores the notifications `items` gives as ``StorageTransaction/insertNotifications(_:)``
    /// does, all or none, in a write of their own whose commit is on disk when this returns;
    /// returns, per notification in order, whether it was new. `items` is asked once the storage
    /// holds what it writes with (a connection; on SQLite, the writer), so that notifications that
    /// arrived meanwhile go in too, and again, for the same items, if the write is rerun. On
    /// PostgreSQL up to 500 notifications are one statement, without BEGIN and COMMIT: one
    /// round trip instead of four for each group of webhooks.
    func insertNotifications(taking items: @Sendable () -> [InboxNotification]) async throws -> [Bool]

    /// How many ``insertNotifications(taking:)`` a server runs at once; the webhooks arriving
    /// meanwhile wait and go in the next one together. On SQLite 2: the next group's transaction
    /// runs while the last one's commit is on its way to the disk (`SQLiteWALFlusher`). On
    /// PostgreSQL 1: each statement costs the database its planning, locks and commit, and two at
    /// once per instance made the groups a third smaller and ingest slower where commits do not wait
    /// for the disk, and no faster where they do (Benchmarks/README.md, 2026-11-30, tenth); a
    /// webhook then waits at most one commit more.
    var notificationInsertsAtOnce: Int { get }

    /// Releases connections; the storage is unusable afterwards.
    func close() async throws
}

extension Storage {
    public func readAside<Result: Sendable>(
        _ body: @Sendable (any StorageTransaction) async throws -> Result
    ) async throws -> Result {
        try await read(body)
    }

    /// Runs `body` in one database transaction whose commit is on disk when this returns.
    public func transaction<Result: Sendable>(
        _ body: @Sendable (any StorageTransaction) async throws -> Result
    ) async throws -> Result {
        try await transaction(durability: .flushed, body)
    }
}

/// The databases a ``Storage`` can keep its data in.
public enum StorageBackend: String, Sendable, Hashable, CaseIterable {
    /// An embedded SQLite file: one server instance.
    case sqlite
    /// A PostgreSQL database: one or several server instances sharing it.
    case postgresql
}

/// Whether a commit waits until it is on disk.
///
/// A commit is always atomic, and commits reach the disk in order on both backends (SQLite's WAL,
/// PostgreSQL's WAL): a flushed commit makes every earlier one durable too. What a deferred commit
/// gives up is only that a power cut or an operating system crash (not a crash of the process)
/// right after it may undo it, and the commits after it, back to the last flushed one.
public enum CommitDurability: Sendable, Hashable {
    /// The commit returns once it is on disk: for anything the server answers or acts on.
    case flushed
    /// The commit does not wait for the disk (SQLite `synchronous = NORMAL`, PostgreSQL
    /// `synchronous_commit = off`): only for work that is redone from something already durable
    /// if it is lost, such as processing a stored notification, which stays pending until its
    /// processing commits. It saves a disk flush (several milliseconds here) per transaction.
    case deferred
}

/// The operations available inside one storage transaction.
public protocol StorageTransaction: ConsoleQueries, OverviewRollupQueries, Sendable {
    /// Runs `body` so that if it throws, what it wrote is undone and the transaction goes on
    /// (a SQL savepoint): several independent pieces of work can share one commit. An error that
    /// asks for the whole transaction to be rerun (``StorageError/isRetryable``) is rethrown as is.
    func savepoint<Result: Sendable>(_ body: @Sendable () async throws -> Result) async throws -> Result

    /// Reads what applying a batch of store facts will read (``BatchReads``), in a few multi-row
    /// statements — the purchases locked as ``purchase(_:)`` locks them, the customers' balances
    /// locked — and from then on, for the rest of this transaction, answers those reads from memory
    /// and keeps its writes of purchases, billing events, state changes, ledger entries and events
    /// to send as multi-row statements before the next other statement or the commit. (Processing
    /// a batch one row at a time cost PostgreSQL about 13 round trips per notification.) Reads it
    /// did not read ahead go to the database, as do all other operations; any other write drops
    /// what was read ahead.
    ///
    /// When the kept writes are sent, a ledger entry whose customer and idempotency key turn out
    /// to be taken, or a balance that another transaction changed meanwhile, fails the transaction
    /// with ``StorageError/Reason/conflict`` (what was answered from memory would be wrong): apply
    /// the batch again without reading ahead.
    func beginBatch(_ reads: BatchReads) async throws

    // MARK: Customers

    func customer(_ id: CustomerID) async throws -> Customer?
    func customer(appAccountToken: UUID) async throws -> Customer?
    /// Inserts a new customer; throws ``StorageError/Reason/conflict`` if the id or token exists.
    func insertCustomer(_ customer: Customer) async throws

    // MARK: Purchases

    /// The purchase, locked against concurrent writers until the transaction ends.
    func purchase(_ key: PurchaseKey) async throws -> Purchase?
    /// Inserts or replaces the purchase with this key.
    func savePurchase(_ purchase: Purchase) async throws
    func purchases(of customer: CustomerID) async throws -> [Purchase]
    /// Up to `limit` of the customer's purchases that follow `after` in key order (store, then
    /// id, by bytes; nil: from the first): a customer's history a page at a time, however many
    /// consumables it holds.
    func purchases(of customer: CustomerID, after: PurchaseKey?, limit: Int) async throws -> [Purchase]
    /// The customer's purchases that can grant an entitlement — every kind but consumables, whose
    /// credits go to balances: what entitlements are computed from, read without the (possibly
    /// thousands of) coin packs a customer bought.
    func entitlementPurchases(of customer: CustomerID) async throws -> [Purchase]
    /// The key of the customer's most recently observed purchase of `app` on `store`, of any kind
    /// (the earliest key in byte order among those observed at the same moment); nil when there is
    /// none. Read without decoding the customer's other purchases.
    func latestPurchase(of customer: CustomerID, app: AppID, store: Store) async throws -> PurchaseKey?
    /// Purchases nobody claimed yet whose account hint is `hint`.
    func unlinkedPurchases(accountHint: String) async throws -> [Purchase]
    /// Purchases of `store` the store still waits to have acknowledged, oldest first (by
    /// `observedAt`, then id), starting after `last` (a page's last purchase) so that a pass can
    /// page through all of them.
    func purchasesNeedingAcknowledgement(store: Store, after last: Purchase?, limit: Int) async throws -> [Purchase]
    /// How many purchases per store have no recorded app (stored before apps were recorded).
    func purchasesWithoutApp() async throws -> [Store: Int]
    /// Records `app` on every purchase of `store` whose app is not recorded; returns how many.
    /// Only for a store with exactly one configured app, which alone could have accepted them.
    func assignApp(_ app: AppID, toPurchasesOf store: Store) async throws -> Int
    /// Subscriptions still believed to grant access although that access ended before `cutoff`
    /// (active or canceled past their expiry, in grace past the grace expiry) and not refreshed
    /// from their store since `notRefreshedSince`, least recently refreshed (never first), then
    /// longest overdue: what a missed renewal or expiry notification leaves behind. Each comes up
    /// within as many calls as there are pages of them, however many stay overdue after being
    /// asked about.
    func subscriptionsOverdue(accessEndedBefore cutoff: Date, notRefreshedSince: Date, limit: Int) async throws
        -> [Purchase]
    /// How many ``subscriptionsOverdue(accessEndedBefore:notRefreshedSince:limit:)`` would list
    /// without a limit.
    func countSubscriptionsOverdue(accessEndedBefore cutoff: Date, notRefreshedSince: Date) async throws -> Int
    /// Subscriptions without access that wait on news from their store (in billing retry, paused or
    /// pending) whose last news (the later of their expiry and their observation) falls in
    /// `lastNews` and that were not refreshed since `notRefreshedSince`, least recently refreshed
    /// (never first), then longest silent: what a missed recovery, resumption, completed payment
    /// or expiry notification leaves behind. Each due one comes up within as many calls as there
    /// are pages of due ones, however many stay due after being asked about.
    func subscriptionsAwaitingNews(lastNews: Range<Date>, notRefreshedSince: Date, limit: Int) async throws
        -> [Purchase]
    /// How many ``subscriptionsAwaitingNews(lastNews:notRefreshedSince:limit:)`` would list without
    /// a limit.
    func countSubscriptionsAwaitingNews(lastNews: Range<Date>, notRefreshedSince: Date) async throws -> Int
    /// Records that the purchase's state was just asked of its store.
    func markRefreshed(_ key: PurchaseKey, at date: Date) async throws

    // MARK: Transactions (billing events)

    func transaction(store: Store, id: String) async throws -> TransactionRecord?
    /// Inserts or replaces the transaction with this store and id.
    func saveTransaction(_ record: TransactionRecord) async throws
    func transactions(of key: PurchaseKey) async throws -> [TransactionRecord]

    // MARK: History

    func appendStateChange(_ change: StateChange) async throws
    /// Oldest first.
    func stateChanges(of key: PurchaseKey) async throws -> [StateChange]
    func appendTransfer(_ transfer: OwnershipTransfer) async throws
    func transfers(of key: PurchaseKey) async throws -> [OwnershipTransfer]

    // MARK: Ledger

    /// Appends the entry unless one with the same customer and idempotency key exists; returns the
    /// entry that stands (the new one, or the earlier one with that key).
    func appendLedgerEntry(_ entry: LedgerEntry) async throws -> LedgerEntry
    /// Holds the customers' balances for this transaction (released when it ends): every
    /// transaction that reads a customer's ledger to decide what to post takes this first — a
    /// debit, a batch reading ahead (``beginBatch(_:)``), a credit's reconciliation, credits moved
    /// with a purchase — so none decides on a balance another is about to change. Taken in one
    /// order whatever the order of `customers`.
    func lockBalances(of customers: [CustomerID]) async throws
    /// Sum of entries per balance name.
    func balances(of customer: CustomerID) async throws -> [String: Int]
    /// What the ledger holds for one store transaction (credits and refund adjustments).
    func ledgerPosted(customer: CustomerID, transactionID: String) async throws -> LedgerPosted
    func ledgerEntries(of customer: CustomerID) async throws -> [LedgerEntry]
    /// What the ledger holds for one store transaction, per customer (a transferred purchase's
    /// credits are held partly by its previous owners).
    func ledgerPostedByCustomer(transactionID: String) async throws -> [CustomerID: LedgerPosted]

    // MARK: Notification inbox

    /// Stores the notification unless one with its store and dedupe key exists; returns whether it
    /// was new.
    func insertNotification(_ notification: InboxNotification) async throws -> Bool
    /// Stores each notification unless one with its store and dedupe key exists (or comes earlier
    /// in `notifications`), in a few multi-row statements; returns, per notification in order,
    /// whether it was new.
    func insertNotifications(_ notifications: [InboxNotification]) async throws -> [Bool]
    func notification(store: Store, dedupeKey: String) async throws -> InboxNotification?
    /// Pending or failed notifications due at `now` (at most `limit`, the first due first), with
    /// their kept records, and their bodies only where no record was kept
    /// (``InboxNotification/bodyWasRead``; ``notification(store:dedupeKey:)`` reads one whole), in
    /// the order they were received, held by this transaction until it ends: on
    /// PostgreSQL the rows are locked and rows another transaction holds are skipped; SQLite's
    /// transactions run one at a time. Work done in the same transaction needs nothing more (a
    /// crash or rollback leaves them due); work done after the commit leases them first
    /// (``leaseNotifications(_:until:)``).
    func lockDueNotifications(now: Date, limit: Int) async throws -> [InboxNotification]
    /// Moves the notifications' next attempt to `until`, so that no worker takes them before then
    /// (a lease for work done outside this transaction); returns them so.
    func leaseNotifications(_ notifications: [InboxNotification], until: Date) async throws -> [InboxNotification]
    /// Updates the delivery state (status, attempts, next attempt, last error, processed date) of
    /// the stored notification with the same store and dedupe key; its body and arrival stay.
    func updateNotification(_ notification: InboxNotification) async throws
    /// Marks the stored notifications processed at `date`, each with one more attempt, in one
    /// statement (a processed batch's marks).
    func markNotificationsProcessed(_ notifications: [InboxNotification], at date: Date) async throws
    func notifications(status: InboxNotification.Status, limit: Int) async throws -> [InboxNotification]
    /// Every status's count: reads the whole inbox (tests, diagnostics).
    func notificationCounts() async throws -> [InboxNotification.Status: Int]
    /// The pending and failed counts only, from the status index: what `/metrics` and the waits for
    /// an empty inbox need, at a cost that grows with the unfinished notifications rather than with
    /// every notification ever received.
    func unfinishedNotificationCounts() async throws -> [InboxNotification.Status: Int]

    // MARK: API keys and cursors

    func apiKey(secretHash: String) async throws -> APIKeyRecord?
    func saveAPIKey(_ key: APIKeyRecord) async throws
    func apiKeys() async throws -> [APIKeyRecord]
    /// Takes (or renews) the lease on the background job `name` for `holder` until `expiry`, unless
    /// another holder's lease is still running at `now`; returns whether `holder` holds it. With
    /// several instances on one database, a job runs where its lease is held, one at a time, and
    /// moves to another instance once a dead holder's lease runs out.
    func acquireJobLease(_ name: String, holder: String, now: Date, until expiry: Date) async throws -> Bool
    /// Gives the lease up (on shutdown), so another instance can take the job at once.
    func releaseJobLease(_ name: String, holder: String) async throws

    // MARK: Shared quotas

    /// Holds the quota `scope` for this transaction, so that instances admitting calls against one
    /// store quota take turns (reading what was admitted, then recording their own). Released when
    /// the transaction ends.
    func lockQuotaScope(_ scope: String) async throws
    /// The calls admitted in `scope` whose id is above `afterID` and whose time is after `since`,
    /// in the order recorded.
    func quotaAdmissions(scope: String, after afterID: Int, since: Date) async throws -> [QuotaAdmission]
    /// Records a call admitted in `scope` and `bucket` to go at `time`; returns its id.
    func recordQuotaAdmission(scope: String, bucket: String, at time: Date) async throws -> Int
    /// Deletes the calls of `scope` admitted at or before `horizon` (they count against nothing).
    func pruneQuotaAdmissions(scope: String, through horizon: Date) async throws

    // MARK: App transactions

    /// The customer linked to the app transaction `id` of `app`, if any.
    func appTransactionLink(app: AppID, id: String) async throws -> AppTransactionLink?
    /// Links (or relinks) the app transaction to its customer.
    func saveAppTransactionLink(_ link: AppTransactionLink) async throws
    /// Purchases of `app` nobody claimed yet that carry the app transaction `id`.
    func unlinkedPurchases(app: AppID, appTransactionID id: String) async throws -> [Purchase]

    // MARK: Refund decisions

    /// Whether the customer consented to share consumption data; nil when never asked.
    func consumptionConsent(of customer: CustomerID) async throws -> ConsumptionConsent?
    /// The customer with its consent, its purchases but consumables and its balances, as one
    /// snapshot: what the customer view shows. On PostgreSQL one statement (one round trip); on
    /// SQLite, in process, three. Nil for an unknown customer.
    func customerSnapshot(_ id: CustomerID) async throws -> CustomerSnapshot?
    /// Records the customer's answer, or forgets it (nil: unknown again).
    func saveConsumptionConsent(_ consent: ConsumptionConsent?, of customer: CustomerID) async throws
    /// The usage the app reported for the purchase, if any.
    func purchaseUsage(_ key: PurchaseKey) async throws -> PurchaseUsage?
    /// Inserts or replaces the usage reported for its purchase.
    func savePurchaseUsage(_ usage: PurchaseUsage) async throws
    /// Stores a refund request unless one with its store and id exists; returns whether it was new.
    func insertRefundRequest(_ request: RefundRequest) async throws -> Bool
    /// Pending refund requests due at `now`, oldest first, leased to the caller: their
    /// `nextAttemptAt` moves to `now + lease` so that no other sender takes them meanwhile.
    func claimDueRefundRequests(now: Date, limit: Int, lease: TimeInterval) async throws -> [RefundRequest]
    /// Updates the request with the same store and id (its answer, status and attempts).
    func updateRefundRequest(_ request: RefundRequest) async throws
    /// The refund requests of the customer's purchases, oldest first.
    func refundRequests(of customer: CustomerID) async throws -> [RefundRequest]
    // MARK: Events (the outbox) and webhook deliveries

    /// Appends events to the outbox, unnumbered: written in the transaction of the change they
    /// describe, so both commit or neither.
    func appendEvents(_ events: [StoredEvent]) async throws
    /// Numbers committed events that have no position yet, in the order they are found, after the
    /// highest position given (one numbering at a time across instances); returns how many. A
    /// position, once given, never changes and no lower one is given later: readers that move
    /// past a position never miss an event committed after they read.
    func sequenceEvents(limit: Int) async throws -> Int
    /// Numbered events after `position`, in order, optionally of one customer and of some types.
    func events(after position: Int, customer: CustomerID?, types: Set<EventType>, limit: Int) async throws
        -> [StoredEvent]
    func event(id: UUID) async throws -> StoredEvent?
    /// Whether an event has this position (a cursor that exists).
    func eventExists(position: Int) async throws -> Bool
    /// The highest position given (0 when none).
    func lastEventPosition() async throws -> Int

    /// Queues the events for `endpoint`, due at `now`; an event already queued there is queued
    /// again from its first attempt (a replay or a redelivery). One queued behind an earlier
    /// pending delivery of its ordering key waits without a next attempt (see
    /// ``recordDeliveryAttempts(_:)``).
    func enqueueDeliveries(endpoint: String, events: [StoredEvent], now: Date) async throws
    /// Reads at most `limit` numbered events after `position` and queues for `endpoint`, due at
    /// `now` (or waiting, as above), those of `types` and `environments` (empty: all; an event
    /// without an environment passes), copying them inside the database (no event body leaves
    /// it). Returns the last position read (nil: none was), how many were read and how many of
    /// them were queued.
    func enqueueDeliveries(
        endpoint: String, after position: Int, types: Set<EventType>, environments: Set<PurchaseEnvironment>,
        limit: Int, now: Date
    ) async throws -> (lastRead: Int?, read: Int, queued: Int)
    /// Pending deliveries of `endpoint` due at `now`, oldest first, at most one per ordering key and
    /// only where no earlier pending delivery of that key waits: a customer's later event waits
    /// for the earlier one. Each carries its event's body.
    func dueDeliveries(endpoint: String, now: Date, limit: Int) async throws -> [EventDelivery]
    /// The earliest time a pending delivery of `endpoint` is due (nil: nothing pending).
    func nextDeliveryDue(endpoint: String) async throws -> Date?
    /// Saves attempts' outcomes: each delivery's new state, and the attempts in the log in the
    /// order given. Where one ends its delivery (delivered or dead), the next pending delivery of
    /// its endpoint and ordering key, if it was waiting without a next attempt, becomes due at the
    /// time of the last attempt given. So a customer's earliest pending delivery always has a next
    /// attempt, and those behind it none until the one before them is done: a round reads only what
    /// can be due, however many wait behind a receiver that is down.
    func recordDeliveryAttempts(_ outcomes: [(DeliveryAttempt, EventDelivery)]) async throws
    func deliveries(endpoint: String, status: EventDelivery.Status?, limit: Int) async throws -> [EventDelivery]
    /// The newest attempts first.
    func deliveryAttempts(endpoint: String, eventID: UUID?, limit: Int) async throws -> [DeliveryAttempt]
    func deliveryCounts(endpoint: String) async throws -> [EventDelivery.Status: Int]
    /// When the oldest pending delivery's event occurred (nil: nothing pending): the lag.
    func oldestPendingDelivery(endpoint: String) async throws -> Date?

    /// A named position kept between runs (e.g. the last notification-history date fetched).
    func cursor(_ name: String) async throws -> String?
    func setCursor(_ name: String, to value: String) async throws

    // MARK: Webhook endpoints managed through the API, and pruning (migration 13)

    /// The endpoints created through the API, by name.
    func webhookEndpointRecords() async throws -> [WebhookEndpointRecord]
    func webhookEndpointRecord(named name: String) async throws -> WebhookEndpointRecord?
    /// Inserts the endpoint; throws ``StorageError/Reason/conflict`` if its name is taken.
    func insertWebhookEndpointRecord(_ record: WebhookEndpointRecord) async throws
    /// Replaces the endpoint with the same name (its URL, filters, secrets, enabled flag).
    func updateWebhookEndpointRecord(_ record: WebhookEndpointRecord) async throws
    /// Deletes the endpoint with its delivery queue, its attempts and its cursor; returns whether
    /// it existed.
    func deleteWebhookEndpointRecord(named name: String) async throws -> Bool

    /// Holds the webhook cursors for this transaction: what moves a cursor back or queues an old
    /// event takes turns with pruning, which never deletes an event one of them is about to queue.
    func lockWebhookCursors() async throws
    /// The lowest position still kept (nil: no numbered event is kept).
    func firstEventPosition() async throws -> Int?
    /// The lowest position any endpoint still has a pending delivery for (nil: none pending).
    func firstPendingDeliveryPosition() async throws -> Int?
    /// Deletes numbered events at or below `position` that occurred before `cutoff`, lowest
    /// position first, at most `limit`, stopping at the first younger one (never skipping past it,
    /// so what is kept stays one run of positions), with their delivery rows; returns how many.
    func pruneEvents(occurredBefore cutoff: Date, through position: Int, limit: Int) async throws -> Int
    /// Deletes delivery attempts made before `cutoff`, oldest first, at most `limit`, stopping at
    /// the first younger one; returns how many.
    func pruneDeliveryAttempts(attemptedBefore cutoff: Date, limit: Int) async throws -> Int
    /// Deletes processed notifications received before `cutoff`, with their payloads, oldest
    /// first, at most `limit`; returns how many. Pending and failed ones are kept, whatever their
    /// age.
    func pruneNotifications(processedReceivedBefore cutoff: Date, limit: Int) async throws -> Int
}

/// What applying a batch of store facts will read, for ``StorageTransaction/beginBatch(_:)``.
/// Anything left out is read from the database when asked for, so an incomplete list costs round
/// trips, never correctness.
public struct BatchReads: Sendable, Hashable {
    /// The purchases the facts are about, or supersede.
    public var purchases: Set<PurchaseKey>
    /// The account tokens the facts name (the customers they may be linked to).
    public var accountTokens: Set<UUID>
    /// The billing events the facts report, by store.
    public var transactions: Set<TransactionKey>

    public init(purchases: Set<PurchaseKey> = [], accountTokens: Set<UUID> = [], transactions: Set<TransactionKey> = [])
    {
        self.purchases = purchases
        self.accountTokens = accountTokens
        self.transactions = transactions
    }

    /// One billing event: its store and the store's id for it.
    public struct TransactionKey: Sendable, Hashable {
        public var store: Store
        public var id: String

        public init(store: Store, id: String) {
            self.store = store
            self.id = id
        }
    }
}

/// The entries posted for one store transaction: their sum and how many there are (a sum of 0 may
/// be a credit taken back in full, not nothing posted).
public struct LedgerPosted: Sendable, Hashable {
    public var total: Int
    public var entries: Int

    public init(total: Int, entries: Int) {
        self.total = total
        self.entries = entries
    }
}

/// Why storage failed.
public struct StorageError: Error, Sendable, CustomStringConvertible {
    public enum Reason: String, Sendable, Hashable {
        /// A unique key is taken.
        case conflict
        /// The database can't be reached or answered with an error.
        case unavailable
        /// Stored data could not be read back (corrupt or from a newer schema).
        case corrupt
        /// The schema is newer than this build understands.
        case schemaTooNew = "schema-too-new"
        /// The storage URL or path is unusable.
        case badConfiguration = "bad-configuration"
    }

    public var reason: Reason
    public var detail: String
    /// A PostgreSQL serialization failure or deadlock: rerunning the transaction may succeed.
    public internal(set) var isRetryable = false

    public init(_ reason: Reason, _ detail: String) {
        self.reason = reason
        self.detail = detail
    }

    public var description: String { "storage \(reason.rawValue): \(detail)" }
}

/// A call admitted against a shared store quota: its id (growing in the order admitted within a
/// scope), its bucket and when it goes.
public struct QuotaAdmission: Sendable, Hashable {
    public var id: Int
    public var bucket: String
    public var time: Date

    public init(id: Int, bucket: String, time: Date) {
        self.id = id
        self.bucket = bucket
        self.time = time
    }
}
