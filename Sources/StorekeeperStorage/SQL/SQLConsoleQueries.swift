import Foundation
import SQLKit
import Storekeeper

/// The operators' console's reads and its action log (``ConsoleQueries``), on both backends.
extension SQLStorageTransaction {
    func purchases(storeID id: String) async throws -> [Purchase] {
        // One primary-key lookup per store.
        let stores = Store.allCases.map { "\(bind: $0.rawValue)" as SQLQueryString }.joined(separator: ", ")
        return try await rows(
            """
            SELECT \(unsafeRaw: Self.purchaseColumns) FROM purchases
            WHERE store IN (\(stores)) AND id = \(bind: id) ORDER BY store
            """
        ).map(purchase(from:))
    }

    func transactions(storeID id: String) async throws -> [TransactionRecord] {
        let stores = Store.allCases.map { "\(bind: $0.rawValue)" as SQLQueryString }.joined(separator: ", ")
        return try await rows(
            """
            SELECT \(unsafeRaw: Self.transactionColumns) FROM transactions
            WHERE store IN (\(stores)) AND id = \(bind: id) ORDER BY store
            """
        ).map(transactionRecord(from:))
    }

    func recentNotifications(status: InboxNotification.Status, after last: InboxPosition?, limit: Int)
        async throws -> [InboxNotification]
    {
        // `inbox_status (status, received_at)` read backwards; notifications that arrived together
        // (one group commit) share a time, so the position also names the store and key.
        let position: SQLQueryString =
            last.map {
                """
                AND (received_at, store, dedupe_key) < (\(bind: StoredTime.milliseconds($0.receivedAt)),
                    \(bind: $0.store.rawValue), \(bind: $0.dedupeKey))
                """
            } ?? ""
        return try await rows(
            """
            SELECT \(unsafeRaw: Self.inboxColumns) FROM inbox
            WHERE status = \(bind: status.rawValue) \(position)
            ORDER BY received_at DESC, store DESC, dedupe_key DESC LIMIT \(bind: max(limit, 0))
            """
        ).map(notification(from:))
    }

    // MARK: Action log

    private static let consoleActionColumns = "operator_name, action, target, detail, outcome, acted_at"

    private func consoleAction(from row: any SQLRow) throws -> ConsoleAction {
        let reader = RowReader(row: row, table: "console_actions")
        return ConsoleAction(
            operatorName: try reader.string("operator_name"), action: try reader.string("action"),
            target: try reader.string("target"), detail: try reader.string("detail"),
            outcome: try reader.string("outcome"), at: try reader.date("acted_at"))
    }

    func appendConsoleAction(_ action: ConsoleAction) async throws {
        try await run(
            """
            INSERT INTO console_actions (\(unsafeRaw: Self.consoleActionColumns))
            VALUES (\(bind: action.operatorName), \(bind: action.action), \(bind: action.target),
                    \(bind: action.detail), \(bind: action.outcome), \(bind: StoredTime.milliseconds(action.at)))
            """)
    }

    func consoleActions(target: String) async throws -> [ConsoleAction] {
        try await rows(
            """
            SELECT \(unsafeRaw: Self.consoleActionColumns) FROM console_actions
            WHERE target = \(bind: target) ORDER BY seq
            """
        ).map(consoleAction(from:))
    }

    func recentConsoleActions(limit: Int) async throws -> [ConsoleAction] {
        try await rows(
            """
            SELECT \(unsafeRaw: Self.consoleActionColumns) FROM console_actions
            ORDER BY seq DESC LIMIT \(bind: max(limit, 0))
            """
        ).map(consoleAction(from:))
    }

    // MARK: Overview

    /// The subscriptions the overview counts: those that grant access, and those in billing retry
    /// or paused (on hold), which may come back; expired, revoked and superseded ones (most of a
    /// mature database) are not read. Written literally, in the query and in the partial index
    /// `purchases_overview` alike: SQLite uses a partial index only for a query that repeats its
    /// condition, and the overdue refresh's query (whose states are a subset) cannot use it.
    static let overviewCondition =
        "kind = 'subscription' AND state IN ('active', 'canceled', 'grace_period', 'billing_retry', 'paused')"

    func subscriptionStateCounts() async throws -> [SubscriptionStateCount] {
        try await rows(
            """
            SELECT store, app, environment, state, COUNT(*) AS count FROM purchases
            WHERE \(unsafeRaw: Self.overviewCondition)
            GROUP BY store, app, environment, state
            """
        ).map { row in
            let reader = RowReader(row: row, table: "purchases")
            return SubscriptionStateCount(
                store: try reader.raw("store", as: Store.self),
                app: try reader.optionalString("app").map(AppID.init(rawValue:)),
                environment: try reader.raw("environment", as: PurchaseEnvironment.self),
                state: try reader.raw("state", as: SubscriptionState.self), count: try reader.int("count"))
        }
    }

