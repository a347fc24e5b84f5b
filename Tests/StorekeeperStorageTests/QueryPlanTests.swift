import Foundation
import Logging
import NIOCore
import SQLKit
import Storekeeper
import Synchronization
import Testing

@testable import StorekeeperStorage

/// The background jobs' and the customer view's queries are answered from the indexes
/// docs/storage.md ("Scale: the queries and their indexes") names, on both backends: the storage's
/// own statements, run as `EXPLAIN QUERY PLAN` (SQLite) or `EXPLAIN` (PostgreSQL) with their real
/// parameters, on a database with enough rows that PostgreSQL's planner, after `ANALYZE`, prefers
/// an index where one fits.
@Suite struct QueryPlanTests {
    @Test(arguments: StorageBackend.available)
    func migrationSixCreatesTheScaleIndexes(backend: StorageBackend) async throws {
        try await TestDatabase.withFresh(backend) { storage, _ async throws in
            let names = try await storage.transaction { transaction async throws -> [String] in
                let database = try #require(transaction as? SQLStorageTransaction).database
                let query: SQLQueryString =
                    switch backend {
                    case .sqlite: "SELECT name FROM sqlite_master WHERE type = 'index'"
                    case .postgresql:
                        "SELECT indexname AS name FROM pg_indexes WHERE schemaname = current_schema()"
                    }
                return try await database.raw(query).all().map { try $0.decode(column: "name", as: String.self) }
            }
            for index in ["purchases_overdue", "purchases_without_app", "purchases_awaiting_news"] {
                #expect(names.contains(index), "\(index) missing on \(backend)")
            }
            // Replaced by purchases_overdue.
            #expect(!names.contains("purchases_by_state_and_expiry"))
            // Replaced by the running totals of migration 14.
            #expect(!names.contains("ledger_entries_balances"))
        }
    }

    @Test(arguments: StorageBackend.available)
    func jobAndCustomerViewQueriesUseTheirIndexes(backend: StorageBackend) async throws {
        try await withFresh(backend, rows: Self.rows(backend)) { storage in
            let now = Date(timeIntervalSince1970: Double(Self.now) / 1000)
            let customer = CustomerID("c42")
            let sweptSoFar = Purchase(
                key: .googlePlay("sub-300"), app: nil, productID: "p", kind: .subscription, environment: .production,
                state: .active, observedAt: Date(timeIntervalSince1970: 0.3))

            let overdue = try await plan(of: storage, backend) {
                _ = try await $0.subscriptionsOverdue(
                    accessEndedBefore: now - 3600, notRefreshedSince: now - 6 * 3600, limit: 100)
            }
            // The overdue ones alone, from the index, sorted least recently asked first.
            expect(overdue, uses: "purchases_overdue", sorted: true, backend)

            // Those waiting on news, the due ones alone read from the index and sorted, least
            // recently asked first; the refreshed-lately ones are skipped within the index
            // (PostgreSQL: an index condition, not a filter on each row read).
            let awaitingNews = try await plan(of: storage, backend) {
                _ = try await $0.subscriptionsAwaitingNews(
                    lastNews: (now - 60 * 86_400)..<(now - 6 * 3600), notRefreshedSince: now - 6 * 3600, limit: 100)
            }
            expect(awaitingNews, uses: "purchases_awaiting_news", sorted: true, backend)
            // Their counts (the refresh's due gauges) read the same index ranges, unsorted.
            let overdueCount = try await plan(of: storage, backend) {
                _ = try await $0.countSubscriptionsOverdue(
                    accessEndedBefore: now - 3600, notRefreshedSince: now - 6 * 3600)
            }
            expect(overdueCount, uses: "purchases_overdue", sorted: false, backend)
            let awaitingNewsCount = try await plan(of: storage, backend) {
                _ = try await $0.countSubscriptionsAwaitingNews(
                    lastNews: (now - 60 * 86_400)..<(now - 6 * 3600), notRefreshedSince: now - 6 * 3600)
            }
            expect(awaitingNewsCount, uses: "purchases_awaiting_news", sorted: false, backend)
            if backend == .postgresql {
                #expect(
                    awaitingNews.split(separator: "\n").contains {
                        $0.contains("Index Cond:") && $0.contains("COALESCE(refreshed_at")
                    }, "\(awaitingNews)")
            }

            let firstSweepPage = try await plan(of: storage, backend) {
                _ = try await $0.purchasesNeedingAcknowledgement(store: .googlePlay, after: nil, limit: 100)
            }
            expect(firstSweepPage, uses: "purchases_awaiting_acknowledgement", sorted: false, backend)
            let nextSweepPage = try await plan(of: storage, backend) {
                _ = try await $0.purchasesNeedingAcknowledgement(store: .googlePlay, after: sweptSoFar, limit: 100)
            }
            expect(nextSweepPage, uses: "purchases_awaiting_acknowledgement", sorted: false, backend)
            // The keyset is a condition on the index, not a filter on every row before it.
            #expect(
                nextSweepPage.contains(backend == .sqlite ? "(observed_at,id)>(?,?)" : "ROW(observed_at, id) >"),
                "\(nextSweepPage)")

