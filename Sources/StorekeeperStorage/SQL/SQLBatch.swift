import Foundation
import Storekeeper
import Synchronization

/// What one transaction read ahead for a batch, and the writes it keeps to send together
/// (``StorageTransaction/beginBatch(_:)``). Every cached answer is what the database would answer
/// now, given this transaction's writes: the batch's own writes update it, and any other write
/// drops it (``SQLStorageTransaction/beforeStatement(writes:)``).
///
/// One per transaction attempt (a rerun starts afresh); inactive until `beginBatch`.
final class SQLBatch: Sendable {
    private let state = Mutex(State())

    struct State {
        var active = false
        var cache = Cache()
        var pending = Pending()
    }

    /// Answers read ahead, kept current by the batch's writes. A key that is present with `nil`
    /// was read and found absent.
    struct Cache {
        var purchases: [PurchaseKey: Purchase?] = [:]
        var customersByToken: [UUID: Customer?] = [:]
        var transactions: [BatchReads.TransactionKey: TransactionRecord?] = [:]
        var transactionsOf: [PurchaseKey: [TransactionRecord]] = [:]
        /// By store transaction id (``StorageTransaction/ledgerPostedByCustomer(transactionID:)``
        /// reads by id alone).
        var ledgerPosted: [String: [CustomerID: LedgerPosted]] = [:]
        var entitlementPurchases: [CustomerID: [Purchase]] = [:]
        var balances: [CustomerID: [String: Int]] = [:]
    }

    /// Writes kept to send together. Upserts keep the last value per key (PostgreSQL refuses an
    /// `INSERT … ON CONFLICT DO UPDATE` that touches one row twice) in first-written order.
    struct Pending {
        var purchases = KeyedWrites<PurchaseKey, Purchase>()
        var transactions = KeyedWrites<BatchReads.TransactionKey, TransactionRecord>()
        var stateChanges: [StateChange] = []
        var ledgerEntries: [LedgerEntry] = []
        var events: [StoredEvent] = []
        /// What the batch answered as the balances of customers its ledger entries credit: checked
        /// once the entries are in (``SQLStorageTransaction/send(_:)``).
        var expectedBalances: [CustomerID: [String: Int]] = [:]

        var isEmpty: Bool {
            purchases.isEmpty && transactions.isEmpty && stateChanges.isEmpty && ledgerEntries.isEmpty
                && events.isEmpty
        }
    }

    var isActive: Bool { state.withLock(\.active) }

    func begin(with cache: Cache) {
        state.withLock { state in
            state.active = true
            state.cache = cache
        }
    }

    /// Takes the pending writes (to send them); with `droppingCache`, also forgets what was read
    /// ahead (another write is about to change the database behind it).
    func takePending(droppingCache: Bool) -> Pending {
        state.withLock { state in
            var pending = state.pending
            for entry in pending.ledgerEntries {
                pending.expectedBalances[entry.customerID] = state.cache.balances[entry.customerID]
            }
            state.pending = Pending()
            if droppingCache { state.cache = Cache() }
            return pending
        }
    }

    /// Forgets pending writes and cached answers: the savepoint they belonged to was rolled back.
    func discardAll() {
        state.withLock { state in
            state.pending = Pending()
            state.cache = Cache()
        }
    }

    // MARK: Reads

    /// The cached answer, or nil when the batch is inactive or did not read it.
    func read<Value>(_ answer: (Cache) -> Value?) -> Value? {
        state.withLock { state in state.active ? answer(state.cache) : nil }
    }

    // MARK: Writes (each returns false when the batch is inactive: the caller writes at once)

    func savePurchase(_ purchase: Purchase) -> Bool {
        state.withLock { state in
            guard state.active else { return false }
            var stored = purchase.asStored
            if let cached = state.cache.purchases[purchase.key] {
                // The upsert keeps a recorded app and app transaction id that the new row lacks.
                stored.app = stored.app ?? cached?.app
                stored.appTransactionID = stored.appTransactionID ?? cached?.appTransactionID
                state.cache.purchases[purchase.key] = stored
                state.cache.updateEntitlementPurchases(with: stored)
            } else {
                // Not read ahead: what the row will hold is unknown here, and so are the lists
                // that may contain it.
                state.cache.entitlementPurchases = [:]
            }
            state.pending.purchases.set(stored, for: stored.key)
            return true
        }
    }

    func saveTransaction(_ record: TransactionRecord) -> Bool {
        state.withLock { state in
            guard state.active else { return false }
            let stored = record.asStored
            let key = BatchReads.TransactionKey(store: record.purchaseKey.store, id: record.fact.id)
            let previous = state.cache.transactions.updateValue(stored, forKey: key)
            state.cache.updateTransactionsOf(with: stored, previously: previous)
            state.pending.transactions.set(stored, for: key)
            return true
        }
    }

    func appendStateChange(_ change: StateChange) -> Bool {
        state.withLock { state in
            guard state.active else { return false }
            state.pending.stateChanges.append(change)
            return true
        }
    }

