import Foundation
public import Logging
public import StoreCore
public import Storekeeper
public import StorekeeperStorage

/// Receives store notifications: has each store's adapter authenticate them, stores them durably
/// with their dedupe key, and processes stored ones (retrying failures with backoff). The
/// webhook answers 2xx only after ``receive(_:_:)`` returned, i.e. once the notification is
/// durable (DESIGN.md, "Durability").
public struct NotificationInbox: Sendable {
    public let storage: any Storage
    public let recorder: PurchaseRecorder
    public let stores: StoreAdapters
    public let settler: PurchaseSettler
    public let settings: ProcessingSettings
    public let clock: any WallClock
    public let logger: Logger
    /// Noted at every delivery received and batch processed (webhook delivery yields to it).
    public let activity: IngestActivity
    /// Told of every processing attempt's outcome (for metrics).
    let onProcessed: @Sendable (_ store: Store, _ outcome: ProcessingOutcome) -> Void
    /// Told when a batch failed as a whole and was applied notification by notification (for
    /// metrics: a notification that cannot be applied, or a conflict with another worker).
    let onBatchSplit: @Sendable () -> Void
    /// Stores received notifications, those arriving together in one transaction.
    private let inserts: GroupCommitter<InboxNotification, Bool>

    public init(
        storage: any Storage, recorder: PurchaseRecorder, stores: StoreAdapters, settler: PurchaseSettler,
        settings: ProcessingSettings, clock: any WallClock, logger: Logger, activity: IngestActivity = IngestActivity(),
        onProcessed: @escaping @Sendable (_ store: Store, _ outcome: ProcessingOutcome) -> Void = { _, _ in },
        onBatchSplit: @escaping @Sendable () -> Void = {}
    ) {
        self.onBatchSplit = onBatchSplit
        self.activity = activity
        self.storage = storage
        self.recorder = recorder
        self.stores = stores
        self.settler = settler
        self.settings = settings
        self.clock = clock
        self.logger = logger
        self.onProcessed = onProcessed
        // The group's items are taken once the storage can write: those that arrived while it
        // waited for the writer (or a connection) go in too.
        self.inserts = GroupCommitter(maxBatch: 256, overlapping: storage.notificationInsertsAtOnce) {
            [storage] group in
            try await storage.insertNotifications(taking: group.items)
        }
    }

    /// What receiving a notification did.
    public enum Receipt: Sendable, Equatable {
        case stored
        case duplicate
    }

    /// Authenticates a delivery through its store's adapter and stores it, with what the adapter
    /// verified. Deliveries arriving together are committed together (``GroupCommitter``); each
    /// returns once its own is durable. Throws before anything is written if the body is malformed
    /// or the signature or token doesn't verify.
    public func receive(_ store: Store, _ delivery: WebhookDelivery) async throws -> Receipt {
        activity.noteActivity()
        let accepted = try await stores(store).accept(delivery)
        let item = InboxNotification(
            store: store, dedupeKey: accepted.dedupeKey, body: delivery.body, verified: accepted.verified,
            receivedAt: clock.now())
        return try await inserts.submit(item) ? .stored : .duplicate
    }

    // MARK: Processing

