import Foundation
import SQLKit
import Storekeeper

/// The one implementation of ``StorageTransaction`` for both backends: SQL through SQLKit on a
/// connection that is inside an open transaction. Where the dialects differ, ``SQLFlavor`` says how.
struct SQLStorageTransaction: StorageTransaction {
    let database: any SQLDatabase
    let flavor: SQLFlavor
    let errors: StorageErrorTranslator
    /// What ``beginBatch(_:)`` read ahead and the writes it keeps (inactive until then).
    let batch: SQLBatch

    init(database: any SQLDatabase, flavor: SQLFlavor, errors: StorageErrorTranslator, batch: SQLBatch = SQLBatch()) {
        self.database = database
        self.flavor = flavor
        self.errors = errors
        self.batch = batch
    }

    // MARK: Running statements

    func savepoint<Result: Sendable>(_ body: @Sendable () async throws -> Result) async throws -> Result {
        try await run("SAVEPOINT storekeeper_item")
        do {
            let result = try await body()
            try await run("RELEASE SAVEPOINT storekeeper_item")
            return result
        } catch let error as StorageError where error.isRetryable {
            // The whole transaction is rerun; rolling back to the savepoint would hide that.
            throw error
        } catch {
            // What the body kept to send, and read through its writes, is undone with it.
            batch.discardAll()
            try await run("ROLLBACK TO SAVEPOINT storekeeper_item")
            try await run("RELEASE SAVEPOINT storekeeper_item")
            throw error
        }
    }

    /// Runs a statement that may write.
    func run(_ query: SQLQueryString) async throws {
        try await beforeStatement(writes: true)
        try await execute(query)
    }

    /// Runs a statement that may write, and returns its rows.
    func rows(_ query: SQLQueryString) async throws -> [any SQLRow] {
        try await beforeStatement(writes: true)
        return try await fetch(query)
    }

    func row(_ query: SQLQueryString) async throws -> (any SQLRow)? {
        try await rows(query).first
    }

    /// Runs a statement that only reads, and returns its rows.
    func select(_ query: SQLQueryString) async throws -> [any SQLRow] {
        try await beforeStatement(writes: false)
        return try await fetch(query)
    }

    func selectOne(_ query: SQLQueryString) async throws -> (any SQLRow)? {
        try await select(query).first
    }

    /// Before a statement of a batch (``beginBatch(_:)``): the kept writes go first, and one that
    /// may write drops what was read ahead.
    func beforeStatement(writes: Bool) async throws {
        guard batch.isActive else { return }
        try await send(batch.takePending(droppingCache: writes))
    }

    /// Runs `query` as it is (no batch bookkeeping).
    func execute(_ query: SQLQueryString) async throws {
        do {
            try await database.raw(query).run()
        } catch {
            throw errors.translate(error)
        }
    }

    /// Runs `query` as it is and returns its rows (no batch bookkeeping).
    func fetch(_ query: SQLQueryString) async throws -> [any SQLRow] {
        do {
            return try await database.raw(query).all()
        } catch {
            throw errors.translate(error)
        }
    }

    // MARK: Customers

    static let customerColumns = "id, app_account_token, created_at"

    func customer(from row: any SQLRow) throws -> Customer {
        let reader = RowReader(row: row, table: "customers")
        return Customer(
            id: CustomerID(try reader.string("id")), appAccountToken: try reader.uuid("app_account_token"),
            createdAt: try reader.date("created_at"))
    }

    func customer(_ id: CustomerID) async throws -> Customer? {
        try await row(
            "SELECT \(unsafeRaw: Self.customerColumns) FROM customers WHERE id = \(bind: id.rawValue)"
        ).map(customer(from:))
    }

    func customer(appAccountToken: UUID) async throws -> Customer? {
        if let cached = batch.read({ $0.customersByToken[appAccountToken] }) { return cached }
        return try await selectOne(
            """
            SELECT \(unsafeRaw: Self.customerColumns) FROM customers
            WHERE app_account_token = \(bind: appAccountToken.uuidString)
            """
        ).map(customer(from:))
    }

    func insertCustomer(_ customer: Customer) async throws {
        // DO NOTHING instead of a failing insert: on PostgreSQL a failed statement would abort the
        // whole transaction, and the caller may want to go on after a conflict.
        let inserted = try await rows(
            """
            INSERT INTO customers (id, app_account_token, created_at)
            VALUES (\(bind: customer.id.rawValue), \(bind: customer.appAccountToken.uuidString),
                    \(bind: StoredTime.milliseconds(customer.createdAt)))
            ON CONFLICT DO NOTHING RETURNING id
            """)
        guard inserted.isEmpty else { return }
        throw StorageError(
            .conflict,
            "a customer with id '\(customer.id)' or app account token \(customer.appAccountToken) already exists")
    }

    // MARK: Purchases

    static let purchaseColumns = """
        store, id, customer_id, app, product_id, kind, environment, state, expires_at, grace_period_expires_at, \
        auto_renew, ownership, quantity, account_hint, replaces_store, replaces_id, observed_at, needs_acknowledgement, \
        app_transaction_id, offers, base_plan_id
        """

    func purchase(from row: any SQLRow) throws -> Purchase {
        let reader = RowReader(row: row, table: "purchases")
        var replaces: PurchaseKey?
        if let replacedStore = try reader.optionalRaw("replaces_store", as: Store.self) {
            replaces = PurchaseKey(store: replacedStore, id: try reader.string("replaces_id"))
        }
        var purchase = Purchase(
            key: PurchaseKey(store: try reader.raw("store", as: Store.self), id: try reader.string("id")),
            customerID: try reader.optionalString("customer_id").map(CustomerID.init(rawValue:)),
            app: try reader.optionalString("app").map(AppID.init(rawValue:)),
            productID: try reader.string("product_id"),
            kind: try reader.raw("kind", as: ProductKind.self),
            environment: try reader.raw("environment", as: PurchaseEnvironment.self),
            state: try reader.raw("state", as: SubscriptionState.self),
            expiresAt: try reader.optionalDate("expires_at"),
            gracePeriodExpiresAt: try reader.optionalDate("grace_period_expires_at"),
            autoRenew: try reader.optionalBool("auto_renew"),
            ownership: try reader.raw("ownership", as: Ownership.self),
            quantity: try reader.int("quantity"),
            accountHint: try reader.optionalString("account_hint"),
            replaces: replaces,
            observedAt: try reader.date("observed_at"),
            needsAcknowledgement: try reader.bool("needs_acknowledgement"))
        purchase.appTransactionID = try reader.optionalString("app_transaction_id")
        purchase.basePlanID = try reader.optionalString("base_plan_id")
        if let json = try reader.optionalString("offers") {
            do {
                purchase.offers = try JSONDecoder().decode(SubscriptionOffers.self, from: Data(json.utf8))
            } catch {
                throw StorageError(.corrupt, "purchases.offers holds unreadable JSON: \(error)")
            }
        }
        return purchase
    }