    /// The entry that stands once kept: an entry pending with the same customer and idempotency
    /// key, or this one. (One already in the database is found when the entries are sent.)
    func appendLedgerEntry(_ entry: LedgerEntry) -> LedgerEntry? {
        state.withLock { state in
            guard state.active else { return nil }
            if let standing = state.pending.ledgerEntries.first(where: {
                $0.customerID == entry.customerID && $0.idempotencyKey == entry.idempotencyKey
            }) {
                return standing
            }
            var stored = entry
            stored.createdAt = StoredTime.rounded(entry.createdAt)
            state.pending.ledgerEntries.append(stored)
            if let transactionID = entry.transactionID, state.cache.ledgerPosted[transactionID] != nil {
                var posted =
                    state.cache.ledgerPosted[transactionID]?[entry.customerID] ?? LedgerPosted(total: 0, entries: 0)
                posted.total += entry.amount
                posted.entries += 1
                state.cache.ledgerPosted[transactionID]?[entry.customerID] = posted
            }
            if state.cache.balances[entry.customerID] != nil {
                state.cache.balances[entry.customerID]?[entry.balance, default: 0] += entry.amount
            }
            return stored
        }
    }

    func appendEvents(_ events: [StoredEvent]) -> Bool {
        state.withLock { state in
            guard state.active else { return false }
            state.pending.events.append(contentsOf: events)
            return true
        }
    }
}

/// Upserts kept in first-written order, the last value per key.
struct KeyedWrites<Key: Hashable, Value> {
    private(set) var order: [Key] = []
    private var values: [Key: Value] = [:]

    var isEmpty: Bool { order.isEmpty }
    var all: [Value] { order.compactMap { values[$0] } }

    mutating func set(_ value: Value, for key: Key) {
        if values.updateValue(value, forKey: key) == nil { order.append(key) }
    }
}

extension SQLBatch.Cache {
    /// `stored` replaces its purchase in every cached list of a customer's entitlement purchases
    /// (leaving the list of a customer it no longer belongs to).
    mutating func updateEntitlementPurchases(with stored: Purchase) {
        for (customer, var purchases) in entitlementPurchases {
            let had = purchases.contains { $0.key == stored.key }
            let belongs = stored.customerID == customer && stored.kind != .consumable
            guard had || belongs else { continue }
            purchases.removeAll { $0.key == stored.key }
            if belongs {
                purchases.append(stored)
                // The query's `ORDER BY store, id`, text compared byte-wise (`SQLFlavor.byteOrder`).
                purchases.sort { $0.key.precedesAsStored($1.key) }
            }
            entitlementPurchases[customer] = purchases
        }
    }

    /// `stored` replaces its billing event in the cached lists of purchases' billing events.
    ///
    /// `previous` is what ``transactions`` held for it: when that was read, only the lists of its
    /// purchase then and now can hold it (the cache answers as the database would), so a batch
    /// saving many billing events does not walk every list for each.
    mutating func updateTransactionsOf(with stored: TransactionRecord, previously previous: TransactionRecord??) {
        let candidates: [PurchaseKey]
        switch previous {
        case .some(.some(let record)):
            candidates =
                record.purchaseKey == stored.purchaseKey
                ? [stored.purchaseKey] : [record.purchaseKey, stored.purchaseKey]
        case .some(.none): candidates = [stored.purchaseKey]
        case .none: candidates = Array(transactionsOf.keys)
        }
        for key in candidates {
            guard var records = transactionsOf[key] else { continue }
            let had = records.contains {
                $0.purchaseKey.store == stored.purchaseKey.store && $0.fact.id == stored.fact.id
            }
            let belongs = key == stored.purchaseKey
            guard had || belongs else { continue }
            records.removeAll { $0.purchaseKey.store == stored.purchaseKey.store && $0.fact.id == stored.fact.id }
            if belongs {
                records.append(stored)
                // The query's `ORDER BY purchased_at, id`, text compared byte-wise (`SQLFlavor.byteOrder`).
                records.sort {
                    let (left, right) = (
                        StoredTime.milliseconds($0.fact.purchasedAt), StoredTime.milliseconds($1.fact.purchasedAt)
                    )
                    return left != right ? left < right : $0.fact.id.utf8.lexicographicallyPrecedes($1.fact.id.utf8)
                }
            }
            transactionsOf[key] = records
        }
    }
}

extension PurchaseKey {
    /// Whether this key comes first in a query's `ORDER BY store, id`: text compared byte-wise, as
    /// the queries order it on both backends (``SQLFlavor/byteOrder(_:)``), not as Swift compares
    /// strings.
    func precedesAsStored(_ other: PurchaseKey) -> Bool {
        if store != other.store { return store.rawValue.utf8.lexicographicallyPrecedes(other.store.rawValue.utf8) }
        return id.utf8.lexicographicallyPrecedes(other.id.utf8)
    }
}

extension Purchase {
    /// This purchase as a row stores it and reads it back: its dates at millisecond precision.
    var asStored: Purchase {
        var stored = self
        stored.expiresAt = expiresAt.map(StoredTime.rounded)
        stored.gracePeriodExpiresAt = gracePeriodExpiresAt.map(StoredTime.rounded)
        stored.observedAt = StoredTime.rounded(observedAt)
        return stored
    }
}

extension TransactionRecord {
    /// This record as a row stores it and reads it back: its dates at millisecond precision.
    var asStored: TransactionRecord {
        var stored = self
        stored.fact.purchasedAt = StoredTime.rounded(fact.purchasedAt)
        stored.fact.revokedAt = fact.revokedAt.map(StoredTime.rounded)
        stored.fact.observedAt = StoredTime.rounded(fact.observedAt)
        return stored
    }
}