    /// Processes every stored notification due now (at most `limit`); returns how many it
    /// handled.
    ///
    /// A notification its store's adapter interprets from what was stored (the App Store's, whose
    /// verification was kept from the webhook) is claimed, interpreted and applied in one
    /// transaction with its `processed` mark: the claim is a row lock (``StorageTransaction/lockDueNotifications(now:limit:)``),
    /// which a crash or a rollback releases, so it needs no lease written first. (A lease was a
    /// transaction of its own and an update of every claimed row; in the PostgreSQL ingest profile
    /// that claim was 60 µs of the server's 640 µs per notification.) One that needs the store's
    /// API (Google's) is leased in that transaction (at most ``leasedPerBatch``) and interpreted
    /// after it, outside any transaction, then applied in one of its own (see ``apply(_:at:)``).
    /// Either way a batch is applied together, and if that fails, again with each notification
    /// isolated, so that one that fails is undone alone and retried later with backoff while the
    /// rest commit.
    ///
    /// A notification whose purchase the store still waits to have acknowledged is marked
    /// processed only once that was tried (a failure is left to the sweeper), so nothing counts as
    /// done while Google's three days run. A crash anywhere re-processes; the ordering rule makes
    /// that harmless.
    ///
    /// `claimBegins` is called in the claiming transaction just before the claim, which then sees
    /// everything committed before the call (``NotificationWorker`` wakes no other loop meanwhile).
    @discardableResult
    public func processDue(limit: Int, claimBegins: @escaping @Sendable () -> Void = {}) async throws -> Int {
        let claimed: ClaimedBatch
        do {
            claimed = try await processInClaimingTransaction(
                limit: limit, isolatingEach: false, claimBegins: claimBegins)
        } catch let failure as BatchFailure {
            splitting(failure.underlying, count: failure.count)
            claimed = try await processInClaimingTransaction(
                limit: limit, isolatingEach: true, claimBegins: claimBegins)
        }
        let now = claimed.claimedAt
        if claimed.count > 0 { activity.noteActivity() }
        for (item, error) in claimed.failed { reportFailure(of: item, error) }
        try await finish(claimed.applied.map { ($0.item, .success($0.unsettled)) })

        var changes: [Interpreted] = []
        for item in claimed.leased {
            // Once the lease has run out (calls waiting their turn under a used-up quota), the
            // rest may be another claim's already: each is due again, and asking the store here
            // too would spend the quota twice on it. They are left, untouched, to that claim.
            guard let leasedUntil = item.nextAttemptAt, clock.now() < leasedUntil else { break }
            do {
                let change = try await Self.interpret(item, with: stores(item.store)) { [storage] in
                    try await storage.read { try await $0.notification(store: item.store, dedupeKey: item.dedupeKey) }
                }
                changes.append((item, change))
            } catch {
                await recordFailure(of: item, "\(error)")
            }
        }
        guard !changes.isEmpty else { return claimed.count }
        let outcomes: [Result<[Purchase], ApplyFailure>]
        do {
            outcomes = try await apply(changes, at: now)
        } catch {
            for (item, _) in changes { await recordFailure(of: item, "\(error)") }
            return claimed.count
        }
        try await finish(zip(changes, outcomes).map { ($0.item, $1) })
        return claimed.count
    }

    /// What one claiming transaction did, for the work after its commit.
    private struct ClaimedBatch: Sendable {
        /// The time the claim took as now (what was due then).
        var claimedAt: Date
        /// Found due (those left for the next claim included: more are due).
        var count = 0
        /// Applied in the transaction: marked processed, or (with purchases the store waits to
        /// have acknowledged) leased until they are settled.
        var applied: [(item: InboxNotification, unsettled: [Purchase])] = []
        /// Failed there, and recorded so (due again after a backoff).
        var failed: [(item: InboxNotification, error: String)] = []
        /// Leased, to be interpreted through the store's API.
        var leased: [InboxNotification] = []
    }

    /// The most notifications one batch leases for the store's API, whatever its size: a batch of
    /// 200 Google ones would be 200 API calls in a row under one lease.
    static let leasedPerBatch = 50

    /// A batch that failed as a whole in its claiming transaction (rolled back, claim included).
    private struct BatchFailure: Error {
        var underlying: any Error
        var count: Int
    }