            // /metrics: the unfinished notifications, from the status index, not the whole inbox.
            let unfinished = try await plan(of: storage, backend) { _ = try await $0.unfinishedNotificationCounts() }
            expect(unfinished, uses: "inbox_", sorted: nil, backend)

            // Retention: a page of the oldest processed notifications, in the status index's order.
            let pruning = try await plan(of: storage, backend) {
                _ = try await $0.pruneNotifications(processedReceivedBefore: now, limit: 1000)
            }
            expect(pruning, uses: "inbox_status", sorted: false, backend)
            // … and deletes that page within its bounds: not a search of every processed
            // notification for each page (a million processed rows made each page take seconds).
            let page = try await storage.transaction {
                try await #require($0 as? SQLStorageTransaction).oldestProcessedNotifications(
                    receivedBefore: now, limit: 1000)
            }
            #expect(page.keys.count == 1000)
            let deletion = try await plan(of: storage, backend) {
                try await #require($0 as? SQLStorageTransaction).deleteProcessedNotifications(page)
            }
            switch backend {
            case .sqlite:
                #expect(
                    deletion.contains("inbox_status (status=? AND received_at<?)")
                        || deletion.contains("sqlite_autoindex_inbox_1"), "\(deletion)")
            case .postgresql:
                #expect(!deletion.contains("Seq Scan on inbox "), "\(deletion)")
            }

            let withoutApp = try await plan(of: storage, backend) { _ = try await $0.purchasesWithoutApp() }
            expect(withoutApp, uses: "purchases_without_app", sorted: nil, backend)
            let assign = try await plan(of: storage, backend) {
                _ = try await $0.assignApp(AppID("com.example.app"), toPurchasesOf: .appStore)
            }
            expect(assign, uses: "purchases_without_app", sorted: nil, backend)

            // The customer view: the customer by key, its purchases and its balances.
            let byID = try await plan(of: storage, backend) { _ = try await $0.customer(customer) }
            expect(
                byID, uses: backend == .sqlite ? "sqlite_autoindex_customers_1" : "customers_pkey", sorted: nil, backend
            )
            // Everything the view shows, together: on PostgreSQL one statement reading each table
            // through an index (the customer and its consent by their keys, its purchases but
            // consumables by their partial index, its balances by theirs). On SQLite three, of
            // which only the first is planned here (explained, it finds no customer); the other
            // two are `entitlementPurchases(of:)` and `balances(of:)`, planned below.
            let snapshot = try await plan(of: storage, backend) { _ = try await $0.customerSnapshot(customer) }
            let snapshotIndexes =
                backend == .sqlite
                ? ["sqlite_autoindex_customers_1", "sqlite_autoindex_consumption_consents_1"]
                : [
                    "customers_pkey", "consumption_consents_pkey", "purchases_customer_entitlements",
                    "ledger_balances_pkey",
                ]
            for index in snapshotIndexes { #expect(snapshot.contains(index), "\(index) missing:\n\(snapshot)") }
            expect(snapshot, uses: snapshotIndexes[0], sorted: nil, backend)
            let purchases = try await plan(of: storage, backend) { _ = try await $0.purchases(of: customer) }
            expect(purchases, uses: "purchases_customer", sorted: backend == .sqlite ? false : nil, backend)
            // A page of the purchase history after a cursor: read from the index in key order, the
            // rows before the cursor and past the page never read nor sorted (migration 22).
            let history = try await plan(of: storage, backend) {
                _ = try await $0.purchases(of: customer, after: .googlePlay("token-1"), limit: 101)
            }
            expect(history, uses: "purchases_customer", sorted: backend == .sqlite ? false : nil, backend)
            if backend == .postgresql {
                #expect(!history.contains("Sort"), "\(history)")
                #expect(
                    history.split(separator: "\n").contains { $0.contains("Index Cond:") && $0.contains("store") },
                    "\(history)")
            }
            // The transaction an offer's signature names: from the customer's purchases on the
            // store, by the same index (a coin buyer's thousands are scanned there, not decoded).
            let latest = try await plan(of: storage, backend) {
                _ = try await $0.latestPurchase(of: customer, app: AppID("com.example.app"), store: .appStore)
            }
            expect(latest, uses: "purchases_customer", sorted: nil, backend)
            expect(latest, searches: backend == .sqlite ? "purchases" : "purchases_customer", by: "store", backend)
            // What each event's entitlements are computed from: never a customer's consumables (a
            // customer with thousands of coin packs made every notification read them all).
            let entitling = try await plan(of: storage, backend) {
                _ = try await $0.entitlementPurchases(of: customer)
            }
            expect(
                entitling, uses: "purchases_customer_entitlements", sorted: backend == .sqlite ? false : nil, backend)
            // A transaction's credits with every customer that held them, by the transaction.
            let held = try await plan(of: storage, backend) {
                _ = try await $0.ledgerPostedByCustomer(transactionID: "coins-42")
            }
            expect(held, uses: "ledger_entries_by_transaction", sorted: nil, backend)
            // One customer's credits of a transaction, by the transaction too; and a customer's
            // entries by the unique (customer, idempotency key) index. No index on (customer,
            // transaction) is kept for them (migration 21).
            let heldByOne = try await plan(of: storage, backend) {
                _ = try await $0.ledgerPosted(customer: customer, transactionID: "coins-42")
            }
            expect(heldByOne, uses: "ledger_entries_by_transaction", sorted: nil, backend)
            let entries = try await plan(of: storage, backend) { _ = try await $0.ledgerEntries(of: customer) }
            expect(
                entries,
                uses: backend == .sqlite
                    ? "sqlite_autoindex_ledger_entries_1" : "ledger_entries_customer_id_idempotency_key_key",
                sorted: nil, backend)
            let balances = try await plan(of: storage, backend) { _ = try await $0.balances(of: customer) }
            // The running totals by their key: one row per balance, whatever the ledger holds.
            if backend == .sqlite {
                #expect(balances.contains("SEARCH ledger_balances USING PRIMARY KEY (customer_id=?)"), "\(balances)")
            } else {
                #expect(balances.contains("ledger_balances_pkey") && !balances.contains("Seq Scan"), "\(balances)")
            }
        }
    }

    /// A backlog (a store's redelivery after an outage, a mass renewal extension) leaves thousands
    /// due at once. A claim takes the first few in due order straight from an index that holds that
    /// order, with their payloads found by key: it must not read, and sort, every due row for each
    /// batch (it did, through the payload's overflow pages on SQLite, so processing slowed as the
    /// backlog grew).
    @Test(arguments: StorageBackend.available)
    func claimsReadOnlyTheRowsTheyClaim(backend: StorageBackend) async throws {
        try await withFresh(backend, rows: Self.backlog(backend)) { storage in
            let now = Date(timeIntervalSince1970: Double(Self.now) / 1000)
            let notifications = try await plan(of: storage, backend) {
                _ = try await $0.lockDueNotifications(now: now, limit: 50)
            }
            expect(notifications, uses: "inbox_due_in_order", sorted: false, backend)
            expect(
                notifications, searches: backend == .sqlite ? "inbox_payloads" : "inbox_payloads_pkey",
                by: "dedupe_key", backend)
            let requests = try await plan(of: storage, backend) {
                _ = try await $0.claimDueRefundRequests(now: now, limit: 50, lease: 60)
            }
            expect(requests, uses: "refund_requests_due_in_order", sorted: false, backend)
            if backend == .postgresql {
                for plan in [notifications, requests] { #expect(!plan.contains("Sort"), "\(plan)") }
                // Rows are locked before their payloads are joined: a row another claim holds is
                // skipped without its payload being read.
                let join = notifications.range(of: "Nested Loop") ?? notifications.range(of: " Join")
                let lock = notifications.range(of: "LockRows")
                #expect(join != nil && lock != nil, "\(notifications)")
                if let join, let lock { #expect(join.lowerBound < lock.lowerBound, "\(notifications)") }
            }
        }
    }

    /// The same claim on PostgreSQL without statistics (a new deployment's first burst) and with
    /// statistics from before the backlog (a large inbox, analyzed while all of it was processed):
    /// still the first rows of the due index, in its order.
    @Test(.enabled(if: StorageBackend.postgresURL != nil, StorageBackend.skippedPostgresMessage))
    func claimsReadOnlyTheRowsTheyClaimWhateverTheStatistics() async throws {
        for statistics in [Statistics.none, .stale] {
            try await withFresh(.postgresql, rows: Self.backlog(.postgresql, statistics: statistics)) { storage in
                let now = Date(timeIntervalSince1970: Double(Self.now) / 1000)
                let notifications = try await plan(of: storage, .postgresql) {
                    _ = try await $0.lockDueNotifications(now: now, limit: 50)
                }
                #expect(!notifications.contains("Seq Scan"), "\(statistics): \(notifications)")
                #expect(notifications.contains("inbox_due_in_order"), "\(statistics): \(notifications)")
                #expect(!notifications.contains("Sort"), "\(statistics): \(notifications)")
                #expect(!notifications.contains("Bitmap"), "\(statistics): \(notifications)")
            }
        }
    }

    /// What leases claimed notifications and what marks them processed find each notification by
    /// its whole key, whatever else the inbox holds.
    @Test(arguments: StorageBackend.available)
    func claimedNotificationsAreLeasedAndMarkedByTheirKeys(backend: StorageBackend) async throws {
        try await withFresh(backend, rows: Self.backlog(backend)) { storage in
            let claimed = (1...50).map { makeNotification("n-\($0 * 7)") }
            let leasing = try await plan(of: storage, backend) {
                _ = try await $0.leaseNotifications(claimed, until: Date(timeIntervalSince1970: 1))
            }
            expect(leasing, searches: backend == .sqlite ? "inbox" : "inbox_pkey", by: "dedupe_key", backend)
            let marking = try await plan(of: storage, backend) {
                try await $0.markNotificationsProcessed(claimed, at: Date(timeIntervalSince1970: 1))
            }
            expect(marking, searches: backend == .sqlite ? "inbox" : "inbox_pkey", by: "dedupe_key", backend)
        }
    }

    /// The same writes on an inbox PostgreSQL has no statistics for yet, as in a new deployment's
    /// first burst: it may read the few thousand rows whole, but must not test each row against
    /// every key. (With the keys as a list of row values it searched by `store` alone and filtered
    /// with one comparison per key: 6–10 ms a claim after 3,000 notifications.)
    @Test(.enabled(if: StorageBackend.postgresURL != nil, StorageBackend.skippedPostgresMessage))
    func claimedNotificationsAreNotTestedAgainstEveryKeyWithoutStatistics() async throws {
        try await withFresh(.postgresql, rows: Self.backlog(.postgresql, count: 3000, analyzed: false)) { storage in
            let claimed = (1...50).map { makeNotification("n-\($0 * 7)") }
            let leasing = try await plan(of: storage, .postgresql) {
                _ = try await $0.leaseNotifications(claimed, until: Date(timeIntervalSince1970: 1))
            }
            let marking = try await plan(of: storage, .postgresql) {
                try await $0.markNotificationsProcessed(claimed, at: Date(timeIntervalSince1970: 1))
            }
            for plan in [leasing, marking] {
                #expect(!plan.contains("(dedupe_key = 'n-7'::text) OR"), "each row tested against every key:\n\(plan)")
            }
        }
    }

    /// A webhook endpoint's due deliveries after a burst: thousands pending over 64 customers
    /// behind a long delivered history. A round takes the first few in position order that are
    /// their customer's earliest pending, reading from the lowest pending position on, each
    /// customer's earlier pending ones searched by key. On PostgreSQL also without statistics (a
    /// new deployment's first burst) and with statistics from before the burst (on a large table a
    /// burst is too few changes for autovacuum): the earlier pending rows were an anti-join the
    /// planner then ran as a nested loop testing every pending row against every other (6.7 s a
    /// round at 5,858 pending in the webhook benchmark), and SQLite read the delivered history.
    @Test(
        arguments: StorageBackend.available.flatMap { backend in
            backend == .postgresql ? Statistics.allCases.map { (backend, $0) } : [(backend, .current)]
        })
    func dueDeliveriesAreReadFromTheLowestPendingOn(backend: StorageBackend, statistics: Statistics) async throws {
        try await withFresh(backend, rows: Self.deliveries(backend, statistics: statistics)) { storage in
            let due = try await plan(of: storage, backend) {
                _ = try await $0.dueDeliveries(endpoint: "hooks", now: Date(timeIntervalSince1970: 4e9), limit: 16)
            }
            expect(due, uses: "webhook_deliveries_due_in_order", sorted: false, backend)
            // A round that finds nothing due reads the lag from the first entry of the same index
            // (the oldest `occurred_at` was a scan of every pending delivery).
            let lag = try await plan(of: storage, backend) { _ = try await $0.oldestPendingDelivery(endpoint: "hooks") }
            expect(lag, uses: "webhook_deliveries_due_in_order", sorted: false, backend)
            if backend == .sqlite {
                // "SEARCH earlier USING INDEX webhook_deliveries_pending (endpoint=? AND ordering_key=? AND position<?)"
                #expect(
                    due.split(separator: "\n").contains {
                        $0.contains("INDEX webhook_deliveries_pending (") && $0.contains("ordering_key=?")
                    }, "\(due)")
            } else {
                expect(due, searches: "webhook_deliveries_pending", by: "ordering_key", backend)
                #expect(!due.contains("Join Filter"), "rows filtered against each other:\n\(due)")
                // With statistics from before the burst PostgreSQL expects a few pending and sorts
                // what it reads (each still searched by key); the table's autovacuum settings
                // bring the statistics up to date within a minute of a burst.
                if statistics != .stale { #expect(!due.contains("Sort"), "\(due)") }
            }
        }
    }

    /// Queueing a delivery asks whether an earlier one of its customer is pending, and ending one
    /// looks for the customer's next: each a search of `webhook_deliveries_pending` by key, not a
    /// read of the endpoint's pending deliveries (PostgreSQL also without statistics and with stale ones).
    @Test(
        arguments: StorageBackend.available.flatMap { backend in
            backend == .postgresql ? Statistics.allCases.map { (backend, $0) } : [(backend, .current)]
        })
    func queueingAndEndingSearchTheCustomersPendingDeliveries(backend: StorageBackend, statistics: Statistics)
        async throws
    {
        try await withFresh(backend, rows: Self.deliveries(backend, statistics: statistics)) { storage in
            let now = Date(timeIntervalSince1970: 4e9)
            let events = (19_990...19_999).map { position in
                StoredEvent(
                    position: position, id: UUID(), type: .balanceChanged, customerID: nil, environment: nil,
                    orderingKey: "c\(position % 64)", occurredAt: now, body: Data())
            }
            let queueing = try await plan(of: storage, backend) {
                try await $0.enqueueDeliveries(endpoint: "hooks", events: events, now: now)
            }
            let ended = EventDelivery(
                endpoint: "hooks", position: 14_001, eventID: UUID(), eventType: .balanceChanged, orderingKey: "c49",
                status: .delivered, attempts: 1, nextAttemptAt: nil, deliveredAt: now, occurredAt: now)
            let attempt = DeliveryAttempt(
                endpoint: "hooks", eventID: ended.eventID, position: ended.position, attempt: 1, attemptedAt: now,
                statusCode: 200, latencyMilliseconds: 5, error: nil)
            let ending = try await plan(of: storage, backend) {
                try await $0.recordDeliveryAttempts([(attempt, ended)])
            }
            for plan in [queueing, ending] {
                if backend == .sqlite {
                    // "SEARCH earlier USING INDEX webhook_deliveries_pending (endpoint=? AND ordering_key=? AND position<?)"
                    #expect(
                        plan.split(separator: "\n").contains {
                            $0.contains("INDEX webhook_deliveries_pending (") && $0.contains("ordering_key=?")
                        }, "\(plan)")
                    #expect(!plan.contains("SCAN earlier") && !plan.contains("SCAN waiting"), "\(plan)")
                } else {
                    expect(plan, searches: "webhook_deliveries_pending", by: "ordering_key", backend)
                    #expect(!plan.contains("Seq Scan on webhook_deliveries"), "\(plan)")
                }
                // Every search of the pending index by its customer: one by (endpoint, position)
                // alone reads the endpoint's pending deliveries (PostgreSQL chose it for the row
                // found to start, 39 ms a round in the webhook benchmark).
                #expect(
                    Self.searches(of: "webhook_deliveries_pending", in: plan).allSatisfy {
                        $0.contains("ordering_key")
                    }, "\(plan)")
            }
        }
    }

    /// The keys each search of `index` in `plan` uses: SQLite's "(endpoint=? AND …)", PostgreSQL's
    /// `Index Cond` under each scan of it ("(no condition)" for a scan of all its rows).
    static func searches(of index: String, in plan: String) -> [String] {
        let lines = plan.split(separator: "\n").map(String.init)
        return lines.indices.compactMap { number in
            let line = lines[number]
            if line.contains("INDEX \(index) (") { return line }
            guard
                line.contains("using \(index) on") || line.hasSuffix("Bitmap Index Scan on \(index)")
                    || line.contains("Bitmap Index Scan on \(index) ")
            else { return nil }
            return lines[(number + 1)...].prefix(3).first { $0.contains("Index Cond:") } ?? "(no condition)"
        }
    }

    /// PostgreSQL analyzes the delivery log after a burst whatever its size (see migration 23).
    @Test(.enabled(if: StorageBackend.postgresURL != nil, StorageBackend.skippedPostgresMessage))
    func theDeliveryLogIsAnalyzedAfterEveryFewThousandChanges() async throws {
        try await withFresh(.postgresql, rows: []) { storage in
            let options = try await storage.transaction { transaction in
                let database = try #require(transaction as? SQLStorageTransaction).database
                return try await database.raw(
                    "SELECT array_to_string(reloptions, ',') AS options FROM pg_class WHERE relname = 'webhook_deliveries'"
                ).all().first?.decode(column: "options", as: String?.self)
            }
            #expect(options == "autovacuum_analyze_scale_factor=0,autovacuum_analyze_threshold=5000")
        }
    }

    /// What PostgreSQL's planner knows of the rows a plan test reads.
    enum Statistics: CaseIterable, Sendable {
        /// Analyzed after the rows were written.
        case current
        /// Never analyzed.
        case none
        /// Analyzed before the last of the rows' changes.
        case stale
    }

    /// Checks that `plan` finds rows through `index` with `column` among the searched key's
    /// columns, not by filtering what an index on a prefix of the key returns.
    func expect(
        _ plan: String, searches index: String, by column: String, _ backend: StorageBackend,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let lines = plan.split(separator: "\n")
        switch backend {
        case .sqlite:
            // "SEARCH inbox USING INDEX sqlite_autoindex_inbox_1 (store=? AND dedupe_key=?)"
            #expect(
                lines.contains { $0.contains("SEARCH \(index) ") && $0.contains("\(column)=?") },
                "expected a search of \(index) by \(column):\n\(plan)", sourceLocation: sourceLocation)
            #expect(
                !lines.contains { $0.hasPrefix("SCAN \(index)") }, "a full scan:\n\(plan)",
                sourceLocation: sourceLocation)
        case .postgresql:
            #expect(plan.contains(index), "expected \(index) in the plan:\n\(plan)", sourceLocation: sourceLocation)
            #expect(
                lines.contains { $0.contains("Index Cond:") && $0.contains(column) },
                "expected \(column) in an index condition:\n\(plan)", sourceLocation: sourceLocation)
            #expect(
                !plan.contains("Seq Scan on \(index)")
                    && !lines.contains { $0.contains("Filter:") && $0.contains(column) },
                "rows filtered by \(column) after the index:\n\(plan)", sourceLocation: sourceLocation)
        }
    }

    /// Checks that `plan` reads `index` and reads no table whole; on SQLite also whether it sorts
    /// (unless `sorted` is nil): a page with a LIMIT that sorts has read everything that matches
    /// first. (PostgreSQL may well sort the few rows a partial index gives it, as its statistics
    /// suggest; what it must not do is read the table.)
    func expect(
        _ plan: String, uses index: String, sorted: Bool?, _ backend: StorageBackend,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(plan.contains(index), "expected \(index) in the plan:\n\(plan)", sourceLocation: sourceLocation)
        switch backend {
        case .sqlite:
            // A full scan reads "SCAN <table>"; a search through an index reads "SEARCH".
            // A claim's materialized `due` holds at most its LIMIT of rows: reading it whole is fine.
            let scans = plan.split(separator: "\n").filter {
                $0.contains("SCAN ") && !$0.contains("INDEX \(index)") && $0 != "SCAN due"
            }
            #expect(scans.isEmpty, "a full scan in the plan:\n\(plan)", sourceLocation: sourceLocation)
            if let sorted {
                #expect(plan.contains("TEMP B-TREE") == sorted, "\(plan)", sourceLocation: sourceLocation)
            }
        case .postgresql:
            #expect(
                !plan.contains("Seq Scan"), "a sequential scan in the plan:\n\(plan)", sourceLocation: sourceLocation)
        }
    }

    /// Runs `body` on a fresh database of `backend` holding `rows` (statements run first, in one
    /// transaction), enough for PostgreSQL's planner to prefer an index where one fits.
    func withFresh(
        _ backend: StorageBackend, rows: [String], _ body: @escaping @Sendable (any Storage) async throws -> Void
    ) async throws {
        try await TestDatabase.withFresh(backend) { storage, _ async throws in
            try await storage.transaction { transaction async throws in
                let database = try #require(transaction as? SQLStorageTransaction).database
                for statement in rows { try await database.raw(SQLQueryString(statement)).run() }
            }
            try await body(storage)
        }
    }

    /// A `WITH` clause giving the table `n` the numbers 1 to `count`, on `backend`.
    static func numbers(upTo count: Int, _ backend: StorageBackend) -> String {
        switch backend {
        case .sqlite: "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(count))"
        case .postgresql: "WITH n(i) AS (SELECT CAST(generate_series(1, \(count)) AS BIGINT))"
        }
    }

    /// The plans of the statements `body` runs through the storage, one line per plan row.
    func plan(
        of storage: any Storage, _ backend: StorageBackend,
        _ body: @escaping @Sendable (any StorageTransaction) async throws -> Void
    ) async throws -> String {
        try await storage.transaction { transaction async throws in
            let real = try #require(transaction as? SQLStorageTransaction)
            let explaining = ExplainingDatabase(base: real.database, backend: backend)
            try await body(SQLStorageTransaction(database: explaining, flavor: real.flavor, errors: real.errors))
            return explaining.plans.lines.withLock { $0.joined(separator: "\n") }
        }
    }

    // MARK: Rows

    static let now: Int64 = 1_767_225_600_000

    /// 4,000 customers, each with a subscription (one in ten expired, one in 400 past its expiry
    /// without news, one in 300 awaiting acknowledgement on Google Play, one in 500 without an
    /// app) and a consumable with its ledger credit; then statistics for PostgreSQL's planner.
    static func rows(_ backend: StorageBackend) -> [String] {
        let numbers = Self.numbers(upTo: 4000, backend)
        let (yes, no) = backend == .sqlite ? ("1", "0") : ("TRUE", "FALSE")
        var statements = [
            """
            INSERT INTO customers (id, app_account_token, created_at)
            \(numbers) SELECT 'c' || i, 'token-' || i, 0 FROM n
            """,
            """
            INSERT INTO purchases (store, id, customer_id, app, product_id, kind, environment, state, expires_at,
                                   ownership, quantity, observed_at, needs_acknowledgement)
            \(numbers)
            SELECT CASE WHEN i % 2 = 0 THEN 'google_play' ELSE 'app_store' END, 'sub-' || i, 'c' || i,
                   CASE WHEN i % 500 = 0 THEN NULL ELSE 'com.example.app' END, 'pro', 'subscription', 'production',
                   CASE WHEN i % 10 = 1 THEN 'expired' WHEN i % 50 = 3 THEN 'billing_retry'
                        WHEN i % 50 = 5 THEN 'paused' ELSE 'active' END,
                   CASE WHEN i % 400 = 0 THEN \(now) - 2 * 86400000 WHEN i % 50 IN (3, 5) THEN \(now) - i * 60000
                        ELSE \(now) + i * 60000 END, 'purchased', 1, i,
                   CASE WHEN i % 300 = 0 THEN \(yes) ELSE \(no) END
            FROM n
            """,
            """
            INSERT INTO purchases (store, id, customer_id, app, product_id, kind, environment, state, ownership,
                                   quantity, observed_at, needs_acknowledgement)
            \(numbers)
            SELECT 'app_store', 'coins-' || i, 'c' || i, 'com.example.app', 'coins', 'consumable', 'production',
                   'active', 'purchased', 1, i, \(no)
            FROM n
            """,
            """
            INSERT INTO ledger_entries (customer_id, balance, amount, reason, idempotency_key, transaction_id,
                                        created_at)
            \(numbers) SELECT 'c' || i, 'coins', 100, 'purchase', 'credit-' || i, 'coins-' || i, i FROM n
            """,
            // A processed inbox with a few notifications still pending or failed.
            """
            INSERT INTO inbox (store, dedupe_key, received_at, status, attempts, next_attempt_at)
            \(numbers)
            SELECT 'app_store', 'n-' || i, i,
                   CASE WHEN i % 1000 = 0 THEN 'pending' WHEN i % 1000 = 1 THEN 'failed' ELSE 'processed' END, 1,
                   CASE WHEN i % 1000 < 2 THEN i ELSE NULL END
            FROM n
            """,
            Self.payloads(backend),
        ]
        if backend == .postgresql {
            statements.append("ANALYZE customers, purchases, ledger_entries, inbox, inbox_payloads")
        }
        return statements
    }
}

