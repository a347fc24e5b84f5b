public import Foundation
public import StoreCore
public import Storekeeper
public import StorekeeperStorage

/// The stores' word for the customer (`appAccountToken`, `obfuscatedExternalAccountId`) in one
/// spelling: tokens are UUIDs the stores may return in either case.
public enum AccountHint {
    public static func normalized(_ raw: String?) -> String? {
        guard let raw, !raw.isEmpty else { return nil }
        return UUID(uuidString: raw).map { $0.uuidString.lowercased() } ?? raw
    }
}

/// Applies store facts to storage, inside the caller's transaction: the one place where purchases,
/// their history, their billing events, customer links and consumable credits change, and so the
/// place where the events describing those changes are written, in the same transaction.
public struct PurchaseRecorder: Sendable {
    public let catalog: Catalog
    /// Which environments' purchases grant access (and credit balances) in this deployment.
    public let access: EnvironmentAccess
    /// Writes the events of each change (the outbox).
    public let events: EventWriter

    public init(catalog: Catalog, access: EnvironmentAccess, clock: any WallClock = SystemWallClock()) {
        self.catalog = catalog
        self.access = access
        events = EventWriter(catalog: catalog, access: access, clock: clock)
    }

    /// Records one observation: a purchase's state (superseding the older purchases it names) or
    /// a billing event alone. Returns the purchase as it stands when the observation was about
    /// its state.
    @discardableResult
    public func record(
        _ observation: PurchaseObservation, cause: ChangeCause, in transaction: any StorageTransaction
    ) async throws -> Outcome? {
        var changes = ChangeSet()
        let outcome: Outcome?
        switch observation {
        case .purchase(let fact, let olderChain):
            outcome = try await record(fact, cause: cause, in: transaction, changes: &changes)
            for older in olderChain {
                _ = try await supersede(older, by: fact, cause: cause, in: transaction, changes: &changes)
            }
        case .billingEvent(let event, let key):
            try await record(event, of: key, in: transaction, changes: &changes)
            outcome = nil
        }
        try await events.write(changes, in: transaction)
        return outcome
    }

    /// What recording `observations` will read (``StorageTransaction/beginBatch(_:)``): the
    /// purchases they are about and supersede, the customers their account hints name, and the
    /// billing events they report.
    public func reads(of observations: [PurchaseObservation]) -> BatchReads {
        var reads = BatchReads()
        for observation in observations {
            switch observation {
            case .purchase(let fact, let olderChain):
                reads.purchases.insert(fact.key)
                if let replaced = fact.replaces { reads.purchases.insert(replaced) }
                reads.purchases.formUnion(olderChain)
                if let hint = AccountHint.normalized(fact.accountHint), let token = UUID(uuidString: hint) {
                    reads.accountTokens.insert(token)
                }
                for reported in fact.transactions {
                    reads.transactions.insert(BatchReads.TransactionKey(store: fact.key.store, id: reported.id))
                }
            case .billingEvent(let event, let key):
                reads.purchases.insert(key)
                reads.transactions.insert(BatchReads.TransactionKey(store: key.store, id: event.id))
            }
        }
        return reads
    }

    /// Records what settling a purchase with its store changed.
    public func record(
        _ settlement: PurchaseSettlement, of key: PurchaseKey, in transaction: any StorageTransaction
    ) async throws {
        guard var stored = try await transaction.purchase(key) else { return }
        switch settlement {
        case .acknowledged: stored.needsAcknowledgement = false
        case .accountTokenSet(let token): stored.accountHint = token
        }
        try await transaction.savePurchase(stored)
    }

    /// What recording a fact did.
    public struct Outcome: Sendable {
        /// The purchase as it stands now.
        public var purchase: Purchase
        /// Whether the fact was newer than what was applied (false: a stale or repeated fact).
        public var applied: Bool
    }

