public import Foundation
public import StoreCore
public import Storekeeper
public import StorekeeperStorage

/// Keeps the overview's daily rollup current without adding work to the processing path: a
/// background job (leased: one instance at a time) that folds the event outbox into the rollup by
/// its own cursor, a batch per transaction with the cursor moved in that same transaction, so a
/// batch is counted once whatever crashes or retries. Its first round folds the history recorded
/// before (``OverviewRollupQueries/backfillOverviewRollup()``). Subscriptions by state are
/// recounted every `recountInterval`, since not every state change makes an event.
public struct OverviewRollup: Sendable {
    static let cursorName = "overview-rollup.position"
    static let recountCursorName = "overview-rollup.recounted-at"
    /// Seconds between rounds: how far the overview may lag behind processing.
    static let interval: TimeInterval = 10

    /// The events that can change a count: every purchase lifecycle event (the first of a change
    /// names a new billing event) and refunds.
    static let foldedTypes: Set<EventType> = [
        .purchaseStarted, .subscriptionRenewed, .subscriptionRenewalExtended, .subscriptionProductChanged,
        .subscriptionAutoRenewDisabled, .subscriptionAutoRenewEnabled, .subscriptionBillingRetry,
        .subscriptionGracePeriod, .subscriptionOnHold, .subscriptionPaused, .subscriptionRecovered,
        .subscriptionExpired, .purchaseRevoked, .purchaseRefunded, .purchaseRefundReversed,
    ]

    public let storage: any Storage
    public let catalog: Catalog
    public let clock: any WallClock
    public let batchSize: Int
    public let recountInterval: TimeInterval

    public init(
        storage: any Storage, catalog: Catalog, clock: any WallClock, batchSize: Int = 500,
        recountInterval: TimeInterval = 300
    ) {
        self.storage = storage
        self.catalog = catalog
        self.clock = clock
        self.batchSize = max(batchSize, 1)
        self.recountInterval = recountInterval
    }

    /// One round: folds every event committed so far, a batch at a time, and recounts the states
    /// when due (or when `recount` says so). Returns how many events were folded.
    @discardableResult
    public func run(recount: Bool = false) async throws -> Int {
        var folded = 0
        while true {
            let count = try await foldBatch()
            folded += count
            if count < batchSize { break }
        }
        try await recountStates(force: recount)
        return folded
    }

    /// Folds the next batch of events after the cursor; returns how many were read.
    func foldBatch() async throws -> Int {
        let (catalog, batchSize) = (catalog, batchSize)
        return try await storage.transaction { transaction in
            try await transaction.lockOverviewRollup()
            let after: Int
            if let stored = try await transaction.cursor(Self.cursorName).flatMap({ Int($0) }) {
                after = stored
            } else {
                after = try await transaction.backfillOverviewRollup()
                try await transaction.setCursor(Self.cursorName, to: String(after))
            }
            _ = try await transaction.sequenceEvents(limit: batchSize)
            let events = try await transaction.events(
                after: after, customer: nil, types: Self.foldedTypes, limit: batchSize)
            guard let last = events.last?.position else { return 0 }
            var deltas: [OverviewActivity] = []
            for stored in events {
                guard let event = try? EventWriter.decoder.decode(Event.self, from: stored.body) else { continue }
                deltas += try await Self.deltas(of: event, catalog: catalog, in: transaction)
            }
            try await transaction.addOverviewActivity(deltas)
            try await transaction.setCursor(Self.cursorName, to: String(last))
            return events.count
        }
    }

