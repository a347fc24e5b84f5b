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
            SELECT \(unsafeRaw: Self.inboxColumns) FROM \(unsafeRaw: Self.inboxWithPayloads)
            WHERE status = \(bind: status.rawValue) \(position)
            ORDER BY received_at DESC, store DESC, dedupe_key DESC LIMIT \(bind: max(limit, 0))
            """
        ).map { try notification(from: $0) }
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

    func recentEvents(of customer: CustomerID, limit: Int) async throws -> [StoredEvent] {
        // `events_by_customer` (customer_id, position): one customer's rows, sorted here.
        try await rows(
            """
            SELECT \(unsafeRaw: Self.eventColumns) FROM events WHERE customer_id = \(bind: customer.rawValue)
            ORDER BY seq DESC LIMIT \(bind: max(limit, 0))
            """
        ).map(storedEvent(from:))
    }

    // MARK: Overview

    /// The subscriptions the overview's recount of states reads (``countOverviewStates(day:)``):
    /// those that grant access, and those in billing retry or paused (on hold), which may come
    /// back; expired, revoked and superseded ones (most of a mature database) are not read. Written literally, in the query and in the partial index
    /// `purchases_overview` alike: SQLite uses a partial index only for a query that repeats its
    /// condition, and the overdue refresh's query (whose states are a subset) cannot use it.
    static let overviewCondition =
        "kind = 'subscription' AND state IN ('active', 'canceled', 'grace_period', 'billing_retry', 'paused')"
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