    /// Records `fact`: the purchase changes only if the fact is newer (DESIGN.md, "Ordering"), its
    /// transactions are merged, a purchase it replaces is superseded, an unlinked purchase is
    /// linked through its account hint, and consumable credits are reconciled.
    public func record(
        _ fact: PurchaseFact, cause: ChangeCause, in transaction: any StorageTransaction
    ) async throws -> Outcome {
        var changes = ChangeSet()
        let outcome = try await record(fact, cause: cause, in: transaction, changes: &changes)
        try await events.write(changes, in: transaction)
        return outcome
    }

    func record(
        _ fact: PurchaseFact, cause: ChangeCause, in transaction: any StorageTransaction, changes: inout ChangeSet
    ) async throws -> Outcome {
        let existing = try await transaction.purchase(fact.key)
        var purchase: Purchase
        var applied = true
        if let existing {
            switch existing.applying(fact) {
            case .applied(let next): purchase = next
            case .stale:
                purchase = existing
                applied = false
            }
        } else {
            purchase = Purchase(fact: fact)
        }
        // The app is the store's word too, but unlike the state it never changes: a stale fact
        // still tells the app of a purchase stored before apps were recorded.
        if purchase.app == nil { purchase.app = fact.app }
        if purchase.customerID == nil, let hint = purchase.accountHint {
            purchase.customerID = try await customer(forHint: hint, in: transaction)?.id
        }
        // No token (a family member's purchase, one made outside the app): the customer who
        // submitted the app transaction it names.
        if purchase.customerID == nil, let app = purchase.app, let appTransaction = purchase.appTransactionID {
            purchase.customerID = try await transaction.appTransactionLink(app: app, id: appTransaction)?.customerID
        }
        if let replaced = fact.replaces {
            let previous = try await supersede(replaced, by: fact, cause: cause, in: transaction, changes: &changes)
            if purchase.customerID == nil { purchase.customerID = previous?.customerID }
        }
        if existing != purchase {
            try await transaction.savePurchase(purchase)
            changes.purchaseSaved(before: existing, after: purchase)
        }
        if applied && (existing?.state != purchase.state || existing?.expiresAt != purchase.expiresAt) {
            try await transaction.appendStateChange(
                StateChange(
                    key: purchase.key, from: existing?.state, to: purchase.state, expiresAt: purchase.expiresAt,
                    observedAt: fact.observedAt, cause: cause
                )
            )
        }
        for reported in fact.transactions {
            try await record(reported, of: fact.key, in: transaction, changes: &changes)
        }
        try await reconcileCredits(of: purchase, in: transaction, at: fact.observedAt, changes: &changes)
        return Outcome(purchase: purchase, applied: applied)
    }

    /// Records one billing event of the purchase `key`: the newer word about it wins.
    func record(
        _ reported: TransactionFact, of key: PurchaseKey, in transaction: any StorageTransaction,
        changes: inout ChangeSet
    ) async throws {
        let stored = try await transaction.transaction(store: key.store, id: reported.id)
        let merged = stored?.merging(reported) ?? TransactionRecord(purchaseKey: key, fact: reported)
        if merged != stored {
            try await transaction.saveTransaction(merged)
            changes.transactionSaved(before: stored, after: merged)
        }
    }

    /// Links `purchase` to `customer` (a submission, or a transfer the policy allowed) and posts
    /// whatever consumable credits were waiting for an owner.
    public func link(
        _ purchase: Purchase, to customer: CustomerID, transfer: OwnershipTransfer? = nil,
        in transaction: any StorageTransaction, at now: Date
    ) async throws -> Purchase {
        var changes = ChangeSet()
        let linked = try await link(
            purchase, to: customer, transfer: transfer, in: transaction, at: now, changes: &changes)
        try await events.write(changes, in: transaction)
        return linked
    }