extension QueryPlanTests {
    /// `count` notifications and as many refund requests, all due (one in ten failed, due again
    /// later), then, if `analyzed`, statistics for PostgreSQL's planner.
    static func backlog(
        _ backend: StorageBackend, count: Int = 20000, analyzed: Bool = true, statistics: Statistics? = nil
    ) -> [String] {
        let numbers = Self.numbers(upTo: count, backend)
        let due = """
            UPDATE inbox SET status = CASE WHEN received_at % 10 = 0 THEN 'failed' ELSE 'pending' END,
                attempts = CASE WHEN received_at % 10 = 0 THEN 1 ELSE 0 END,
                next_attempt_at = CASE WHEN received_at % 10 = 0 THEN \(now) + received_at ELSE received_at END
            """
        if let statistics {
            // Written processed, then made due: with `.stale`, analyzed in between.
            let processed = """
                INSERT INTO inbox (store, dedupe_key, received_at, status, attempts, processed_at)
                \(numbers)
                SELECT 'app_store', 'n-' || i, i, 'processed', 1, i FROM n
                """
            // Payloads the size of an App Store notification's stored body and kept record: the
            // planner prices reading the table whole by its pages.
            let payloads = Self.payloads(backend, bytes: 3400)
            return switch statistics {
            case .current: [processed, payloads, due, "ANALYZE inbox, inbox_payloads"]
            case .none: [processed, payloads, due]
            case .stale: [processed, payloads, "ANALYZE inbox, inbox_payloads", due]
            }
        }
        var statements = [
            """
            INSERT INTO inbox (store, dedupe_key, received_at, status, attempts, next_attempt_at)
            \(numbers)
            SELECT 'app_store', 'n-' || i, i,
                   CASE WHEN i % 10 = 0 THEN 'failed' ELSE 'pending' END, CASE WHEN i % 10 = 0 THEN 1 ELSE 0 END,
                   CASE WHEN i % 10 = 0 THEN \(now) + i ELSE i END
            FROM n
            """,
            Self.payloads(backend),
            """
            INSERT INTO refund_requests (store, id, purchase_id, transaction_id, app, environment, requested_at,
                                         deadline, status, attempts, next_attempt_at, updated_at)
            \(numbers)
            SELECT 'app_store', 'r-' || i, 'p-' || i, 't-' || i, 'com.example.app', 'production', i,
                   \(now) + 43200000, 'pending', 0, i, i
            FROM n
            """,
        ]
        if backend == .postgresql && analyzed {
            statements.append("ANALYZE inbox, inbox_payloads, refund_requests")
        }
        return statements
    }
}