    /// Claims what is due (at most `limit`), leases what needs the store's API, and interprets and
    /// applies the rest, recording failures, in one transaction.
    private func processInClaimingTransaction(
        limit: Int, isolatingEach: Bool, claimBegins: @escaping @Sendable () -> Void
    ) async throws -> ClaimedBatch {
        let (stores, settings, clock) = (self.stores, self.settings, self.clock)
        // Processing commits are deferred (CommitDurability): a power cut may undo them, and the
        // notification, stored durably and still pending then, is processed again.
        return try await storage.transaction(durability: .deferred) { transaction in
            // Now, not before the transaction waited for its turn: a notification stored before
            // `claimBegins` is due by then.
            claimBegins()
            let now = clock.now()
            let leasedUntil = now.addingTimeInterval(max(settings.lease, 0))
            let due = try await transaction.lockDueNotifications(now: now, limit: limit)
            var batch = ClaimedBatch(claimedAt: now, count: due.count)
            // Each adapter asked once: applied here from what was stored, or leased for the store's API.
            var local: [InboxNotification] = []
            var remote: [InboxNotification] = []
            for item in due {
                if stores(item.store).interpretsFromStoredNotification(item) {
                    local.append(item)
                } else {
                    remote.append(item)
                }
            }
            // Each leased one is an API call after the commit, one after another within the lease:
            // a batch leases no more than it has time for, and the rest stay due for the next claim.
            batch.leased = try await transaction.leaseNotifications(
                Array(remote.prefix(Self.leasedPerBatch)), until: leasedUntil)
            var changes: [Interpreted] = []
            for item in local {
                do {
                    let change = try await Self.interpret(item, with: stores(item.store)) {
                        try await transaction.notification(store: item.store, dedupeKey: item.dedupeKey)
                    }
                    changes.append((item, change))
                } catch {
                    batch.failed.append((item, "\(error)"))
                }
            }
            let outcomes: [Result<[Purchase], ApplyFailure>]
            do {
                outcomes = try await applyInLockOrder(changes, at: now, isolatingEach: isolatingEach, in: transaction)
            } catch let error as StorageError where error.isRetryable {
                throw error
            } catch {
                // Isolated, what still fails fails the whole transaction.
                guard !isolatingEach else { throw error }
                throw BatchFailure(underlying: error, count: changes.count)
            }
            var unsettled: [InboxNotification] = []
            for ((item, _), outcome) in zip(changes, outcomes) {
                switch outcome {
                case .success(let purchases):
                    batch.applied.append((item, purchases))
                    if !purchases.isEmpty { unsettled.append(item) }
                case .failure(let failure):
                    batch.failed.append((item, failure.description))
                }
            }
            for (item, error) in batch.failed {
                try await transaction.updateNotification(
                    Self.failedAttempt(of: item, at: clock.now(), settings: settings, error: error))
            }
            // Not done until the store is told, after this commit; nobody else takes them meanwhile.
            _ = try await transaction.leaseNotifications(unsettled, until: leasedUntil)
            return batch
        }
    }

    /// What `item` tells, read whole (by `readWhole`) first if the adapter needs the body its claim
    /// left out: in the claiming transaction, or after it for a leased one (none of today's
    /// adapters keeps a record it then interprets through the store's API, but one may).
    static func interpret(
        _ item: InboxNotification, with adapter: any StoreAdapter,
        readWhole: () async throws -> InboxNotification?
    ) async throws -> NotificationChange {
        do {
            return try await adapter.interpret(item)
        } catch let error as BodyNotRead {
            // Claimed (locked or leased), so stored.
            guard let whole = try await readWhole() else { throw error }
            return try await adapter.interpret(whole)
        }
    }

    /// After the commit that applied them: tells the store of purchases it waits to have
    /// acknowledged (an API call, outside any transaction), records what it changed with the
    /// notification's processed mark, and counts each processed or failed.
    private func finish(_ outcomes: [(InboxNotification, Result<[Purchase], ApplyFailure>)]) async throws {
        for (item, outcome) in outcomes {
            switch outcome {
            case .success(let unsettled):
                if !unsettled.isEmpty {
                    var settled: [(PurchaseKey, PurchaseSettlement)] = []
                    for purchase in unsettled {
                        if let settlement = await settler.tellStore(purchase) {
                            settled.append((purchase.key, settlement))
                        }
                    }
                    try await storage.transaction(durability: .deferred) { [now = clock.now(), settled, recorder] in
                        for (key, settlement) in settled { try await recorder.record(settlement, of: key, in: $0) }
                        try await $0.updateNotification(item.markedProcessed(at: now))
                    }
                }
                onProcessed(item.store, .processed)
            case .failure(let failure):
                await recordFailure(of: item, failure.description)
            }
        }
    }

    struct ApplyFailure: Error, Sendable {
        var description: String
    }

    typealias Interpreted = (item: InboxNotification, change: NotificationChange)