    func link(
        _ purchase: Purchase, to customer: CustomerID, transfer: OwnershipTransfer?,
        in transaction: any StorageTransaction, at now: Date, changes: inout ChangeSet
    ) async throws -> Purchase {
        var linked = purchase
        linked.customerID = customer
        if linked != purchase {
            try await transaction.savePurchase(linked)
            changes.purchaseSaved(before: purchase, after: linked)
        }
        if let transfer {
            try await transaction.appendTransfer(transfer)
            changes.transferred(transfer)
            try await moveUnspentCredits(of: linked, transfer, in: transaction, at: now, changes: &changes)
        }
        try await reconcileCredits(of: linked, in: transaction, at: now, changes: &changes)
        return linked
    }

    /// Links every unclaimed purchase that named this customer's token (purchases that arrived
    /// before the customer was created).
    public func claimUnlinked(for customer: Customer, in transaction: any StorageTransaction, at now: Date)
        async throws
    {
        guard let hint = AccountHint.normalized(customer.appAccountToken.uuidString) else { return }
        try await link(
            try await transaction.unlinkedPurchases(accountHint: hint), to: customer.id, in: transaction, at: now)
    }

    /// Links every unclaimed purchase of `link`'s app that carries its app transaction to its
    /// customer (purchases that arrived before the app transaction was submitted).
    public func claimUnlinked(for link: AppTransactionLink, in transaction: any StorageTransaction, at now: Date)
        async throws
    {
        let unlinked = try await transaction.unlinkedPurchases(app: link.app, appTransactionID: link.appTransactionID)
        try await self.link(unlinked, to: link.customerID, in: transaction, at: now)
    }

    /// Links unclaimed purchases to `customer`, with the events of all of them written once.
    func link(_ purchases: [Purchase], to customer: CustomerID, in transaction: any StorageTransaction, at now: Date)
        async throws
    {
        var changes = ChangeSet()
        for purchase in purchases {
            _ = try await link(purchase, to: customer, transfer: nil, in: transaction, at: now, changes: &changes)
        }
        try await events.write(changes, in: transaction)
    }

    func customer(forHint hint: String, in transaction: any StorageTransaction) async throws -> Customer? {
        guard let token = UUID(uuidString: hint) else { return nil }
        return try await transaction.customer(appAccountToken: token)
    }

    /// Marks the purchase `key` replaced by the one `fact` describes. If it isn't known yet, a
    /// superseded placeholder is stored so that its own facts, whenever they come, can't revive it.
    func supersede(
        _ key: PurchaseKey, by fact: PurchaseFact, cause: ChangeCause, in transaction: any StorageTransaction,
        changes: inout ChangeSet
    ) async throws -> Purchase? {
        let previous = try await transaction.purchase(key)
        let base =
            previous
            ?? Purchase(
                key: key, app: fact.app, productID: fact.productID, kind: fact.kind, environment: fact.environment,
                state: .superseded, accountHint: fact.accountHint, observedAt: fact.observedAt
            )
        let superseded = base.superseding(at: fact.observedAt)
        guard previous != superseded else { return previous }
        try await transaction.savePurchase(superseded)
        changes.purchaseSaved(before: previous, after: superseded)
        if previous?.state != .superseded {
            try await transaction.appendStateChange(
                StateChange(
                    key: key, from: previous?.state, to: .superseded, expiresAt: superseded.expiresAt,
                    observedAt: fact.observedAt,
                    cause: ChangeCause(
                        source: cause.source, event: "REPLACED_BY \(fact.key.id)", reference: cause.reference)
                )
            )
        }
        return superseded
    }

    /// A transferred consumable is credited once in all (docs/architecture.md, "Transfers"): the
    /// credits the previous owner has not spent (their ledger read oldest credits first) move with
    /// the purchase; the spent ones stay spent. A later refund or reversal is reconciled against
    /// what every owner holds, on the current one.
    /// Whether the purchase credits a balance (its kind, or its catalog product's).
    func isConsumable(_ purchase: Purchase) -> Bool {
        purchase.kind == .consumable || catalog.product(purchase.productID, in: purchase.key.store)?.kind == .consumable
    }