extension QueryPlanTests {
    /// 20,000 events over 64 customers, each queued for the endpoint `hooks` (the first 14,000
    /// delivered, the rest pending) and for `archive` (every other one, all pending). With
    /// `.current`, analyzed afterwards; with `.stale`, analyzed while all of `hooks`' were delivered.
    static func deliveries(_ backend: StorageBackend, statistics: Statistics) -> [String] {
        let numbers = Self.numbers(upTo: 20000, backend)
        var statements = [
            """
            INSERT INTO events (position, id, type, customer_id, ordering_key, occurred_at, body)
            \(numbers)
            SELECT i, 'e-' || i, 'balance.changed', 'c' || (i % 64), 'c' || (i % 64), i,
                   \(backend == .sqlite ? "X'00'" : "'\\x00'::bytea")
            FROM n
            """,
            """
            INSERT INTO webhook_deliveries (endpoint, position, event_id, event_type, ordering_key, status, attempts,
                                            next_attempt_at, occurred_at)
            \(numbers)
            SELECT 'hooks', i, 'e-' || i, 'balance.changed', 'c' || (i % 64), 'delivered', 1, NULL, i FROM n
            """,
            """
            INSERT INTO webhook_deliveries (endpoint, position, event_id, event_type, ordering_key, status, attempts,
                                            next_attempt_at, occurred_at)
            \(numbers)
            SELECT 'archive', i, 'e-' || i, 'balance.changed', 'c' || (i % 64), 'pending', 0, i, i FROM n WHERE i % 2 = 0
            """,
        ]
        let burst =
            "UPDATE webhook_deliveries SET status = 'pending', attempts = 0, next_attempt_at = position"
            + " WHERE endpoint = 'hooks' AND position > 14000"
        switch (backend, statistics) {
        case (.postgresql, .current): statements += [burst, "ANALYZE events, webhook_deliveries"]
        case (.postgresql, .stale): statements += ["ANALYZE events, webhook_deliveries", burst]
        default: statements.append(burst)
        }
        return statements
    }
}