    /// What one event adds to the rollup, on the day it was recorded.
    static func deltas(of event: Event, catalog: Catalog, in transaction: any StorageTransaction) async throws
        -> [OverviewActivity]
    {
        var event = event
        if event.store == nil, let id = event.details.transactionID,
            let record = try await transaction.transactions(storeID: id).first,
            let purchase = try await Self.purchase(record.purchaseKey, in: transaction)
        {
            // A refund that changed nothing of its purchase (a consumable's share) names only the
            // billing event: its purchase says where it belongs.
            (event.store, event.app, event.environment) = (purchase.key.store, purchase.app, purchase.environment)
            (event.purchaseID, event.productID) = (purchase.key.id, purchase.productID)
        }
        guard let store = event.store, let environment = event.environment, let purchaseID = event.purchaseID else {
            return []
        }
        let slice = OverviewSlice(store: store, app: event.app, environment: environment)
        let day = Console.startOfDay(event.occurredAt)
        func count(_ kind: OverviewActivity.Kind, _ count: Int = 1) -> OverviewActivity {
            OverviewActivity(slice: slice, day: day, kind: kind, count: count)
        }
        let purchase = try await Self.purchase(PurchaseKey(store: store, id: purchaseID), in: transaction)
        // A family member's access to what the purchaser paid for: the purchaser's own purchase
        // counts the payment, its renewals, refunds and end; counted again here, revenue and the
        // subscription counts grew with every member of the family.
        guard purchase?.ownership != .familyShared else { return [] }
        let kind = event.productID.flatMap { catalog.product($0, in: store)?.kind } ?? purchase?.kind
        let isSubscription = kind == .subscription
        let ended: Set<SubscriptionState> = [.expired, .revoked]
        var deltas: [OverviewActivity] = []
        switch event.type {
        case .purchaseRefunded, .purchaseRefundReversed:
            let refunded = event.type == .purchaseRefunded
            deltas.append(count(.refunded, refunded ? 1 : -1))
            if let id = event.details.transactionID,
                let price = try await transaction.transaction(store: store, id: id)?.fact.price
            {
                let share = price.share(event.details.refundedShare ?? 1)
                deltas.append(
                    OverviewActivity(
                        slice: slice, day: day, kind: .revenue, currency: price.currency, count: 0,
                        amountMicros: refunded ? -share : share))
            }
            return deltas
        case .purchaseStarted:
            if isSubscription { deltas.append(count(.new)) }
        case .subscriptionExpired, .purchaseRevoked:
            if isSubscription, !(event.details.previousState.map(ended.contains) ?? false) {
                deltas.append(count(.churned))
            }
        default: break
        }
        guard let id = event.details.transactionID else { return deltas }
        // A billing event recorded with this change: a renewal unless it is the purchase's first or
        // a change of product's. A product change is neither new nor a renewal, on either store: on
        // Google Play its new purchase replaces the old one, on the App Store the same one goes on.
        let renewal = event.type != .purchaseStarted && event.type != .subscriptionProductChanged
        if isSubscription, renewal { deltas.append(count(.renewed)) }
        let price = try await transaction.transaction(store: store, id: id)?.fact.price
        deltas.append(
            OverviewActivity(
                slice: slice, day: day, kind: .revenue, currency: price?.currency, count: 1,
                amountMicros: price?.micros ?? 0))
        return deltas
    }

    /// When the states were last recounted, and their counts then (nil before the first recount).
    public static func lastRecount(in transaction: any StorageTransaction) async throws
        -> (at: Date, counts: [OverviewStateCount])?
    {
        guard let seconds = try await transaction.cursor(recountCursorName).flatMap({ Double($0) }) else {
            return nil
        }
        let at = Date(timeIntervalSince1970: seconds)
        return (at, try await transaction.overviewStates(day: Console.startOfDay(at)))
    }

    /// A purchase read without the lock processing takes on it (``StorageTransaction/purchase(_:)``
    /// locks the key on PostgreSQL): the job never waits on, or holds up, a notification.
    static func purchase(_ key: PurchaseKey, in transaction: any StorageTransaction) async throws -> Purchase? {
        try await transaction.purchases(storeID: key.id).first { $0.key == key }
    }

    /// Recounts subscriptions by state when the last recount is `recountInterval` old (or `force`).
    func recountStates(force: Bool) async throws {
        let now = clock.now()
        let interval = recountInterval
        @Sendable func due(_ transaction: any StorageTransaction) async throws -> Bool {
            guard !force, let last = try await transaction.cursor(Self.recountCursorName).flatMap(Double.init) else {
                return true
            }
            return now.timeIntervalSince1970 - last >= interval
        }
        guard try await storage.read({ try await due($0) }) else { return }
        let counts = try await countStates(at: now)
        try await storage.transaction { transaction in
            try await transaction.lockOverviewRollup()
            // Another round may have recounted since (a caller's beside the job's).
            guard try await due(transaction) else { return }
            try await transaction.replaceOverviewStates(counts, day: Console.startOfDay(now))
            try await transaction.setCursor(Self.recountCursorName, to: String(now.timeIntervalSince1970))
        }
    }

    /// The subscriptions by state now, counted aside (``Storage/readAside(_:)``): the count reads
    /// every subscription in a counted state (107 ms at 722,498 on SQLite in the `customer-read`
    /// benchmark), which inside the write transaction held SQLite's one writer, and every webhook
    /// insert behind it, as long; on the reader that serves customer views it would hold those.
    public func countStates(at now: Date) async throws -> [OverviewStateCount] {
        try await storage.readAside { try await $0.countOverviewStates(day: Console.startOfDay(now)) }
    }
}