    func moveUnspentCredits(
        of purchase: Purchase, _ transfer: OwnershipTransfer, in transaction: any StorageTransaction, at now: Date,
        changes: inout ChangeSet
    ) async throws {
        guard isConsumable(purchase) else { return }
        let previous = transfer.from
        // What is unspent is read with both ledgers held: a debit in progress is counted as spent.
        try await transaction.lockBalances(of: [previous, transfer.to])
        let entries = try await transaction.ledgerEntries(of: previous)
        for record in try await transaction.transactions(of: purchase.key) {
            guard let product = catalog.product(record.fact.productID, in: purchase.key.store),
                let balance = product.balance
            else { continue }
            let held = try await transaction.ledgerPosted(customer: previous, transactionID: record.fact.id).total
            guard held > 0, let spent = ConsumedShare.spent(record.fact.id, in: entries, balance: balance) else {
                continue
            }
            let unspent = max(0, held - spent.credits)
            guard unspent > 0 else { continue }
            let millis = Int64((now.timeIntervalSince1970 * 1000).rounded())
            let key =
                "transfer:\(purchase.key.store.rawValue):\(record.fact.id):\(previous.rawValue)->\(transfer.to.rawValue):\(millis)"
            for (customer, amount) in [(previous, -unspent), (transfer.to, unspent)] {
                let entry = try await transaction.appendLedgerEntry(
                    LedgerEntry(
                        customerID: customer, balance: balance, amount: amount, reason: .transfer, idempotencyKey: key,
                        transactionID: record.fact.id, createdAt: now))
                changes.ledgerAppended(entry)
            }
        }
    }

    /// Posts, for each billing event of a consumable, the difference between what it should have
    /// credited (after refunds and reversals) and what the ledger holds for it — with every
    /// customer that ever owned it, so a transferred purchase is credited once in all — on its
    /// current owner. A sandbox purchase that may not grant access here credits nothing.
    func reconcileCredits(
        of purchase: Purchase, in transaction: any StorageTransaction, at now: Date, changes: inout ChangeSet
    ) async throws {
        // Only a consumable's billing events credit anything: a subscription's need no reading.
        guard isConsumable(purchase), let customer = purchase.customerID, access.admits(purchase) else { return }
        try await transaction.lockBalances(of: [customer])
        for record in try await transaction.transactions(of: purchase.key) {
            guard let product = catalog.product(record.fact.productID, in: purchase.key.store),
                product.kind == .consumable, let balance = product.balance
            else { continue }
            let byCustomer = try await transaction.ledgerPostedByCustomer(transactionID: record.fact.id)
            let posted = byCustomer[customer] ?? LedgerPosted(total: 0, entries: 0)
            let others = byCustomer.filter { $0.key != customer }.values.map(\.total).reduce(0, +)
            // What earlier owners hold they spent (their unspent credits moved on): it stays
            // spent, and the current owner is never asked to give it back.
            let owed =
                others == 0
                ? ConsumableCredit.owed(for: record.fact, product: product)
                : max(ConsumableCredit.owed(for: record.fact, product: product) - others, 0)
            guard owed != posted.total else { continue }
            let millis = Int64((record.fact.observedAt.timeIntervalSince1970 * 1000).rounded())
            let entry = try await transaction.appendLedgerEntry(
                LedgerEntry(
                    customerID: customer, balance: balance, amount: owed - posted.total,
                    // A purchase credit only the first time: after a full refund the total is 0
                    // again, and its reversal is an adjustment, not a second purchase.
                    reason: posted.entries == 0 && others == 0 && owed > posted.total ? .purchase : .refundAdjustment,
                    idempotencyKey: "\(purchase.key.store.rawValue):\(record.fact.id):\(millis):\(owed)",
                    transactionID: record.fact.id, createdAt: now
                )
            )
            // An entry with this key already posted comes back as it was: not a change.
            if entry.amount == owed - posted.total, abs(entry.createdAt.timeIntervalSince(now)) < 0.001 {
                changes.ledgerAppended(entry)
            }
        }
    }
}
