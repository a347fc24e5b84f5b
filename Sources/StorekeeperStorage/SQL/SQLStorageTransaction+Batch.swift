import Foundation
import SQLKit
import Storekeeper

/// Batches (``StorageTransaction/beginBatch(_:)``): what a batch will read, read in one statement
/// per kind, and its kept writes sent in a statement or a few per table.
extension SQLStorageTransaction {
    /// Rows per multi-row statement: far below both backends' limits on bound values (SQLite
    /// 32,766; PostgreSQL 65,535) at the widest row (purchases, 20 columns).
    static let rowsPerStatement = 500

    func beginBatch(_ reads: BatchReads) async throws {
        try await beforeStatement(writes: true)
        var cache = SQLBatch.Cache()
        let keys = reads.purchases.sorted { $0.precedesAsStored($1) }
        try await readPurchases(keys, into: &cache)
        try await readCustomers(tokens: Array(reads.accountTokens), into: &cache)
        try await readTransactions(Array(reads.transactions), into: &cache)
        try await readTransactions(of: keys, into: &cache)
        var transactionIDs = Set(reads.transactions.map(\.id))
        for records in cache.transactionsOf.values { transactionIDs.formUnion(records.map(\.fact.id)) }
        try await readLedgerPosted(transactionIDs: transactionIDs.sorted(), into: &cache)
        var customers = Set(cache.purchases.values.compactMap { $0?.customerID })
        customers.formUnion(cache.customersByToken.values.compactMap { $0?.id })
        let sortedCustomers = customers.map(\.rawValue).sorted().map(CustomerID.init(rawValue:))
        try await readEntitlementPurchases(of: sortedCustomers, into: &cache)
        try await readBalances(of: sortedCustomers, into: &cache)
        batch.begin(with: cache)
    }

    /// Sends what the batch kept; nothing when it kept nothing (or never began).
    func finishBatch() async throws {
        guard batch.isActive else { return }
        try await send(batch.takePending(droppingCache: false))
    }

    // MARK: Reading ahead

    /// The purchases, locked as ``purchase(_:)`` locks one: PostgreSQL's advisory lock per key (which
    /// holds for a purchase not stored yet) and the rows `FOR UPDATE`, both in key order.
    private func readPurchases(_ keys: [PurchaseKey], into cache: inout SQLBatch.Cache) async throws {
        guard !keys.isEmpty else { return }
        try await lock(keys.map(\.description))
        for key in keys { cache.purchases[key] = .some(nil) }
        for row in try await fetch(
            """
            SELECT \(unsafeRaw: Self.purchaseColumns) FROM purchases
            WHERE (store, id) IN (\(pairs(keys.map { ($0.store.rawValue, $0.id) })))
            ORDER BY \(unsafeRaw: flavor.byteOrder("store", "id"))\(unsafeRaw: flavor.lockForUpdate)
            """)
        {
            let purchase = try purchase(from: row)
            cache.purchases[purchase.key] = purchase
        }
    }

    private func readCustomers(tokens: [UUID], into cache: inout SQLBatch.Cache) async throws {
        guard !tokens.isEmpty else { return }
        for token in tokens { cache.customersByToken[token] = .some(nil) }
        for row in try await fetch(
            """
            SELECT \(unsafeRaw: Self.customerColumns) FROM customers
            WHERE app_account_token IN (\(list(tokens.map(\.uuidString))))
            """)
        {
            let customer = try customer(from: row)
            cache.customersByToken[customer.appAccountToken] = customer
        }
    }

    private func readTransactions(_ keys: [BatchReads.TransactionKey], into cache: inout SQLBatch.Cache)
        async throws
    {
        guard !keys.isEmpty else { return }
        for key in keys { cache.transactions[key] = .some(nil) }
        for row in try await fetch(
            """
            SELECT \(unsafeRaw: Self.transactionColumns) FROM transactions
            WHERE (store, id) IN (\(pairs(keys.map { ($0.store.rawValue, $0.id) })))
            """)
        {
            let record = try transactionRecord(from: row)
            cache.transactions[BatchReads.TransactionKey(store: record.purchaseKey.store, id: record.fact.id)] = record
        }
    }