    /// Applies a batch in one transaction; one outcome per change, in the same order (dedupe keys
    /// are unique per store only). First all together, without savepoints — the usual case, where
    /// nothing fails, and a savepoint would cost two more statements per notification; if one
    /// fails, the batch is rolled back and applied again with each notification in a savepoint of
    /// its own, so that only the failing one fails.
    func apply(_ changes: [Interpreted], at now: Date) async throws -> [Result<[Purchase], ApplyFailure>] {
        do {
            return try await storage.transaction(durability: .deferred) { [self] transaction in
                try await applyInLockOrder(changes, at: now, isolatingEach: false, in: transaction)
            }
        } catch {
            // Also for a batch of one: applied without reading ahead, a batch that failed only
            // because of it (StorageTransaction.beginBatch's conflicts) succeeds.
            splitting(error, count: changes.count)
            return try await storage.transaction(durability: .deferred) { [self] transaction in
                try await applyInLockOrder(changes, at: now, isolatingEach: true, in: transaction)
            }
        }
    }

    /// Notes a batch that failed as a whole, to be applied notification by notification.
    private func splitting(_ error: any Error, count: Int) {
        onBatchSplit()
        logger.debug(
            "a batch failed as a whole; applying its notifications one by one",
            metadata: ["notifications": "\(count)", "error": "\(error)"])
    }

    /// Records every change and marks those done processed, in `transaction`; one outcome per
    /// change, in the same order.
    ///
    /// The batch is applied in lock order (``NotificationChange/lockOrder``), the same on every
    /// worker and instance: a credit locks its customer's running balance until the commit, and
    /// two batches crediting the same customers in opposite orders deadlocked on PostgreSQL (one
    /// rolled back after a second's wait, and was retried later). In one order, the later batch
    /// waits for the earlier one instead.
    private func applyInLockOrder(
        _ changes: [Interpreted], at now: Date, isolatingEach: Bool, in transaction: any StorageTransaction
    ) async throws -> [Result<[Purchase], ApplyFailure>] {
        guard !changes.isEmpty else { return [] }
        // Each change's place computed once: it parses an account token, and the sort compares
        // each change many times (in the PostgreSQL ingest profile those parses were 3 % of the
        // process's CPU).
        let places = changes.map(\.change.lockOrder)
        let order = changes.indices.sorted { places[$0] < places[$1] }
        let outcomes = try await applyAll(
            order.map { changes[$0] }, at: now, isolatingEach: isolatingEach, in: transaction)
        return Self.inInputOrder(outcomes, order)
    }

    /// `outcomes`, one per change in `order` (indices into the input), put back in input order.
    private static func inInputOrder<Outcome>(_ outcomes: [Outcome], _ order: [Int]) -> [Outcome] {
        var placed: [Outcome?] = Array(repeating: nil, count: outcomes.count)
        for (outcome, index) in zip(outcomes, order) { placed[index] = outcome }
        return placed.compactMap { $0 }
    }

    /// Records every change and marks those done processed. Isolating each (a savepoint per
    /// notification) turns a notification's failure into its outcome; otherwise the first failure
    /// fails the whole transaction, and what the batch will read is read ahead
    /// (``StorageTransaction/beginBatch(_:)``: a few statements per batch instead of about a dozen
    /// per notification).
    private func applyAll(
        _ changes: [Interpreted], at now: Date, isolatingEach: Bool, in transaction: any StorageTransaction
    ) async throws -> [Result<[Purchase], ApplyFailure>] {
        let recorder = self.recorder
        if !isolatingEach {
            try await transaction.beginBatch(recorder.reads(of: changes.flatMap(\.change.observations)))
        }
        var outcomes: [Result<[Purchase], ApplyFailure>] = []
        var done: [InboxNotification] = []
        for (item, change) in changes {
            let record = { @Sendable in try await Self.record(change, recorder: recorder, in: transaction) }
            do {
                let unsettled = isolatingEach ? try await transaction.savepoint(record) : try await record()
                if unsettled.isEmpty { done.append(item) }
                outcomes.append(.success(unsettled))
            } catch {
                guard isolatingEach else { throw error }
                if let storageError = error as? StorageError, storageError.isRetryable { throw error }
                outcomes.append(.failure(ApplyFailure(description: "\(error)")))
            }
        }
        try await transaction.markNotificationsProcessed(done, at: now)
        return outcomes
    }