    /// A transaction-level lock on `name` (PostgreSQL: an advisory lock, released at commit or
    /// rollback); nothing on SQLite, whose transactions run one at a time.
    func lock(_ name: String) async throws {
        guard flavor == .postgresql else { return }
        try await run("SELECT pg_advisory_xact_lock(hashtextextended(\(bind: name), 0))")
    }

    func purchase(_ key: PurchaseKey) async throws -> Purchase? {
        // Read ahead, it was locked then.
        if let cached = batch.read({ $0.purchases[key] }) { return cached }
        // `FOR UPDATE` locks only a row that exists: two transactions recording the first facts of
        // one purchase would both read nothing and the later commit would overwrite the other's
        // (possibly newer) fact. A lock on the key serializes them whether or not the row exists.
        try await lock(key.description)
        return try await row(
            """
            SELECT \(unsafeRaw: Self.purchaseColumns) FROM purchases
            WHERE store = \(bind: key.store.rawValue) AND id = \(bind: key.id)\(unsafeRaw: flavor.lockForUpdate)
            """
        ).map(purchase(from:))
    }

    func savePurchase(_ purchase: Purchase) async throws {
        if batch.savePurchase(purchase) { return }
        try await beforeStatement(writes: true)
        try await insertPurchases([purchase])
    }

    /// Upserts `purchases` (one row per key) in one statement.
    func insertPurchases(_ purchases: [Purchase]) async throws {
        let rows = try SQLRows(columnCount: 21, purchases) { purchase in
            [
                .text(purchase.key.store.rawValue), .text(purchase.key.id), .text(purchase.customerID?.rawValue),
                .text(purchase.app?.rawValue), .text(purchase.productID), .text(purchase.kind.rawValue),
                .text(purchase.environment.rawValue), .text(purchase.state.rawValue),
                .integer(StoredTime.milliseconds(purchase.expiresAt)),
                .integer(StoredTime.milliseconds(purchase.gracePeriodExpiresAt)), .boolean(purchase.autoRenew),
                .text(purchase.ownership.rawValue), .integer(purchase.quantity), .text(purchase.accountHint),
                .text(purchase.replaces?.store.rawValue), .text(purchase.replaces?.id),
                .integer(StoredTime.milliseconds(purchase.observedAt)), .boolean(purchase.needsAcknowledgement),
                .text(purchase.appTransactionID), .text(try Self.offersJSON(purchase.offers)),
                .text(purchase.basePlanID),
            ]
        }
        try await execute(
            """
            INSERT INTO purchases (\(unsafeRaw: Self.purchaseColumns))
            \(rows.source(flavor))
            ON CONFLICT (store, id) DO UPDATE SET
                customer_id = excluded.customer_id, app = COALESCE(excluded.app, purchases.app),
                product_id = excluded.product_id, kind = excluded.kind,
                environment = excluded.environment, state = excluded.state, expires_at = excluded.expires_at,
                grace_period_expires_at = excluded.grace_period_expires_at, auto_renew = excluded.auto_renew,
                ownership = excluded.ownership, quantity = excluded.quantity, account_hint = excluded.account_hint,
                replaces_store = excluded.replaces_store, replaces_id = excluded.replaces_id,
                observed_at = excluded.observed_at, needs_acknowledgement = excluded.needs_acknowledgement,
                app_transaction_id = COALESCE(excluded.app_transaction_id, purchases.app_transaction_id),
                offers = excluded.offers,
                base_plan_id = excluded.base_plan_id
            """)
    }