    private func readTransactions(of keys: [PurchaseKey], into cache: inout SQLBatch.Cache) async throws {
        guard !keys.isEmpty else { return }
        for key in keys { cache.transactionsOf[key] = [] }
        for row in try await fetch(
            """
            SELECT \(unsafeRaw: Self.transactionColumns) FROM transactions
            WHERE (store, purchase_id) IN (\(pairs(keys.map { ($0.store.rawValue, $0.id) })))
            ORDER BY purchased_at, \(unsafeRaw: flavor.byteOrder("id"))
            """)
        {
            let record = try transactionRecord(from: row)
            cache.transactionsOf[record.purchaseKey, default: []].append(record)
        }
    }

    private func readLedgerPosted(transactionIDs: [String], into cache: inout SQLBatch.Cache) async throws {
        guard !transactionIDs.isEmpty else { return }
        for id in transactionIDs { cache.ledgerPosted[id] = [:] }
        for row in try await fetch(
            """
            SELECT transaction_id, customer_id, CAST(SUM(amount) AS BIGINT) AS total,
                   CAST(COUNT(*) AS BIGINT) AS entries
            FROM ledger_entries WHERE transaction_id IN (\(list(transactionIDs)))
            GROUP BY transaction_id, customer_id
            """)
        {
            let reader = RowReader(row: row, table: "ledger_entries")
            cache.ledgerPosted[try reader.string("transaction_id"), default: [:]][
                CustomerID(try reader.string("customer_id"))] = LedgerPosted(
                    total: try reader.int("total"), entries: try reader.int("entries"))
        }
    }

    private func readEntitlementPurchases(of customers: [CustomerID], into cache: inout SQLBatch.Cache) async throws {
        guard !customers.isEmpty else { return }
        for customer in customers { cache.entitlementPurchases[customer] = [] }
        for row in try await fetch(
            """
            SELECT \(unsafeRaw: Self.purchaseColumns) FROM purchases
            WHERE customer_id IN (\(list(customers.map(\.rawValue)))) AND kind <> 'consumable'
            ORDER BY \(unsafeRaw: flavor.byteOrder("store", "id"))
            """)
        {
            let purchase = try purchase(from: row)
            if let customer = purchase.customerID { cache.entitlementPurchases[customer, default: []].append(purchase) }
        }
    }

    /// The customers' balances, locked (PostgreSQL) so that nothing changes them under the batch:
    /// first ``lockBalances(of:)``, the lock every transaction deciding on a customer's ledger takes
    /// (it holds for balances no row holds yet: two batches crediting a new balance at once would
    /// each have answered it without the other's credit), then the rows `FOR UPDATE`.
    private func readBalances(of customers: [CustomerID], into cache: inout SQLBatch.Cache) async throws {
        guard !customers.isEmpty else { return }
        try await lockBalances(of: customers)
        for customer in customers { cache.balances[customer] = [:] }
        for (customer, totals) in try await balanceRows(of: customers, locking: true) {
            cache.balances[customer] = totals
        }
    }

    private func balanceRows(of customers: [CustomerID], locking: Bool) async throws -> [CustomerID: [String: Int]] {
        var balances: [CustomerID: [String: Int]] = [:]
        for row in try await fetch(
            """
            SELECT customer_id, balance, total FROM ledger_balances
            WHERE customer_id IN (\(list(customers.map(\.rawValue))))
            ORDER BY customer_id, balance\(unsafeRaw: locking ? flavor.lockForUpdate : "")
            """)
        {
            let reader = RowReader(row: row, table: "ledger_balances")
            balances[CustomerID(try reader.string("customer_id")), default: [:]][try reader.string("balance")] =
                try reader.int("total")
        }
        return balances
    }

    // MARK: Sending kept writes

    /// Sends kept writes, table by table, purchases first: one statement per ``rowsPerStatement``
    /// rows on PostgreSQL, per power-of-two run on SQLite (``SQLFlavor/statementChunks(_:limit:)``).
    func send(_ pending: SQLBatch.Pending) async throws {
        guard !pending.isEmpty else { return }
        for chunk in flavor.statementChunks(pending.purchases.all, limit: Self.rowsPerStatement) {
            try await insertPurchases(chunk)
        }
        for chunk in flavor.statementChunks(pending.transactions.all, limit: Self.rowsPerStatement) {
            try await insertTransactions(chunk)
        }
        for chunk in flavor.statementChunks(pending.stateChanges, limit: Self.rowsPerStatement) {
            try await insertStateChanges(chunk)
        }
        try await insertLedgerEntries(pending.ledgerEntries, expectingBalances: pending.expectedBalances)
        for chunk in flavor.statementChunks(pending.events, limit: Self.rowsPerStatement) {
            try await insertEvents(chunk)
        }
    }