    func subscriptionActivity(in range: Range<Date>) async throws -> [SubscriptionActivityCount] {
        let from = StoredTime.milliseconds(range.lowerBound)
        let to = StoredTime.milliseconds(range.upperBound)
        let ended = [SubscriptionState.expired, .revoked].map { "\(bind: $0.rawValue)" as SQLQueryString }
            .joined(separator: ", ")
        // Each reads one range of an index on the time column (`state_changes_observed`,
        // `transactions_purchased`, `transactions_revoked`) and each row's purchase by its key.
        let queries: [(SubscriptionActivityCount.Kind, SQLQueryString)] = [
            (
                .new,
                """
                SELECT p.store, p.app, p.environment, s.observed_at / 86400000 AS day, COUNT(*) AS count
                FROM state_changes s JOIN purchases p ON p.store = s.store AND p.id = s.purchase_id
                WHERE s.observed_at >= \(bind: from) AND s.observed_at < \(bind: to) AND s.from_state IS NULL
                    AND p.kind = 'subscription'
                GROUP BY p.store, p.app, p.environment, s.observed_at / 86400000
                """
            ),
            (
                .churned,
                """
                SELECT p.store, p.app, p.environment, s.observed_at / 86400000 AS day, COUNT(*) AS count
                FROM state_changes s JOIN purchases p ON p.store = s.store AND p.id = s.purchase_id
                WHERE s.observed_at >= \(bind: from) AND s.observed_at < \(bind: to) AND s.to_state IN (\(ended))
                    AND (s.from_state IS NULL OR s.from_state NOT IN (\(ended))) AND p.kind = 'subscription'
                GROUP BY p.store, p.app, p.environment, s.observed_at / 86400000
                """
            ),
            (
                .renewed,
                """
                SELECT p.store, p.app, p.environment, t.purchased_at / 86400000 AS day, COUNT(*) AS count
                FROM transactions t JOIN purchases p ON p.store = t.store AND p.id = t.purchase_id
                WHERE t.purchased_at >= \(bind: from) AND t.purchased_at < \(bind: to) AND p.kind = 'subscription'
                    AND EXISTS (
                        SELECT 1 FROM transactions e
                        WHERE e.store = t.store AND e.purchase_id = t.purchase_id AND e.purchased_at < t.purchased_at)
                GROUP BY p.store, p.app, p.environment, t.purchased_at / 86400000
                """
            ),
            (
                .refunded,
                """
                SELECT p.store, p.app, p.environment, t.revoked_at / 86400000 AS day, COUNT(*) AS count
                FROM transactions t JOIN purchases p ON p.store = t.store AND p.id = t.purchase_id
                WHERE t.revoked_at >= \(bind: from) AND t.revoked_at < \(bind: to)
                GROUP BY p.store, p.app, p.environment, t.revoked_at / 86400000
                """
            ),
        ]
        var counts: [SubscriptionActivityCount] = []
        for (kind, query) in queries {
            for row in try await rows(query) {
                let reader = RowReader(row: row, table: "purchases")
                counts.append(
                    SubscriptionActivityCount(
                        store: try reader.raw("store", as: Store.self),
                        app: try reader.optionalString("app").map(AppID.init(rawValue:)),
                        environment: try reader.raw("environment", as: PurchaseEnvironment.self), kind: kind,
                        day: Date(timeIntervalSince1970: Double(try reader.int("day")) * 86_400),
                        count: try reader.int("count")))
            }
        }
        return counts
    }
}

extension Migration {
    /// The operators' console: its action log (who did what, to what, with what outcome) and the
    /// indexes its overview reads: the subscriptions it counts (partial, covering the grouped
    /// columns), and state changes and billing events by time.
    static let consoleActions = Migration(
        version: 10, name: "operators' console",
        sqlite: [
            """
            CREATE TABLE console_actions (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                operator_name TEXT NOT NULL,
                action TEXT NOT NULL,
                target TEXT NOT NULL,
                detail TEXT NOT NULL,
                outcome TEXT NOT NULL,
                acted_at INTEGER NOT NULL
            ) STRICT
            """,
            "CREATE INDEX console_actions_target ON console_actions (target, seq)",
            """
            CREATE INDEX purchases_overview ON purchases (store, app, environment, state)
            WHERE kind = 'subscription' AND state IN ('active', 'canceled', 'grace_period', 'billing_retry', 'paused')
            """,
            "CREATE INDEX state_changes_observed ON state_changes (observed_at)",
            "CREATE INDEX transactions_purchased ON transactions (purchased_at)",
            "CREATE INDEX transactions_revoked ON transactions (revoked_at) WHERE revoked_at IS NOT NULL",
        ],
        postgresql: [
            """
            CREATE TABLE console_actions (
                seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                operator_name TEXT NOT NULL,
                action TEXT NOT NULL,
                target TEXT NOT NULL,
                detail TEXT NOT NULL,
                outcome TEXT NOT NULL,
                acted_at BIGINT NOT NULL
            )
            """,
            "CREATE INDEX console_actions_target ON console_actions (target, seq)",
            """
            CREATE INDEX purchases_overview ON purchases (store, app, environment, state)
            WHERE kind = 'subscription' AND state IN ('active', 'canceled', 'grace_period', 'billing_retry', 'paused')
            """,
            "CREATE INDEX state_changes_observed ON state_changes (observed_at)",
            "CREATE INDEX transactions_purchased ON transactions (purchased_at)",
            "CREATE INDEX transactions_revoked ON transactions (revoked_at) WHERE revoked_at IS NOT NULL",
        ])
}