extension QueryPlanTests {
    /// A payload of `bytes` bytes (one by default) for every notification in the inbox.
    static func payloads(_ backend: StorageBackend, bytes: Int = 1) -> String {
        let body =
            switch backend {
            case .sqlite: "zeroblob(\(bytes))"
            case .postgresql: "convert_to(repeat('x', \(bytes)), 'UTF8')"
            }
        return """
            INSERT INTO inbox_payloads (store, dedupe_key, body)
            SELECT store, dedupe_key, \(body) FROM inbox
            """
    }
}

/// A database that runs every statement as `EXPLAIN QUERY PLAN` (SQLite) or `EXPLAIN`
/// (PostgreSQL) on `base`, with the same parameters, and keeps the plan instead of returning rows.
private struct ExplainingDatabase: SQLDatabase {
    let base: any SQLDatabase
    let backend: StorageBackend
    let plans = PlanLog()

    var logger: Logger { base.logger }
    var eventLoop: any EventLoop { base.eventLoop }
    var version: (any SQLDatabaseReportedVersion)? { base.version }
    var dialect: any SQLDialect { base.dialect }
    var queryLogLevel: Logger.Level? { base.queryLogLevel }

    private var explained: (prefix: String, column: String) {
        switch backend {
        case .sqlite: ("EXPLAIN QUERY PLAN ", "detail")
        case .postgresql: ("EXPLAIN ", "QUERY PLAN")
        }
    }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void)
        -> EventLoopFuture<Void>
    {
        let (prefix, column) = explained
        let plans = self.plans
        return base.execute(sql: SQLList([SQLRaw(prefix), query], separator: SQLRaw(""))) { row in
            let line = (try? row.decode(column: column, as: String.self)) ?? "?"
            plans.lines.withLock { $0.append(line) }
        }
    }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) async throws {
        try await execute(sql: query, onRow).get()
    }

    func withSession<R>(_ closure: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R {
        try await closure(self)
    }
}

/// The plan lines an ``ExplainingDatabase`` received.
private final class PlanLog: Sendable {
    let lines = Mutex<[String]>([])
}