    /// Inserts kept ledger entries, failing with ``StorageError/Reason/conflict`` if one's
    /// idempotency key was taken or a balance answered from memory no longer matches.
    private func insertLedgerEntries(_ entries: [LedgerEntry], expectingBalances expected: [CustomerID: [String: Int]])
        async throws
    {
        guard !entries.isEmpty else { return }
        var inserted = 0
        for chunk in flavor.statementChunks(entries, limit: Self.rowsPerStatement) {
            let rows = SQLRows(columnCount: 7, chunk) { entry in
                [
                    .text(entry.customerID.rawValue), .text(entry.balance), .integer(entry.amount),
                    .text(entry.reason.rawValue), .text(entry.idempotencyKey), .text(entry.transactionID),
                    .integer(StoredTime.milliseconds(entry.createdAt)),
                ]
            }
            inserted += try await fetch(
                """
                INSERT INTO ledger_entries (\(unsafeRaw: Self.ledgerColumns))
                \(rows.source(flavor))
                ON CONFLICT (customer_id, idempotency_key) DO NOTHING
                RETURNING idempotency_key
                """
            ).count
        }
        guard inserted == entries.count else {
            throw StorageError(
                .conflict,
                "\(entries.count - inserted) of a batch's \(entries.count) ledger entries had idempotency keys "
                    + "already posted; the batch must be applied without reading ahead")
        }
        // SQLite runs one transaction at a time: nothing can have changed a balance under the batch.
        guard flavor == .postgresql, !expected.isEmpty else { return }
        let customers = expected.keys.map(\.rawValue).sorted().map(CustomerID.init(rawValue:))
        let found = try await balanceRows(of: customers, locking: false)
        for customer in customers where (found[customer] ?? [:]) != expected[customer] {
            throw StorageError(
                .conflict,
                "a balance of customer '\(customer)' changed under a batch; the batch must be applied without "
                    + "reading ahead")
        }
    }
}

extension SQLStorageTransaction {
    /// Transaction-level locks on `names` (see ``lock(_:)``), taken in one statement in the order of
    /// `names` (sorted by the caller, so that transactions taking several never wait on each other in
    /// a circle); nothing on SQLite.
    func lock(_ names: [String]) async throws {
        guard flavor == .postgresql, !names.isEmpty else { return }
        // A volatile function in the select list is evaluated after the sort, one row at a time.
        try await execute(
            """
            SELECT pg_advisory_xact_lock(hashtextextended(c1, 0))
            FROM (\(SQLRows(columnCount: 1, names) { [.text($0)] }.source(flavor, ordered: false))) AS names
            ORDER BY c1
            """)
    }

    /// Bound values for `a IN (…)`: `?, ?, …` on SQLite (padded, ``SQLFlavor/keyList(_:)``), one array on
    /// PostgreSQL (``SQLRows``).
    func list(_ values: [String]) -> SQLQueryString {
        switch flavor {
        case .sqlite:
            flavor.keyList(values).map { value -> SQLQueryString in "\(bind: value)" }.joined(separator: ", ")
        case .postgresql:
            SQLRows(columnCount: 1, values) { [.text($0)] }.source(flavor, ordered: false)
        }
    }

    /// Bound pairs for `(a, b) IN (…)`: `VALUES (?, ?), …` on SQLite (padded, ``SQLFlavor/keyList(_:)``),
    /// two arrays on PostgreSQL (``SQLRows``). Either is a relation PostgreSQL joins on the whole key
    /// (see ``leaseNotifications(_:until:)``).
    func pairs(_ pairs: [(String, String)]) -> SQLQueryString {
        SQLRows(columnCount: 2, flavor.keyList(pairs)) { [.text($0.0), .text($0.1)] }.source(flavor, ordered: false)
    }
}

extension Array {
    /// Consecutive slices of at most `size` elements.
    func chunked(_ size: Int) -> [[Element]] {
        stride(from: 0, to: count, by: size).map { Array(self[$0..<Swift.min($0 + size, count)]) }
    }
}