    /// Records a notification's observations; returns the recorded purchases that await
    /// acknowledgement (the notification is marked processed only once those were settled).
    static func record(
        _ change: NotificationChange, recorder: PurchaseRecorder, in transaction: any StorageTransaction
    ) async throws -> [Purchase] {
        var unsettled: [Purchase] = []
        for observation in change.observations {
            if let outcome = try await recorder.record(observation, cause: change.cause, in: transaction),
                outcome.purchase.needsAcknowledgement
            {
                unsettled.append(outcome.purchase)
            }
        }
        // Answered by the RefundRequestAnswerer; a redelivered request is the same row.
        if let request = change.refundRequest { _ = try await transaction.insertRefundRequest(request) }
        return unsettled
    }

    /// Processes batches of `settings.batchSize` until none is due.
    public func processUntilNoneDue() async throws {
        while try await processDue(limit: settings.batchSize) > 0 {}
    }

    /// Processes what is due, then waits up to `timeout` (real time) until no notification is
    /// pending — including those another worker claimed and is still applying, which are not due
    /// to this one. Returns whether none is pending.
    @discardableResult
    public func processUntilNonePending(timeout: Duration) async throws -> Bool {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            try await processUntilNoneDue()
            let counts = try await storage.read { try await $0.unfinishedNotificationCounts() }
            if (counts[.pending] ?? 0) == 0 { return true }
            guard ContinuousClock.now < deadline else { return false }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Leaves a notification whose processing failed in the inbox, due again after a backoff.
    func recordFailure(of item: InboxNotification, _ error: String) async {
        reportFailure(of: item, error)
        let failed = Self.failedAttempt(of: item, at: clock.now(), settings: settings, error: error)
        _ = try? await storage.transaction(durability: .deferred) { [failed] in
            try await $0.updateNotification(failed)
        }
    }

    /// Counts and logs a failed attempt (once it is recorded, or as it is).
    func reportFailure(of item: InboxNotification, _ error: String) {
        onProcessed(item.store, .failed)
        logger.warning(
            "notification processing failed; will retry",
            metadata: [
                "store": "\(item.store.rawValue)", "dedupeKey": "\(item.dedupeKey)", "attempts": "\(item.attempts + 1)",
                "error": "\(error)",
            ]
        )
    }

    /// The notification after a failed attempt at `now`: due again after a backoff that doubles
    /// with each attempt, up to the maximum.
    static func failedAttempt(
        of item: InboxNotification, at now: Date, settings: ProcessingSettings, error: String
    ) -> InboxNotification {
        let attempts = item.attempts + 1
        let delay = min(settings.initialRetryDelay * pow(2, Double(attempts - 1)), settings.maxRetryDelay)
        var failed = item
        failed.status = .failed
        failed.attempts = attempts
        failed.lastError = error
        failed.nextAttemptAt = now.addingTimeInterval(delay)
        return failed
    }
}

/// How processing one notification ended (the `result` label of
/// `storekeeper_notifications_processed_total`).
public enum ProcessingOutcome: String, Sendable, Hashable, CaseIterable {
    case processed
    case failed
}

extension NotificationChange {
    /// Where applying this change comes in a batch: by the customer whose balance it may credit
    /// (its account hint; the hint names one customer), then by purchase. A change without a hint
    /// (a customer found through an app transaction, or none) comes first, by purchase; two such
    /// changes for different customers in opposite orders could still wait on each other, which
    /// PostgreSQL resolves by rolling one back (it is retried later).
    var lockOrder: LockOrder {
        switch observations.first {
        case .purchase(let fact, _)?:
            LockOrder(customerHint: AccountHint.normalized(fact.accountHint) ?? "", purchase: fact.key)
        case .billingEvent(_, let key)?: LockOrder(customerHint: "", purchase: key)
        case nil: LockOrder(customerHint: "", purchase: nil)
        }
    }

    struct LockOrder: Comparable {
        var customerHint: String
        var purchase: PurchaseKey?

        static func < (lhs: Self, rhs: Self) -> Bool {
            if lhs.customerHint != rhs.customerHint { return lhs.customerHint < rhs.customerHint }
            switch (lhs.purchase, rhs.purchase) {
            case (let left?, let right?): return left < right
            case (nil, .some): return true
            default: return false
            }
        }
    }
}

extension InboxNotification {
    /// This notification, processed at `now`.
    func markedProcessed(at now: Date) -> InboxNotification {
        var done = self
        done.status = .processed
        done.attempts = attempts + 1
        done.processedAt = now
        done.nextAttemptAt = nil
        done.lastError = nil
        return done
    }
}