    static func offersJSON(_ offers: SubscriptionOffers?) throws -> String? {
        guard let offers else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(offers), as: UTF8.self)
    }

    func purchases(of customer: CustomerID) async throws -> [Purchase] {
        try await rows(
            """
            SELECT \(unsafeRaw: Self.purchaseColumns) FROM purchases
            WHERE customer_id = \(bind: customer.rawValue) ORDER BY \(unsafeRaw: flavor.byteOrder("store", "id"))
            """
        ).map(purchase(from:))
    }

    func purchases(of customer: CustomerID, after: PurchaseKey?, limit: Int) async throws -> [Purchase] {
        let order = flavor.byteOrder("store", "id")
        let following: SQLQueryString =
            after.map { "AND (\(unsafeRaw: order)) > (\(bind: $0.store.rawValue), \(bind: $0.id))" } ?? ""
        return try await select(
            """
            SELECT \(unsafeRaw: Self.purchaseColumns) FROM purchases
            WHERE customer_id = \(bind: customer.rawValue) \(following)
            ORDER BY \(unsafeRaw: order) LIMIT \(bind: limit)
            """
        ).map(purchase(from:))
    }

    func latestPurchase(of customer: CustomerID, app: AppID, store: Store) async throws -> PurchaseKey? {
        // `store` compared in the collation `purchases_customer` holds it in: PostgreSQL matches an
        // index column only with its own collation (otherwise the store is filtered row by row).
        guard
            let found = try await selectOne(
                """
                SELECT id FROM purchases
                WHERE customer_id = \(bind: customer.rawValue) AND \(unsafeRaw: flavor.byteOrder("store")) = \(bind: store.rawValue)
                    AND app = \(bind: app.rawValue)
                ORDER BY observed_at DESC, \(unsafeRaw: flavor.byteOrder("id")) LIMIT 1
                """)
        else { return nil }
        return PurchaseKey(store: store, id: try RowReader(row: found, table: "purchases").string("id"))
    }

    func entitlementPurchases(of customer: CustomerID) async throws -> [Purchase] {
        if let cached = batch.read({ $0.entitlementPurchases[customer] }) { return cached }
        return try await select(
            """
            SELECT \(unsafeRaw: Self.purchaseColumns) FROM purchases
            WHERE customer_id = \(bind: customer.rawValue) AND kind <> 'consumable'
            ORDER BY \(unsafeRaw: flavor.byteOrder("store", "id"))
            """
        ).map(purchase(from:))
    }

    func unlinkedPurchases(accountHint: String) async throws -> [Purchase] {
        try await rows(
            """
            SELECT \(unsafeRaw: Self.purchaseColumns) FROM purchases
            WHERE account_hint = \(bind: accountHint) AND customer_id IS NULL ORDER BY observed_at, store, id
            """
        ).map(purchase(from:))
    }

    func purchasesNeedingAcknowledgement(store: Store, after last: Purchase?, limit: Int) async throws
        -> [Purchase]
    {
        // The keyset as one row-value comparison, which both backends answer from the index on
        // (store, observed_at, id); the flag is written as the partial index's own condition, which
        // SQLite needs to see literally to use it.
        let position: SQLQueryString =
            if let last {
                "AND (observed_at, id) > (\(bind: StoredTime.milliseconds(last.observedAt)), \(bind: last.key.id))"
            } else {
                ""
            }
        return try await rows(
            """
            SELECT \(unsafeRaw: Self.purchaseColumns) FROM purchases
            WHERE \(unsafeRaw: flavor.awaitingAcknowledgement) AND store = \(bind: store.rawValue) \(position)
            ORDER BY observed_at, id LIMIT \(bind: max(limit, 0))
            """
        ).map(purchase(from:))
    }

    func purchasesWithoutApp() async throws -> [Store: Int] {
        var counts: [Store: Int] = [:]
        for row in try await rows(
            "SELECT store, CAST(COUNT(*) AS BIGINT) AS count FROM purchases WHERE app IS NULL GROUP BY store")
        {
            let reader = RowReader(row: row, table: "purchases")
            counts[try reader.raw("store", as: Store.self)] = try reader.int("count")
        }
        return counts
    }

    func assignApp(_ app: AppID, toPurchasesOf store: Store) async throws -> Int {
        let updated = try await rows(
            """
            UPDATE purchases SET app = \(bind: app.rawValue)
            WHERE store = \(bind: store.rawValue) AND app IS NULL RETURNING id
            """)
        return updated.count
    }

    func subscriptionsOverdue(accessEndedBefore cutoff: Date, notRefreshedSince: Date, limit: Int) async throws
        -> [Purchase]
    {
        // Least recently asked first: one the store does not answer for stays overdue, and an order
        // by how long overdue alone asked about the same page each time it fell due again.
        try await rows(
            """
            SELECT \(unsafeRaw: Self.purchaseColumns) FROM purchases
            WHERE \(overdue(accessEndedBefore: cutoff, notRefreshedSince: notRefreshedSince))
            ORDER BY COALESCE(refreshed_at, 0), \(unsafeRaw: Self.accessEnd), store, id LIMIT \(bind: max(limit, 0))
            """
        ).map(purchase(from:))
    }

    func countSubscriptionsOverdue(accessEndedBefore cutoff: Date, notRefreshedSince: Date) async throws -> Int {
        try await countPurchases(where: overdue(accessEndedBefore: cutoff, notRefreshedSince: notRefreshedSince))
    }

    private func countPurchases(where condition: SQLQueryString) async throws -> Int {
        guard let row = try await selectOne("SELECT COUNT(*) AS count FROM purchases WHERE \(condition)") else {
            return 0
        }
        return try RowReader(row: row, table: "purchases").int("count")
    }

    /// When a subscription's access ends: its grace expiry in grace, its expiry otherwise.
    private static let accessEnd = """
        CASE WHEN state = 'grace_period' THEN COALESCE(grace_period_expires_at, expires_at) ELSE expires_at END
        """

    /// The overdue ones, for their page and their count. The expression, kind and states are those
    /// of the partial index `purchases_overdue` (migration 6), written literally so that both
    /// planners match them to it: only the overdue ones are read from the index, whatever else is
    /// stored.
    private func overdue(accessEndedBefore cutoff: Date, notRefreshedSince: Date) -> SQLQueryString {
        """
        kind = 'subscription' AND state IN ('active', 'canceled', 'grace_period') AND expires_at IS NOT NULL
          AND \(unsafeRaw: Self.accessEnd) < \(bind: StoredTime.milliseconds(cutoff))
          AND (refreshed_at IS NULL OR refreshed_at < \(bind: StoredTime.milliseconds(notRefreshedSince)))
        """
    }

    func subscriptionsAwaitingNews(lastNews: Range<Date>, notRefreshedSince: Date, limit: Int) async throws
        -> [Purchase]
    {
        // Least recently asked first: one asked about usually stays in its state, and an order by
        // silence alone asked about the same oldest page each time it fell due again, never
        // reaching the rest once more were due than `limit` per refresh interval. The sort costs
        // what is due (docs/storage.md has the figures).
        try await rows(
            """
            SELECT \(unsafeRaw: Self.purchaseColumns) FROM purchases
            WHERE \(awaitingNews(lastNews: lastNews, notRefreshedSince: notRefreshedSince))
            ORDER BY COALESCE(refreshed_at, 0), \(unsafeRaw: flavor.subscriptionLastNews), store, id \
            LIMIT \(bind: max(limit, 0))
            """
        ).map(purchase(from:))
    }

    func countSubscriptionsAwaitingNews(lastNews: Range<Date>, notRefreshedSince: Date) async throws -> Int {
        try await countPurchases(where: awaitingNews(lastNews: lastNews, notRefreshedSince: notRefreshedSince))
    }

    /// The ones awaiting news, for their page and their count. The expressions, kind and states are
    /// those of the partial index `purchases_awaiting_news` (migration 20): the range bounds its
    /// first column and the refreshed-since condition is read from its second, so only the due ones
    /// are read.
    private func awaitingNews(lastNews: Range<Date>, notRefreshedSince: Date) -> SQLQueryString {
        let lastNewsAt = flavor.subscriptionLastNews
        return """
            \(unsafeRaw: Migration.awaitingNewsCondition)
              AND \(unsafeRaw: lastNewsAt) >= \(bind: StoredTime.milliseconds(lastNews.lowerBound))
              AND \(unsafeRaw: lastNewsAt) < \(bind: StoredTime.milliseconds(lastNews.upperBound))
              AND COALESCE(refreshed_at, 0) < \(bind: StoredTime.milliseconds(notRefreshedSince))
            """
    }

    func markRefreshed(_ key: PurchaseKey, at date: Date) async throws {
        try await run(
            """
            UPDATE purchases SET refreshed_at = \(bind: StoredTime.milliseconds(date))
            WHERE store = \(bind: key.store.rawValue) AND id = \(bind: key.id)
            """)
    }

    // MARK: Transactions (billing events)

    static let transactionColumns = """
        store, id, purchase_id, product_id, purchased_at, quantity, revoked_at, refunded_fraction, observed_at,
        price_micros, currency, offer
        """

    func transactionRecord(from row: any SQLRow) throws -> TransactionRecord {
        let reader = RowReader(row: row, table: "transactions")
        let fact = TransactionFact(
            id: try reader.string("id"), productID: try reader.string("product_id"),
            purchasedAt: try reader.date("purchased_at"), quantity: try reader.int("quantity"),
            revokedAt: try reader.optionalDate("revoked_at"), refundedFraction: try reader.double("refunded_fraction"),
            observedAt: try reader.date("observed_at"),
            price: try reader.decodeIfPresent("price_micros", as: Int64.self).flatMap { micros in
                try reader.optionalString("currency").map { Price(micros: micros, currency: CurrencyCode($0)) }
            },
            offer: try reader.optionalRaw("offer", as: BillingOffer.self))
        let key = PurchaseKey(store: try reader.raw("store", as: Store.self), id: try reader.string("purchase_id"))
        return TransactionRecord(purchaseKey: key, fact: fact)
    }

    func transaction(store: Store, id: String) async throws -> TransactionRecord? {
        if let cached = batch.read({ $0.transactions[BatchReads.TransactionKey(store: store, id: id)] }) {
            return cached
        }
        return try await selectOne(
            """
            SELECT \(unsafeRaw: Self.transactionColumns) FROM transactions
            WHERE store = \(bind: store.rawValue) AND id = \(bind: id)
            """
        ).map(transactionRecord(from:))
    }

    func saveTransaction(_ record: TransactionRecord) async throws {
        if batch.saveTransaction(record) { return }
        try await beforeStatement(writes: true)
        try await insertTransactions([record])
    }

    /// Upserts `records` (one row per store and id) in one statement.
    func insertTransactions(_ records: [TransactionRecord]) async throws {
        let rows = SQLRows(columnCount: 12, records) { record in
            let fact = record.fact
            return [
                .text(record.purchaseKey.store.rawValue), .text(fact.id), .text(record.purchaseKey.id),
                .text(fact.productID), .integer(StoredTime.milliseconds(fact.purchasedAt)), .integer(fact.quantity),
                .integer(StoredTime.milliseconds(fact.revokedAt)), .double(fact.refundedFraction),
                .integer(StoredTime.milliseconds(fact.observedAt)), .integer(fact.price?.micros),
                .text(fact.price?.currency.rawValue), .text(fact.offer?.rawValue),
            ]
        }
        try await execute(
            """
            INSERT INTO transactions (\(unsafeRaw: Self.transactionColumns))
            \(rows.source(flavor))
            ON CONFLICT (store, id) DO UPDATE SET
                purchase_id = excluded.purchase_id, product_id = excluded.product_id,
                purchased_at = excluded.purchased_at, quantity = excluded.quantity, revoked_at = excluded.revoked_at,
                refunded_fraction = excluded.refunded_fraction, observed_at = excluded.observed_at,
                price_micros = excluded.price_micros, currency = excluded.currency, offer = excluded.offer
            """)
    }

    func transactions(of key: PurchaseKey) async throws -> [TransactionRecord] {
        if let cached = batch.read({ $0.transactionsOf[key] }) { return cached }
        return try await select(
            """
            SELECT \(unsafeRaw: Self.transactionColumns) FROM transactions
            WHERE store = \(bind: key.store.rawValue) AND purchase_id = \(bind: key.id)
            ORDER BY purchased_at, \(unsafeRaw: flavor.byteOrder("id"))
            """
        ).map(transactionRecord(from:))
    }

    // MARK: History

    func appendStateChange(_ change: StateChange) async throws {
        if batch.appendStateChange(change) { return }
        try await beforeStatement(writes: true)
        try await insertStateChanges([change])
    }

    /// Appends `changes` in order, in one statement.
    func insertStateChanges(_ changes: [StateChange]) async throws {
        let rows = SQLRows(columnCount: 9, changes) { change in
            [
                .text(change.key.store.rawValue), .text(change.key.id), .text(change.from?.rawValue),
                .text(change.to.rawValue), .integer(StoredTime.milliseconds(change.expiresAt)),
                .integer(StoredTime.milliseconds(change.observedAt)), .text(change.cause.source.rawValue),
                .text(change.cause.event), .text(change.cause.reference),
            ]
        }
        try await execute(
            """
            INSERT INTO state_changes
                (store, purchase_id, from_state, to_state, expires_at, observed_at, cause_source, cause_event,
                 cause_reference)
            \(rows.source(flavor))
            """)
    }

    func stateChanges(of key: PurchaseKey) async throws -> [StateChange] {
        try await rows(
            """
            SELECT store, purchase_id, from_state, to_state, expires_at, observed_at, cause_source, cause_event,
                   cause_reference
            FROM state_changes WHERE store = \(bind: key.store.rawValue) AND purchase_id = \(bind: key.id)
            ORDER BY seq
            """
        ).map { row in
            let reader = RowReader(row: row, table: "state_changes")
            return StateChange(
                key: PurchaseKey(store: try reader.raw("store", as: Store.self), id: try reader.string("purchase_id")),
                from: try reader.optionalRaw("from_state", as: SubscriptionState.self),
                to: try reader.raw("to_state", as: SubscriptionState.self),
                expiresAt: try reader.optionalDate("expires_at"), observedAt: try reader.date("observed_at"),
                cause: ChangeCause(
                    source: try reader.raw("cause_source", as: ChangeSource.self),
                    event: try reader.optionalString("cause_event"),
                    reference: try reader.optionalString("cause_reference")))
        }
    }

    func appendTransfer(_ transfer: OwnershipTransfer) async throws {
        try await run(
            """
            INSERT INTO ownership_transfers (store, purchase_id, from_customer, to_customer, policy, transferred_at)
            VALUES (\(bind: transfer.key.store.rawValue), \(bind: transfer.key.id), \(bind: transfer.from.rawValue),
                    \(bind: transfer.to.rawValue), \(bind: transfer.policy.rawValue),
                    \(bind: StoredTime.milliseconds(transfer.at)))
            """)
    }

    func transfers(of key: PurchaseKey) async throws -> [OwnershipTransfer] {
        try await rows(
            """
            SELECT store, purchase_id, from_customer, to_customer, policy, transferred_at FROM ownership_transfers
            WHERE store = \(bind: key.store.rawValue) AND purchase_id = \(bind: key.id) ORDER BY seq
            """
        ).map { row in
            let reader = RowReader(row: row, table: "ownership_transfers")
            return OwnershipTransfer(
                key: PurchaseKey(store: try reader.raw("store", as: Store.self), id: try reader.string("purchase_id")),
                from: CustomerID(try reader.string("from_customer")), to: CustomerID(try reader.string("to_customer")),
                policy: try reader.raw("policy", as: OwnershipPolicy.self), at: try reader.date("transferred_at"))
        }
    }

    // MARK: Ledger

    static let ledgerColumns = """
        customer_id, balance, amount, reason, idempotency_key, transaction_id, created_at
        """

    private func ledgerEntry(from row: any SQLRow) throws -> LedgerEntry {
        let reader = RowReader(row: row, table: "ledger_entries")
        return LedgerEntry(
            customerID: CustomerID(try reader.string("customer_id")), balance: try reader.string("balance"),
            amount: try reader.int("amount"), reason: try reader.raw("reason", as: LedgerEntry.Reason.self),
            idempotencyKey: try reader.string("idempotency_key"),
            transactionID: try reader.optionalString("transaction_id"), createdAt: try reader.date("created_at"))
    }

    func appendLedgerEntry(_ entry: LedgerEntry) async throws -> LedgerEntry {
        if let kept = batch.appendLedgerEntry(entry) { return kept }
        // RETURNING gives our row when it was inserted: one statement in the usual case.
        if let inserted = try await row(
            """
            INSERT INTO ledger_entries (\(unsafeRaw: Self.ledgerColumns))
            VALUES (\(bind: entry.customerID.rawValue), \(bind: entry.balance), \(bind: entry.amount),
                    \(bind: entry.reason.rawValue), \(bind: entry.idempotencyKey), \(bind: entry.transactionID),
                    \(bind: StoredTime.milliseconds(entry.createdAt)))
            ON CONFLICT (customer_id, idempotency_key) DO NOTHING
            RETURNING \(unsafeRaw: Self.ledgerColumns)
            """)
        {
            return try ledgerEntry(from: inserted)
        }
        // The key was taken: the earlier entry stands (on PostgreSQL possibly committed by a
        // concurrent transaction the insert waited for).
        guard
            let standing = try await row(
                """
                SELECT \(unsafeRaw: Self.ledgerColumns) FROM ledger_entries
                WHERE customer_id = \(bind: entry.customerID.rawValue)
                  AND idempotency_key = \(bind: entry.idempotencyKey)
                """)
        else {
            throw StorageError(.unavailable, "ledger entry '\(entry.idempotencyKey)' vanished right after its insert")
        }
        return try ledgerEntry(from: standing)
    }

    func lockBalances(of customers: [CustomerID]) async throws {
        // A batch took its customers' when it read ahead.
        let unlocked = customers.filter { customer in batch.read { $0.balances[customer] } == nil }
        try await lock(Set(unlocked).map { "balances:\($0.rawValue)" }.sorted())
    }

    func balances(of customer: CustomerID) async throws -> [String: Int] {
        if let cached = batch.read({ $0.balances[customer] }) { return cached }
        // Running totals, kept by a trigger on every ledger insert (migration 14).
        let sums = try await select(
            """
            SELECT balance, total FROM ledger_balances WHERE customer_id = \(bind: customer.rawValue)
            """)
        var balances: [String: Int] = [:]
        for row in sums {
            let reader = RowReader(row: row, table: "ledger_balances")
            balances[try reader.string("balance")] = try reader.int("total")
        }
        return balances
    }

    func ledgerPosted(customer: CustomerID, transactionID: String) async throws -> LedgerPosted {
        let found = try await row(
            """
            SELECT CAST(COALESCE(SUM(amount), 0) AS BIGINT) AS total, CAST(COUNT(*) AS BIGINT) AS entries
            FROM ledger_entries
            WHERE customer_id = \(bind: customer.rawValue) AND transaction_id = \(bind: transactionID)
            """)
        guard let found else { return LedgerPosted(total: 0, entries: 0) }
        let reader = RowReader(row: found, table: "ledger_entries")
        return LedgerPosted(total: try reader.int("total"), entries: try reader.int("entries"))
    }

    func ledgerPostedByCustomer(transactionID: String) async throws -> [CustomerID: LedgerPosted] {
        if let cached = batch.read({ $0.ledgerPosted[transactionID] }) { return cached }
        var posted: [CustomerID: LedgerPosted] = [:]
        for found in try await select(
            """
            SELECT customer_id, CAST(SUM(amount) AS BIGINT) AS total, CAST(COUNT(*) AS BIGINT) AS entries
            FROM ledger_entries WHERE transaction_id = \(bind: transactionID) GROUP BY customer_id
            """)
        {
            let reader = RowReader(row: found, table: "ledger_entries")
            posted[CustomerID(try reader.string("customer_id"))] = LedgerPosted(
                total: try reader.int("total"), entries: try reader.int("entries"))
        }
        return posted
    }

    func ledgerEntries(of customer: CustomerID) async throws -> [LedgerEntry] {
        try await rows(
            """
            SELECT \(unsafeRaw: Self.ledgerColumns) FROM ledger_entries
            WHERE customer_id = \(bind: customer.rawValue) ORDER BY seq
            """
        ).map(ledgerEntry(from:))
    }

    // MARK: Notification inbox

    /// A notification's columns, its payload's included (read from ``inboxWithPayloads``).
    static let inboxColumns = """
        store, dedupe_key, body, verified, received_at, status, attempts, next_attempt_at, last_error, processed_at
        """

    /// The inbox's own columns: what processing updates, without the payload (migration 16).
    static let inboxStateColumns = """
        store, dedupe_key, received_at, status, attempts, next_attempt_at, last_error, processed_at
        """

    /// The inbox with each notification's payload; `USING` merges the key columns, so
    /// ``inboxColumns`` names them unqualified.
    static let inboxWithPayloads = "inbox JOIN inbox_payloads USING (store, dedupe_key)"

    /// ``inboxColumns`` for a claim: the body only where no record was kept
    /// (``InboxNotification/bodyWasRead``).
    static let claimedInboxColumns = """
        store, dedupe_key, CASE WHEN verified IS NULL THEN body END AS body, verified, received_at, status, attempts,
        next_attempt_at, last_error, processed_at
        """

    /// A notification from a row of ``inboxColumns``, or of ``claimedInboxColumns`` when `claimed`.
    func notification(from row: any SQLRow, claimed: Bool = false) throws -> InboxNotification {
        let reader = RowReader(row: row, table: "inbox")
        let payloadReader = RowReader(row: row, table: "inbox_payloads")
        let verified = try payloadReader.decodeIfPresent("verified", as: Data.self)
        var notification = InboxNotification(
            store: try reader.raw("store", as: Store.self), dedupeKey: try reader.string("dedupe_key"),
            body: try StoredNotificationBody.decode(try payloadReader.data("body")), verified: verified,
            receivedAt: try reader.date("received_at"),
            status: try reader.raw("status", as: InboxNotification.Status.self), attempts: try reader.int("attempts"),
            lastError: try reader.optionalString("last_error"), processedAt: try reader.optionalDate("processed_at"))
        // The initializer fills a missing next attempt with the receipt time; keep what is stored.
        notification.nextAttemptAt = try reader.optionalDate("next_attempt_at")
        notification.bodyWasRead = !claimed || verified == nil
        return notification
    }

    func insertNotification(_ notification: InboxNotification) async throws -> Bool {
        try await insertNotifications([notification]).first ?? false
    }

    func insertNotifications(_ notifications: [InboxNotification]) async throws -> [Bool] {
        guard !notifications.isEmpty else { return [] }
        try await beforeStatement(writes: true)
        // Each key's payload is its first notification's (the one that counts as new).
        var firsts: [NotificationKey: InboxNotification] = [:]
        if flavor == .postgresql {
            for notification in notifications {
                let key = NotificationKey(store: notification.store, dedupeKey: notification.dedupeKey)
                if firsts[key] == nil { firsts[key] = notification }
            }
        }
        // Inserted in key order: a key another transaction has just inserted is waited for, so two
        // groups holding the same keys in different orders deadlocked on PostgreSQL (seen under a
        // loaded clean-clone CI run of `concurrentGroupsSharingKeysStoreEachOnce`).
        let ordered = notifications.sorted(by: Self.inKeyOrder)
        var inserted = Set<NotificationKey>()
        for chunk in flavor.statementChunks(ordered, limit: Self.rowsPerStatement) {
            let rows = SQLRows(columnCount: 8, chunk) { notification in
                [
                    .text(notification.store.rawValue), .text(notification.dedupeKey),
                    .integer(StoredTime.milliseconds(notification.receivedAt)), .text(notification.status.rawValue),
                    .integer(notification.attempts), .integer(StoredTime.milliseconds(notification.nextAttemptAt)),
                    .text(notification.lastError), .integer(StoredTime.milliseconds(notification.processedAt)),
                ]
            }
            // A key twice in one statement is inserted once: the second is a conflict with the first.
            let insert: SQLQueryString = """
                INSERT INTO inbox (\(unsafeRaw: Self.inboxStateColumns))
                \(rows.source(flavor))
                ON CONFLICT (store, dedupe_key) DO NOTHING RETURNING store, dedupe_key
                """
            let statement: SQLQueryString
            switch flavor {
            case .sqlite:
                statement = insert
            case .postgresql:
                // With their payloads, in one statement: a webhook group that fits one is then
                // stored without BEGIN and COMMIT (``Storage/insertNotifications(taking:)``). Only
                // keys this statement inserted get a payload; no other transaction can hold those.
                var keys = Set<NotificationKey>()
                let payloads = payloadRows(
                    chunk.compactMap { notification in
                        let key = NotificationKey(store: notification.store, dedupeKey: notification.dedupeKey)
                        return keys.insert(key).inserted ? firsts[key] : nil
                    })
                statement = """
                    WITH inserted AS (\(insert)),
                    payloads AS (
                        INSERT INTO inbox_payloads (store, dedupe_key, body, verified)
                        SELECT given.c1, given.c2, given.c3, given.c4
                        FROM (\(payloads.source(flavor, ordered: false))) AS given
                        JOIN inserted ON inserted.store = given.c1 AND inserted.dedupe_key = given.c2
                    )
                    SELECT store, dedupe_key FROM inserted
                    """
            }
            for row in try await fetch(statement) {
                let reader = RowReader(row: row, table: "inbox")
                inserted.insert(
                    NotificationKey(
                        store: try reader.raw("store", as: Store.self), dedupeKey: try reader.string("dedupe_key")))
            }
        }
        // Each inserted key is new for its first notification only.
        var outcomes: [Bool] = []
        var new: [InboxNotification] = []
        var seen = Set<NotificationKey>()
        for notification in notifications {
            let key = NotificationKey(store: notification.store, dedupeKey: notification.dedupeKey)
            let isNew = inserted.contains(key) && seen.insert(key).inserted
            outcomes.append(isNew)
            if isNew { new.append(notification) }
        }
        guard flavor == .sqlite else { return outcomes }
        new.sort(by: Self.inKeyOrder)
        for chunk in flavor.statementChunks(new, limit: Self.rowsPerStatement) {
            try await execute(
                "INSERT INTO inbox_payloads (store, dedupe_key, body, verified) \(payloadRows(chunk).source(flavor))")
        }
        return outcomes
    }

    /// The rows of `inbox_payloads` for `notifications`.
    private func payloadRows(_ notifications: [InboxNotification]) -> SQLRows {
        SQLRows(columnCount: 4, notifications) { notification in
            [
                .text(notification.store.rawValue), .text(notification.dedupeKey),
                .blob(StoredNotificationBody.encode(notification.body)), .blob(notification.verified),
            ]
        }
    }

    /// The order group inserts write inbox rows in (see ``insertNotifications(_:)``).
    private static func inKeyOrder(_ a: InboxNotification, _ b: InboxNotification) -> Bool {
        (a.store.rawValue, a.dedupeKey) < (b.store.rawValue, b.dedupeKey)
    }

    private struct NotificationKey: Hashable {
        var store: Store
        var dedupeKey: String
    }

    func notification(store: Store, dedupeKey: String) async throws -> InboxNotification? {
        try await row(
            """
            SELECT \(unsafeRaw: Self.inboxColumns) FROM \(unsafeRaw: Self.inboxWithPayloads)
            WHERE store = \(bind: store.rawValue) AND dedupe_key = \(bind: dedupeKey)
            """
        ).map { try notification(from: $0) }
    }

    func lockDueNotifications(now: Date, limit: Int) async throws -> [InboxNotification] {
        guard limit > 0 else { return [] }
        // Straight from the partial index of due rows, in its order: a claim reads only what it
        // takes, whatever the backlog. Only inbox rows are locked, and the payloads joined by key
        // to those alone: locked above the join, a row another claim holds was joined to its
        // payload before it was skipped, and with two instances' workers holding theirs while
        // they waited for one customer's lock, a claim took 10 ms (PostgreSQL ingest benchmark).
        // A body is read only where no record was kept: processing reads the record.
        let due = try await rows(
            """
            SELECT \(unsafeRaw: Self.claimedInboxColumns)
            FROM (
                SELECT \(unsafeRaw: Self.inboxStateColumns)
                FROM inbox\(unsafeRaw: flavor.indexedBy("inbox_due_in_order"))
                WHERE status IN ('pending', 'failed') AND next_attempt_at <= \(bind: StoredTime.milliseconds(now))
                ORDER BY next_attempt_at, store, dedupe_key
                LIMIT \(bind: limit)\(unsafeRaw: flavor.lockSkippingLocked)
            ) AS due JOIN inbox_payloads USING (store, dedupe_key)
            """
        ).map { try notification(from: $0, claimed: true) }
        return due.sorted {
            ($0.receivedAt, $0.store.rawValue, $0.dedupeKey) < ($1.receivedAt, $1.store.rawValue, $1.dedupeKey)
        }
    }

    func leaseNotifications(_ notifications: [InboxNotification], until: Date) async throws -> [InboxNotification] {
        guard !notifications.isEmpty else { return [] }
        // The keys go in as a relation (``pairs(_:)``) PostgreSQL joins on the whole key: through the
        // primary key once it has statistics, by hashing before. As a list of row values
        // (`IN ((?, ?), …)`) an inbox not yet analyzed (a new deployment's first burst, the ingest
        // benchmark's) was searched by `store` alone, every key tested against each of a store's
        // notifications: 6–10 ms a claim after 3,000 notifications.
        try await run(
            """
            UPDATE inbox SET next_attempt_at = \(bind: StoredTime.milliseconds(until))
            WHERE (store, dedupe_key) IN (\(pairs(notifications.map { ($0.store.rawValue, $0.dedupeKey) })))
            """)
        return notifications.map {
            var leased = $0
            leased.nextAttemptAt = until
            return leased
        }
    }

    /// Claims the rows of `table` (keyed by `store` and `key`) that are `due` and whose
    /// `next_attempt_at` has come, at most `limit` in `orderBy` order (the order of `index`, a
    /// partial index over the `due` rows, so a claim reads only what it takes), by moving their next attempt
    /// past a lease — in one statement; on PostgreSQL rows another worker has locked are skipped,
    /// so concurrent claims are disjoint. The refund request outbox is claimed so.
    func claim(
        from table: String, through index: String, key: String, due: String, now: Int64, orderBy: String, limit: Int,
        leasedUntil: Int64,
        returning columns: String
    ) async throws -> [any SQLRow] {
        try await rows(
            """
            WITH due AS MATERIALIZED (
                SELECT store AS due_store, \(unsafeRaw: key) AS due_key
                FROM \(unsafeRaw: table)\(unsafeRaw: flavor.indexedBy(index))
                WHERE \(unsafeRaw: due) AND next_attempt_at <= \(bind: now)
                ORDER BY \(unsafeRaw: orderBy)
                LIMIT \(bind: limit)\(unsafeRaw: flavor.lockSkippingLocked)
            )
            UPDATE \(unsafeRaw: table) SET next_attempt_at = \(bind: leasedUntil)
            WHERE (store, \(unsafeRaw: key)) IN (SELECT due_store, due_key FROM due)
            RETURNING \(unsafeRaw: columns)
            """)
    }

    func updateNotification(_ notification: InboxNotification) async throws {
        try await run(
            """
            UPDATE inbox SET status = \(bind: notification.status.rawValue), attempts = \(bind: notification.attempts),
                next_attempt_at = \(bind: StoredTime.milliseconds(notification.nextAttemptAt)),
                last_error = \(bind: notification.lastError),
                processed_at = \(bind: StoredTime.milliseconds(notification.processedAt))
            WHERE store = \(bind: notification.store.rawValue) AND dedupe_key = \(bind: notification.dedupeKey)
            """)
    }

    func markNotificationsProcessed(_ notifications: [InboxNotification], at date: Date) async throws {
        guard !notifications.isEmpty else { return }
        // A relation, as in ``leaseNotifications(_:until:)``: a list of row values had a not yet
        // analyzed inbox searched by store, each row tested against every key.
        try await run(
            """
            UPDATE inbox SET status = 'processed', attempts = attempts + 1, next_attempt_at = NULL,
                last_error = NULL, processed_at = \(bind: StoredTime.milliseconds(date))
            WHERE (store, dedupe_key) IN (\(pairs(notifications.map { ($0.store.rawValue, $0.dedupeKey) })))
            """)
    }

    func notifications(status: InboxNotification.Status, limit: Int) async throws -> [InboxNotification] {
        try await rows(
            """
            SELECT \(unsafeRaw: Self.inboxColumns) FROM \(unsafeRaw: Self.inboxWithPayloads)
            WHERE status = \(bind: status.rawValue)
            ORDER BY received_at, store, dedupe_key LIMIT \(bind: max(limit, 0))
            """
        ).map { try notification(from: $0) }
    }

    func notificationCounts() async throws -> [InboxNotification.Status: Int] {
        var counts = Dictionary(uniqueKeysWithValues: InboxNotification.Status.allCases.map { ($0, 0) })
        for row in try await rows("SELECT status, COUNT(*) AS count FROM inbox GROUP BY status") {
            let reader = RowReader(row: row, table: "inbox")
            counts[try reader.raw("status", as: InboxNotification.Status.self)] = try reader.int("count")
        }
        return counts
    }

    func unfinishedNotificationCounts() async throws -> [InboxNotification.Status: Int] {
        var counts: [InboxNotification.Status: Int] = [.pending: 0, .failed: 0]
        for row in try await rows(
            "SELECT status, COUNT(*) AS count FROM inbox WHERE status IN ('pending', 'failed') GROUP BY status")
        {
            let reader = RowReader(row: row, table: "inbox")
            counts[try reader.raw("status", as: InboxNotification.Status.self)] = try reader.int("count")
        }
        return counts
    }

    // MARK: API keys and cursors

    private static let apiKeyColumns = "id, name, secret_hash, scope, created_at"

    private func apiKey(from row: any SQLRow) throws -> APIKeyRecord {
        let reader = RowReader(row: row, table: "api_keys")
        return APIKeyRecord(
            id: try reader.string("id"), name: try reader.string("name"), secretHash: try reader.string("secret_hash"),
            scope: try reader.raw("scope", as: APIKeyRecord.Scope.self), createdAt: try reader.date("created_at"))
    }

    func apiKey(secretHash: String) async throws -> APIKeyRecord? {
        try await row(
            "SELECT \(unsafeRaw: Self.apiKeyColumns) FROM api_keys WHERE secret_hash = \(bind: secretHash)"
        ).map(apiKey(from:))
    }

    func saveAPIKey(_ key: APIKeyRecord) async throws {
        // Checked first so the usual conflict leaves a PostgreSQL transaction usable; the unique
        // index still catches a concurrent insert.
        if let holder = try await row(
            "SELECT id FROM api_keys WHERE secret_hash = \(bind: key.secretHash) AND id <> \(bind: key.id)")
        {
            let holderID = try RowReader(row: holder, table: "api_keys").string("id")
            throw StorageError(.conflict, "API key '\(holderID)' already has this secret")
        }
        try await run(
            """
            INSERT INTO api_keys (\(unsafeRaw: Self.apiKeyColumns))
            VALUES (\(bind: key.id), \(bind: key.name), \(bind: key.secretHash), \(bind: key.scope.rawValue),
                    \(bind: StoredTime.milliseconds(key.createdAt)))
            ON CONFLICT (id) DO UPDATE SET
                name = excluded.name, secret_hash = excluded.secret_hash, scope = excluded.scope,
                created_at = excluded.created_at
            """)
    }

    func apiKeys() async throws -> [APIKeyRecord] {
        try await rows("SELECT \(unsafeRaw: Self.apiKeyColumns) FROM api_keys ORDER BY created_at, id")
            .map(apiKey(from:))
    }

    func cursor(_ name: String) async throws -> String? {
        guard let found = try await row("SELECT value FROM cursors WHERE name = \(bind: name)") else { return nil }
        return try RowReader(row: found, table: "cursors").string("value")
    }

    func setCursor(_ name: String, to value: String) async throws {
        try await run(
            """
            INSERT INTO cursors (name, value) VALUES (\(bind: name), \(bind: value))
            ON CONFLICT (name) DO UPDATE SET value = excluded.value
            """)
    }

    // MARK: Job leases

    func acquireJobLease(_ name: String, holder: String, now: Date, until expiry: Date) async throws -> Bool {
        // Renewed or taken over by an update that matches only then, else inserted unless the row
        // exists: asking for a lease another holds writes nothing. (One upsert with a condition on
        // its update locked the row whenever the condition failed, on PostgreSQL a write: every
        // instance's every round of every job.)
        let expiresAt = StoredTime.milliseconds(expiry)
        let renewed = try await rows(
            """
            UPDATE job_leases SET holder = \(bind: holder), expires_at = \(bind: expiresAt)
            WHERE name = \(bind: name)
              AND (holder = \(bind: holder) OR expires_at <= \(bind: StoredTime.milliseconds(now)))
            RETURNING holder
            """)
        guard renewed.isEmpty else { return true }
        let inserted = try await rows(
            """
            INSERT INTO job_leases (name, holder, expires_at) VALUES (\(bind: name), \(bind: holder), \(bind: expiresAt))
            ON CONFLICT (name) DO NOTHING
            RETURNING holder
            """)
        return !inserted.isEmpty
    }

    func releaseJobLease(_ name: String, holder: String) async throws {
        try await run("DELETE FROM job_leases WHERE name = \(bind: name) AND holder = \(bind: holder)")
    }

    // MARK: Shared quotas

    func lockQuotaScope(_ scope: String) async throws {
        try await lock("quota:" + scope)
    }

    func quotaAdmissions(scope: String, after afterID: Int, since: Date) async throws -> [QuotaAdmission] {
        try await rows(
            """
            SELECT id, bucket, admitted_at FROM quota_admissions
            WHERE scope = \(bind: scope) AND id > \(bind: afterID)
              AND admitted_at > \(bind: StoredTime.milliseconds(since))
            ORDER BY id
            """
        ).map { row in
            let reader = RowReader(row: row, table: "quota_admissions")
            return QuotaAdmission(
                id: try reader.int("id"), bucket: try reader.string("bucket"), time: try reader.date("admitted_at"))
        }
    }

    func recordQuotaAdmission(scope: String, bucket: String, at time: Date) async throws -> Int {
        guard
            let inserted = try await row(
                """
                INSERT INTO quota_admissions (scope, bucket, admitted_at)
                VALUES (\(bind: scope), \(bind: bucket), \(bind: StoredTime.milliseconds(time)))
                RETURNING id
                """)
        else { throw StorageError(.unavailable, "recording a quota admission returned no id") }
        return try RowReader(row: inserted, table: "quota_admissions").int("id")
    }

    func pruneQuotaAdmissions(scope: String, through horizon: Date) async throws {
        try await run(
            """
            DELETE FROM quota_admissions
            WHERE scope = \(bind: scope) AND admitted_at <= \(bind: StoredTime.milliseconds(horizon))
            """)
    }
}
