import Foundation
import SQLKit

/// One numbered change of the schema, with its SQL for each dialect. Migrations are applied in
/// order, each in its own transaction together with its row in `schema_migrations`, and are never
/// edited once released: a change is a new migration.
struct Migration: Sendable {
    let version: Int
    let name: String
    let sqlite: [String]
    let postgresql: [String]

    func statements(for flavor: SQLFlavor) -> [String] {
        switch flavor {
        case .sqlite: sqlite
        case .postgresql: postgresql
        }
    }
}

extension Migration {
    /// Every migration this build knows, oldest first.
    static let all: [Migration] = [
        initialSchema, refreshTracking, appsAndEnvironments, jobLeases, quotaAdmissions, scaleIndexes, verifiedInbox,
        refundDecisions, events, consoleActions, appTransactions, overviewRollup, webhookEndpoints,
        runningBalances, claimsInDueOrder, inboxPayloadsApart, payloadsUncompressed, balancesPerStatement,
        payloadsInTheirRows, subscriptionsAwaitingNews, ledgerWithoutCustomerTransactionIndex,
        customerPurchasesInKeyOrder, dueDeliveriesInOrder, basePlans,
    ]

    /// The version a fully migrated database reports.
    static var latestVersion: Int { all.last?.version ?? 0 }

    /// Tables for everything the ``StorageTransaction`` protocol keeps. Dates are integer
    /// milliseconds since 1970, enums their raw values; SQLite tables are STRICT so a wrongly typed
    /// value fails instead of being stored.
    static let initialSchema = Migration(
        version: 1, name: "initial schema",
        sqlite: [
            """
            CREATE TABLE customers (
                id TEXT NOT NULL PRIMARY KEY,
                app_account_token TEXT NOT NULL UNIQUE,
                created_at INTEGER NOT NULL
            ) STRICT
            """,
            """
            CREATE TABLE purchases (
                store TEXT NOT NULL,
                id TEXT NOT NULL,
                customer_id TEXT REFERENCES customers (id),
                product_id TEXT NOT NULL,
                kind TEXT NOT NULL,
                environment TEXT NOT NULL,
                state TEXT NOT NULL,
                expires_at INTEGER,
                grace_period_expires_at INTEGER,
                auto_renew INTEGER,
                ownership TEXT NOT NULL,
                quantity INTEGER NOT NULL,
                account_hint TEXT,
                replaces_store TEXT,
                replaces_id TEXT,
                observed_at INTEGER NOT NULL,
                needs_acknowledgement INTEGER NOT NULL,
                PRIMARY KEY (store, id)
            ) STRICT
            """,
            "CREATE INDEX purchases_customer ON purchases (customer_id)",
            "CREATE INDEX purchases_account_hint ON purchases (account_hint)",
            """
            CREATE INDEX purchases_awaiting_acknowledgement ON purchases (store, observed_at)
            WHERE needs_acknowledgement = 1
            """,
            """
            CREATE TABLE transactions (
                store TEXT NOT NULL,
                id TEXT NOT NULL,
                purchase_id TEXT NOT NULL,
                product_id TEXT NOT NULL,
                purchased_at INTEGER NOT NULL,
                quantity INTEGER NOT NULL,
                revoked_at INTEGER,
                refunded_fraction REAL NOT NULL,
                observed_at INTEGER NOT NULL,
                PRIMARY KEY (store, id)
            ) STRICT
            """,
            "CREATE INDEX transactions_purchase ON transactions (store, purchase_id)",
            """
            CREATE TABLE state_changes (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                store TEXT NOT NULL,
                purchase_id TEXT NOT NULL,
                from_state TEXT,
                to_state TEXT NOT NULL,
                expires_at INTEGER,
                observed_at INTEGER NOT NULL,
                cause_source TEXT NOT NULL,
                cause_event TEXT,
                cause_reference TEXT
            ) STRICT
            """,
            "CREATE INDEX state_changes_purchase ON state_changes (store, purchase_id, seq)",
            """
            CREATE TABLE ownership_transfers (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                store TEXT NOT NULL,
                purchase_id TEXT NOT NULL,
                from_customer TEXT NOT NULL,
                to_customer TEXT NOT NULL,
                policy TEXT NOT NULL,
                transferred_at INTEGER NOT NULL
            ) STRICT
            """,
            "CREATE INDEX ownership_transfers_purchase ON ownership_transfers (store, purchase_id, seq)",
            """
            CREATE TABLE ledger_entries (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                customer_id TEXT NOT NULL REFERENCES customers (id),
                balance TEXT NOT NULL,
                amount INTEGER NOT NULL,
                reason TEXT NOT NULL,
                idempotency_key TEXT NOT NULL,
                transaction_id TEXT,
                created_at INTEGER NOT NULL,
                UNIQUE (customer_id, idempotency_key)
            ) STRICT
            """,
            "CREATE INDEX ledger_entries_transaction ON ledger_entries (customer_id, transaction_id)",
            """
            CREATE TABLE inbox (
                store TEXT NOT NULL,
                dedupe_key TEXT NOT NULL,
                body BLOB NOT NULL,
                received_at INTEGER NOT NULL,
                status TEXT NOT NULL,
                attempts INTEGER NOT NULL,
                next_attempt_at INTEGER,
                last_error TEXT,
                processed_at INTEGER,
                PRIMARY KEY (store, dedupe_key)
            ) STRICT
            """,
            "CREATE INDEX inbox_due ON inbox (next_attempt_at) WHERE status IN ('pending', 'failed')",
            "CREATE INDEX inbox_status ON inbox (status, received_at)",
            """
            CREATE TABLE api_keys (
                id TEXT NOT NULL PRIMARY KEY,
                name TEXT NOT NULL,
                secret_hash TEXT NOT NULL UNIQUE,
                scope TEXT NOT NULL,
                created_at INTEGER NOT NULL
            ) STRICT
            """,
            """
            CREATE TABLE cursors (
                name TEXT NOT NULL PRIMARY KEY,
                value TEXT NOT NULL
            ) STRICT
            """,
        ],
        postgresql: [
            """
            CREATE TABLE customers (
                id TEXT NOT NULL PRIMARY KEY,
                app_account_token TEXT NOT NULL UNIQUE,
                created_at BIGINT NOT NULL
            )
            """,
            """
            CREATE TABLE purchases (
                store TEXT NOT NULL,
                id TEXT NOT NULL,
                customer_id TEXT REFERENCES customers (id),
                product_id TEXT NOT NULL,
                kind TEXT NOT NULL,
                environment TEXT NOT NULL,
                state TEXT NOT NULL,
                expires_at BIGINT,
                grace_period_expires_at BIGINT,
                auto_renew BOOLEAN,
                ownership TEXT NOT NULL,
                quantity BIGINT NOT NULL,
                account_hint TEXT,
                replaces_store TEXT,
                replaces_id TEXT,
                observed_at BIGINT NOT NULL,
                needs_acknowledgement BOOLEAN NOT NULL,
                PRIMARY KEY (store, id)
            )
            """,
            "CREATE INDEX purchases_customer ON purchases (customer_id)",
            "CREATE INDEX purchases_account_hint ON purchases (account_hint)",
            """
            CREATE INDEX purchases_awaiting_acknowledgement ON purchases (store, observed_at)
            WHERE needs_acknowledgement
            """,
            """
            CREATE TABLE transactions (
                store TEXT NOT NULL,
                id TEXT NOT NULL,
                purchase_id TEXT NOT NULL,
                product_id TEXT NOT NULL,
                purchased_at BIGINT NOT NULL,
                quantity BIGINT NOT NULL,
                revoked_at BIGINT,
                refunded_fraction DOUBLE PRECISION NOT NULL,
                observed_at BIGINT NOT NULL,
                PRIMARY KEY (store, id)
            )
            """,
            "CREATE INDEX transactions_purchase ON transactions (store, purchase_id)",
            """
            CREATE TABLE state_changes (
                seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                store TEXT NOT NULL,
                purchase_id TEXT NOT NULL,
                from_state TEXT,
                to_state TEXT NOT NULL,
                expires_at BIGINT,
                observed_at BIGINT NOT NULL,
                cause_source TEXT NOT NULL,
                cause_event TEXT,
                cause_reference TEXT
            )
            """,
            "CREATE INDEX state_changes_purchase ON state_changes (store, purchase_id, seq)",
            """
            CREATE TABLE ownership_transfers (
                seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                store TEXT NOT NULL,
                purchase_id TEXT NOT NULL,
                from_customer TEXT NOT NULL,
                to_customer TEXT NOT NULL,
                policy TEXT NOT NULL,
                transferred_at BIGINT NOT NULL
            )
            """,
            "CREATE INDEX ownership_transfers_purchase ON ownership_transfers (store, purchase_id, seq)",
            """
            CREATE TABLE ledger_entries (
                seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                customer_id TEXT NOT NULL REFERENCES customers (id),
                balance TEXT NOT NULL,
                amount BIGINT NOT NULL,
                reason TEXT NOT NULL,
                idempotency_key TEXT NOT NULL,
                transaction_id TEXT,
                created_at BIGINT NOT NULL,
                UNIQUE (customer_id, idempotency_key)
            )
            """,
            "CREATE INDEX ledger_entries_transaction ON ledger_entries (customer_id, transaction_id)",
            """
            CREATE TABLE inbox (
                store TEXT NOT NULL,
                dedupe_key TEXT NOT NULL,
                body BYTEA NOT NULL,
                received_at BIGINT NOT NULL,
                status TEXT NOT NULL,
                attempts BIGINT NOT NULL,
                next_attempt_at BIGINT,
                last_error TEXT,
                processed_at BIGINT,
                PRIMARY KEY (store, dedupe_key)
            )
            """,
            "CREATE INDEX inbox_due ON inbox (next_attempt_at) WHERE status IN ('pending', 'failed')",
            "CREATE INDEX inbox_status ON inbox (status, received_at)",
            """
            CREATE TABLE api_keys (
                id TEXT NOT NULL PRIMARY KEY,
                name TEXT NOT NULL,
                secret_hash TEXT NOT NULL UNIQUE,
                scope TEXT NOT NULL,
                created_at BIGINT NOT NULL
            )
            """,
            """
            CREATE TABLE cursors (
                name TEXT NOT NULL PRIMARY KEY,
                value TEXT NOT NULL
            )
            """,
        ])
}

extension Migration {
    /// When a subscription's state was last fetched from its store because no notification came
    /// (DESIGN.md, "Missed notifications"): a column outside ``Purchase``, which only storage and
    /// the refresh job read, so that one overdue subscription is asked about once per interval.
    static let refreshTracking = Migration(
        version: 2, name: "refresh tracking",
        sqlite: [
            "ALTER TABLE purchases ADD COLUMN refreshed_at INTEGER",
            "CREATE INDEX purchases_by_state_and_expiry ON purchases (state, expires_at)",
        ],
        postgresql: [
            "ALTER TABLE purchases ADD COLUMN refreshed_at BIGINT",
            "CREATE INDEX purchases_by_state_and_expiry ON purchases (state, expires_at)",
        ])
}

extension Migration {
    /// Every purchase records its app (bundle id or package name) and one of two environment
    /// names. Environments are rewritten from the stores' spellings (`Production`, `Sandbox`,
    /// Google's `Test`); the app cannot be known from what was stored, so it stays NULL here and
    /// is backfilled from the configuration (``StorageTransaction/assignApp(_:toPurchasesOf:)``)
    /// or from the purchase's next fact. The sweeper pages through unacknowledged purchases by
    /// (store, observed_at, id).
    static let appsAndEnvironments = Migration(
        version: 3, name: "apps and environments",
        sqlite: [
            "ALTER TABLE purchases ADD COLUMN app TEXT",
            "UPDATE purchases SET environment = CASE environment WHEN 'Production' THEN 'production' ELSE 'sandbox' END",
            "DROP INDEX purchases_awaiting_acknowledgement",
            """
            CREATE INDEX purchases_awaiting_acknowledgement ON purchases (store, observed_at, id)
            WHERE needs_acknowledgement = 1
            """,
        ],
        postgresql: [
            "ALTER TABLE purchases ADD COLUMN app TEXT",
            "UPDATE purchases SET environment = CASE environment WHEN 'Production' THEN 'production' ELSE 'sandbox' END",
            "DROP INDEX purchases_awaiting_acknowledgement",
            """
            CREATE INDEX purchases_awaiting_acknowledgement ON purchases (store, observed_at, id)
            WHERE needs_acknowledgement
            """,
        ])
}

extension Migration {
    /// Leases of background jobs (the catch-up, the acknowledgement sweep): with several instances
    /// on one database, each job runs on the instance holding its lease.
    static let jobLeases = Migration(
        version: 4, name: "job leases",
        sqlite: [
            """
            CREATE TABLE job_leases (
                name TEXT NOT NULL PRIMARY KEY,
                holder TEXT NOT NULL,
                expires_at INTEGER NOT NULL
            ) STRICT
            """
        ],
        postgresql: [
            """
            CREATE TABLE job_leases (
                name TEXT NOT NULL PRIMARY KEY,
                holder TEXT NOT NULL,
                expires_at BIGINT NOT NULL
            )
            """
        ])

    /// Version 5: calls admitted against a store quota, per scope (a Google Cloud project, an App
    /// Store app), so that instances sharing the database count them together. Rows of one scope
    /// are written only under that scope's lock, so their ids grow in the order admitted and an
    /// instance reads only the ids it has not seen yet.
    static let quotaAdmissions = Migration(
        version: 5, name: "quota admissions",
        sqlite: [
            """
            CREATE TABLE quota_admissions (
                id INTEGER PRIMARY KEY,
                scope TEXT NOT NULL,
                bucket TEXT NOT NULL,
                admitted_at INTEGER NOT NULL
            ) STRICT
            """,
            "CREATE INDEX quota_admissions_by_scope ON quota_admissions (scope, id)",
            "CREATE INDEX quota_admissions_by_time ON quota_admissions (scope, admitted_at)",
        ],
        postgresql: [
            """
            CREATE TABLE quota_admissions (
                id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                scope TEXT NOT NULL,
                bucket TEXT NOT NULL,
                admitted_at BIGINT NOT NULL
            )
            """,
            "CREATE INDEX quota_admissions_by_scope ON quota_admissions (scope, id)",
            "CREATE INDEX quota_admissions_by_time ON quota_admissions (scope, admitted_at)",
        ])
}

extension Migration {
    /// What a store's adapter verified when it accepted a notification travels with the stored
    /// row, so processing doesn't verify it a second time.
    static let verifiedInbox = Migration(
        version: 7, name: "verified inbox payloads",
        sqlite: ["ALTER TABLE inbox ADD COLUMN verified BLOB"],
        postgresql: ["ALTER TABLE inbox ADD COLUMN verified BYTEA"])
}

extension Migration {
    /// Indexes so that the background jobs' queries cost what is due rather than what is stored
    /// (docs/storage.md, "Scale: the queries and their indexes"):
    /// - the overdue refresh finds subscriptions by when their access ends (the expression
    ///   ``StorageTransaction/subscriptionsOverdue(accessEndedBefore:notRefreshedSince:limit:)``
    ///   orders by), only among those that can be overdue, instead of reading every active one;
    ///   it replaces the (state, expires_at) index, which only that query used;
    /// - the apps backfill at start-up counts and updates purchases without an app from an index
    ///   holding only those, instead of scanning every purchase;
    /// - a customer's balances are summed from the index alone (customer, balance, amount).
    static let scaleIndexes = Migration(
        version: 6, name: "scale indexes",
        sqlite: scaleIndexStatements, postgresql: scaleIndexStatements)

    /// The same SQL on both backends.
    private static let scaleIndexStatements = [
        "DROP INDEX purchases_by_state_and_expiry",
        """
        CREATE INDEX purchases_overdue ON purchases (
            (CASE WHEN state = 'grace_period' THEN COALESCE(grace_period_expires_at, expires_at) ELSE expires_at END),
            store, id)
        WHERE kind = 'subscription' AND state IN ('active', 'canceled', 'grace_period') AND expires_at IS NOT NULL
        """,
        "CREATE INDEX purchases_without_app ON purchases (store) WHERE app IS NULL",
        "CREATE INDEX ledger_entries_balances ON ledger_entries (customer_id, balance, amount)",
    ]
}

/// Applies migrations and reads the schema version over a backend's transactions.
struct Migrator: Sendable {
    let migrations: [Migration]
    let flavor: SQLFlavor

    var latestVersion: Int { migrations.map(\.version).max() ?? 0 }

    /// The version recorded in `database` (0 when `schema_migrations` does not exist yet).
    func currentVersion(_ database: any SQLDatabase) async throws -> Int {
        let presence: SQLQueryString =
            switch flavor {
            case .sqlite:
                """
                SELECT COUNT(*) AS present FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'
                """
            case .postgresql:
                "SELECT CAST(COUNT(to_regclass('schema_migrations')) AS BIGINT) AS present"
            }
        guard let presenceRow = try await database.raw(presence).first(),
            try RowReader(row: presenceRow, table: "schema_migrations").int("present") > 0
        else { return 0 }
        guard
            let versionRow = try await database.raw(
                "SELECT CAST(COALESCE(MAX(version), 0) AS BIGINT) AS version FROM schema_migrations"
            ).first()
        else { return 0 }
        return try RowReader(row: versionRow, table: "schema_migrations").int("version")
    }

    /// Applies the migration with `version` in `database` if it is the next one due; returns
    /// whether it did. Runs inside a transaction that holds the migration lock.
    func applyIfDue(_ migration: Migration, in database: any SQLDatabase, now: Date) async throws -> Bool {
        let recordTable: SQLQueryString =
            switch flavor {
            case .sqlite:
                """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL
                ) STRICT
                """
            case .postgresql:
                """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version BIGINT NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL
                )
                """
            }
        try await database.raw(recordTable).run()
        let current = try await currentVersion(database)
        try refuseNewer(current)
        guard current < migration.version else { return false }
        for statement in migration.statements(for: flavor) {
            try await database.raw(SQLQueryString(statement)).run()
        }
        try await database.raw(
            """
            INSERT INTO schema_migrations (version, name, applied_at)
            VALUES (\(bind: migration.version), \(bind: migration.name), \(bind: StoredTime.milliseconds(now)))
            """
        ).run()
        return true
    }

    func refuseNewer(_ current: Int) throws {
        guard current > latestVersion else { return }
        throw StorageError(
            .schemaTooNew,
            "the database is at schema version \(current), newer than version \(latestVersion) this build knows; "
                + "run a newer Storekeeper")
    }
}

extension Migration {
    /// What answering refund consumption requests needs (docs/storage.md, "Tables"): customers'
    /// consent, the usage apps report per purchase, and the outbox of requests to answer.
    static let refundDecisions = Migration(
        version: 8, name: "refund decisions",
        sqlite: refundDecisionStatements(boolean: "INTEGER", strict: " STRICT"),
        postgresql: refundDecisionStatements(boolean: "BOOLEAN", strict: ""))

    private static func refundDecisionStatements(boolean: String, strict: String) -> [String] {
        let integer = strict.isEmpty ? "BIGINT" : "INTEGER"
        return [
            """
            CREATE TABLE consumption_consents (
                customer_id TEXT NOT NULL PRIMARY KEY REFERENCES customers (id),
                consented \(boolean) NOT NULL,
                decided_at \(integer) NOT NULL
            )\(strict)
            """,
            """
            CREATE TABLE purchase_usage (
                store TEXT NOT NULL,
                purchase_id TEXT NOT NULL,
                customer_id TEXT NOT NULL REFERENCES customers (id),
                consumed_milli_percent \(integer) NOT NULL,
                delivery_problem TEXT,
                reported_at \(integer) NOT NULL,
                PRIMARY KEY (store, purchase_id)
            )\(strict)
            """,
            """
            CREATE TABLE refund_requests (
                store TEXT NOT NULL,
                id TEXT NOT NULL,
                purchase_id TEXT NOT NULL,
                transaction_id TEXT NOT NULL,
                app TEXT NOT NULL,
                environment TEXT NOT NULL,
                reason TEXT,
                requested_at \(integer) NOT NULL,
                deadline \(integer) NOT NULL,
                status TEXT NOT NULL,
                attempts \(integer) NOT NULL,
                next_attempt_at \(integer),
                answer TEXT,
                skip_reason TEXT,
                store_error_code \(integer),
                last_error TEXT,
                customer_id TEXT,
                updated_at \(integer) NOT NULL,
                PRIMARY KEY (store, id)
            )\(strict)
            """,
            "CREATE INDEX refund_requests_due ON refund_requests (next_attempt_at) WHERE status = 'pending'",
            "CREATE INDEX refund_requests_by_purchase ON refund_requests (store, purchase_id, requested_at)",
        ]
    }
}

extension Migration {
    /// Purchases carry their `appTransactionId`, and customers are linked to the app transactions
    /// they submitted, so a purchase without an account token reaches its customer.
    static let appTransactions = Migration(
        version: 11, name: "app transactions and offers",
        sqlite: appTransactionStatements(integer: "INTEGER", strict: " STRICT"),
        postgresql: appTransactionStatements(integer: "BIGINT", strict: ""))

    private static func appTransactionStatements(integer: String, strict: String) -> [String] {
        [
            "ALTER TABLE purchases ADD COLUMN app_transaction_id TEXT",
            "ALTER TABLE purchases ADD COLUMN offers TEXT",
            "CREATE INDEX purchases_app_transaction ON purchases (app, app_transaction_id) WHERE app_transaction_id IS NOT NULL",
            // What events' entitlements are computed from, without a customer's consumables.
            "CREATE INDEX purchases_customer_entitlements ON purchases (customer_id, store, id) WHERE kind <> 'consumable'",
            // A transaction's credits with every customer that held them (transfers).
            "CREATE INDEX ledger_entries_by_transaction ON ledger_entries (transaction_id) WHERE transaction_id IS NOT NULL",
            """
            CREATE TABLE app_transactions (
                app TEXT NOT NULL,
                id TEXT NOT NULL,
                environment TEXT NOT NULL,
                customer_id TEXT NOT NULL REFERENCES customers (id),
                linked_at \(integer) NOT NULL,
                PRIMARY KEY (app, id)
            )\(strict)
            """,
        ]
    }
    /// Version 9: the event outbox and the webhook delivery queue and log. Events are written
    /// unnumbered in the transaction of their change; `position` is given afterwards by one
    /// numbering at a time (``StorageTransaction/sequenceEvents(limit:)``), so the feed's cursor
    /// never passes an event that commits later.
    static let events = Migration(
        version: 9, name: "events and webhook deliveries",
        sqlite: [
            """
            CREATE TABLE events (
                seq INTEGER PRIMARY KEY,
                position INTEGER UNIQUE,
                id TEXT NOT NULL UNIQUE,
                type TEXT NOT NULL,
                customer_id TEXT,
                environment TEXT,
                ordering_key TEXT NOT NULL,
                occurred_at INTEGER NOT NULL,
                body BLOB NOT NULL
            ) STRICT
            """,
            "CREATE INDEX events_unsequenced ON events (seq) WHERE position IS NULL",
            "CREATE INDEX events_by_customer ON events (customer_id, position)",
            """
            CREATE TABLE webhook_deliveries (
                endpoint TEXT NOT NULL,
                position INTEGER NOT NULL,
                event_id TEXT NOT NULL,
                event_type TEXT NOT NULL,
                ordering_key TEXT NOT NULL,
                status TEXT NOT NULL,
                attempts INTEGER NOT NULL,
                next_attempt_at INTEGER,
                last_status INTEGER,
                last_error TEXT,
                delivered_at INTEGER,
                occurred_at INTEGER NOT NULL,
                PRIMARY KEY (endpoint, position)
            ) STRICT
            """,
            "CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (endpoint, ordering_key, position) WHERE status = 'pending'",
            """
            CREATE TABLE webhook_attempts (
                seq INTEGER PRIMARY KEY,
                endpoint TEXT NOT NULL,
                event_id TEXT NOT NULL,
                position INTEGER NOT NULL,
                attempt INTEGER NOT NULL,
                attempted_at INTEGER NOT NULL,
                status_code INTEGER,
                latency_ms INTEGER NOT NULL,
                error TEXT
            ) STRICT
            """,
            "CREATE INDEX webhook_attempts_by_endpoint ON webhook_attempts (endpoint, seq)",
        ],
        postgresql: [
            """
            CREATE TABLE events (
                seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                position BIGINT UNIQUE,
                id TEXT NOT NULL UNIQUE,
                type TEXT NOT NULL,
                customer_id TEXT,
                environment TEXT,
                ordering_key TEXT NOT NULL,
                occurred_at BIGINT NOT NULL,
                body BYTEA NOT NULL
            )
            """,
            "CREATE INDEX events_unsequenced ON events (seq) WHERE position IS NULL",
            "CREATE INDEX events_by_customer ON events (customer_id, position)",
            """
            CREATE TABLE webhook_deliveries (
                endpoint TEXT NOT NULL,
                position BIGINT NOT NULL,
                event_id TEXT NOT NULL,
                event_type TEXT NOT NULL,
                ordering_key TEXT NOT NULL,
                status TEXT NOT NULL,
                attempts BIGINT NOT NULL,
                next_attempt_at BIGINT,
                last_status BIGINT,
                last_error TEXT,
                delivered_at BIGINT,
                occurred_at BIGINT NOT NULL,
                PRIMARY KEY (endpoint, position)
            )
            """,
            "CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (endpoint, ordering_key, position) WHERE status = 'pending'",
            """
            CREATE TABLE webhook_attempts (
                seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                endpoint TEXT NOT NULL,
                event_id TEXT NOT NULL,
                position BIGINT NOT NULL,
                attempt BIGINT NOT NULL,
                attempted_at BIGINT NOT NULL,
                status_code BIGINT,
                latency_ms BIGINT NOT NULL,
                error TEXT
            )
            """,
            "CREATE INDEX webhook_attempts_by_endpoint ON webhook_attempts (endpoint, seq)",
        ])
}

extension Migration {
    /// Version 13: webhook endpoints created through the API, and the indexes pruning deletes by
    /// (a delivery's rows by its event's position; the lowest pending position).
    static let webhookEndpoints = Migration(
        version: 13, name: "webhook endpoints through the API",
        sqlite: webhookEndpointStatements(boolean: "INTEGER", integer: "INTEGER", strict: " STRICT"),
        postgresql: webhookEndpointStatements(boolean: "BOOLEAN", integer: "BIGINT", strict: ""))

    private static func webhookEndpointStatements(boolean: String, integer: String, strict: String) -> [String] {
        [
            // Filters and secrets as JSON lists; secrets in clear, as the configuration file keeps
            // them (deliveries are signed with them).
            """
            CREATE TABLE webhook_endpoints (
                name TEXT NOT NULL PRIMARY KEY,
                url TEXT NOT NULL,
                events TEXT NOT NULL,
                environments TEXT NOT NULL,
                secrets TEXT NOT NULL,
                enabled \(boolean) NOT NULL,
                created_at \(integer) NOT NULL,
                updated_at \(integer) NOT NULL
            )\(strict)
            """,
            "CREATE INDEX webhook_deliveries_by_position ON webhook_deliveries (position)",
            "CREATE INDEX webhook_deliveries_pending_by_position ON webhook_deliveries (position) WHERE status = 'pending'",
        ]
    }
}

extension Migration {
    /// Version 14: each customer's balances kept as running totals, so reading a balance costs one
    /// row instead of a sum over the customer's whole ledger (the ingest profile showed that sum
    /// as about a third of SQLite's writer time for a customer with thousands of credits). A
    /// trigger keeps them, so every writer of the ledger, of any version, keeps them right.
    static let runningBalances = Migration(
        version: 14, name: "running balances",
        sqlite: [
            ledgerBalancesTable(integer: "INTEGER", options: " STRICT, WITHOUT ROWID"),
            """
            CREATE TRIGGER ledger_balances_follow_entries AFTER INSERT ON ledger_entries BEGIN
                INSERT INTO ledger_balances (customer_id, balance, total)
                VALUES (NEW.customer_id, NEW.balance, NEW.amount)
                ON CONFLICT (customer_id, balance) DO UPDATE SET total = total + excluded.total;
            END
            """,
            // The migration's transaction holds SQLite's write lock: no entry lands in between.
            """
            INSERT INTO ledger_balances (customer_id, balance, total)
            SELECT customer_id, balance, SUM(amount) FROM ledger_entries GROUP BY customer_id, balance
            """,
            // Only the sums read it; one index fewer to write per entry.
            "DROP INDEX ledger_entries_balances",
        ],
        postgresql: [
            ledgerBalancesTable(integer: "BIGINT", options: ""),
            """
            CREATE FUNCTION ledger_balances_add_entry() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO ledger_balances (customer_id, balance, total)
                VALUES (NEW.customer_id, NEW.balance, NEW.amount)
                ON CONFLICT (customer_id, balance) DO UPDATE SET total = ledger_balances.total + EXCLUDED.total;
                RETURN NULL;
            END
            $$
            """,
            // Instances still running the previous version keep appending: they wait until the
            // totals and the trigger are in place, so none of their entries is missed or counted twice.
            "LOCK TABLE ledger_entries IN SHARE MODE",
            """
            CREATE TRIGGER ledger_balances_follow_entries AFTER INSERT ON ledger_entries
            FOR EACH ROW EXECUTE FUNCTION ledger_balances_add_entry()
            """,
            """
            INSERT INTO ledger_balances (customer_id, balance, total)
            SELECT customer_id, balance, CAST(SUM(amount) AS BIGINT) FROM ledger_entries GROUP BY customer_id, balance
            """,
            "DROP INDEX ledger_entries_balances",
        ])

    private static func ledgerBalancesTable(integer: String, options: String) -> String {
        """
        CREATE TABLE ledger_balances (
            customer_id TEXT NOT NULL,
            balance TEXT NOT NULL,
            total \(integer) NOT NULL,
            PRIMARY KEY (customer_id, balance)
        )\(options)
        """
    }

    /// Claims take the first due rows in due order straight from an index holding that order. The
    /// inbox's claim read, and sorted, every due notification for each batch (through each row's
    /// payload on SQLite, whose columns after it sit in overflow pages): processing slowed as a
    /// backlog grew, just when a store redelivers tens of thousands after an outage. The indexes are
    /// partial, over what is still to do, so building them reads the unfinished rows only.
    static let claimsInDueOrder = Migration(
        version: 15, name: "claims in due order",
        sqlite: dueInOrderIndexes, postgresql: dueInOrderIndexes)

    private static let dueInOrderIndexes = [
        """
        CREATE INDEX inbox_due_in_order ON inbox (next_attempt_at, store, dedupe_key)
        WHERE status IN ('pending', 'failed')
        """,
        "DROP INDEX inbox_due",
        """
        CREATE INDEX refund_requests_due_in_order ON refund_requests (next_attempt_at, store, id)
        WHERE status = 'pending'
        """,
        "DROP INDEX refund_requests_due",
    ]

    /// A notification's payload (the store's body and what its adapter verified, ~6 KB for the App
    /// Store) in a table of its own, written once: the inbox row keeps only what processing
    /// updates. Claiming and marking a notification rewrote the whole row, which on SQLite is the
    /// payload's overflow pages too, twice per notification and again in the WAL; the ingest
    /// profile showed those page writes beside the processing they are part of. PostgreSQL keeps
    /// large values out of line anyway; one schema for both keeps one set of queries.
    static let inboxPayloadsApart = Migration(
        version: 16, name: "inbox payloads apart",
        sqlite: inboxPayloadsTable(blob: "BLOB", options: " STRICT"),
        postgresql: inboxPayloadsTable(blob: "BYTEA", options: ""))

    private static func inboxPayloadsTable(blob: String, options: String) -> [String] {
        [
            """
            CREATE TABLE inbox_payloads (
                store TEXT NOT NULL,
                dedupe_key TEXT NOT NULL,
                body \(blob) NOT NULL,
                verified \(blob),
                PRIMARY KEY (store, dedupe_key),
                FOREIGN KEY (store, dedupe_key) REFERENCES inbox (store, dedupe_key) ON DELETE CASCADE
            )\(options)
            """,
            "INSERT INTO inbox_payloads (store, dedupe_key, body, verified) SELECT store, dedupe_key, body, verified FROM inbox",
            "ALTER TABLE inbox DROP COLUMN body",
            "ALTER TABLE inbox DROP COLUMN verified",
        ]
    }

    /// PostgreSQL no longer tries to compress a notification's body. An App Store body is ~8.5 KB
    /// of base64 (a signed JWS with its certificate chain), which pglz cannot shrink, but it tried
    /// on every insert: the PostgreSQL ingest profile showed `pglz_compress` at 6.5 % of the
    /// machine's CPU, a sixth of the database's share, for nothing stored smaller. `EXTERNAL` still
    /// keeps the body out of line in the TOAST table, as before, uncompressed. SQLite never
    /// compresses.
    static let payloadsUncompressed = Migration(
        version: 17, name: "payloads uncompressed",
        sqlite: [],
        postgresql: ["ALTER TABLE inbox_payloads ALTER COLUMN body SET STORAGE EXTERNAL"])

    /// PostgreSQL keeps the running balances once per statement instead of once per entry: a
    /// processing batch appends its ledger entries in one statement, and the row trigger ran a
    /// PL/pgSQL upsert for each (2.5 % of the machine's CPU in the PostgreSQL ingest profile, a
    /// third of the time its ledger inserts took). The statement trigger adds what the statement
    /// inserted (its transition table: not the entries an `ON CONFLICT DO NOTHING` skipped), one
    /// upsert per balance, in key order as concurrent batches lock them. It runs where the row
    /// trigger's did, at the end of the inserting statement, so a debit reads the same totals.
    /// SQLite's trigger is SQL run in place, and stays.
    static let balancesPerStatement = Migration(
        version: 18, name: "balances per statement",
        sqlite: [],
        postgresql: [
            """
            CREATE FUNCTION ledger_balances_add_entries() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO ledger_balances (customer_id, balance, total)
                SELECT customer_id, balance, CAST(SUM(amount) AS BIGINT) FROM added_entries
                GROUP BY customer_id, balance ORDER BY customer_id, balance
                ON CONFLICT (customer_id, balance) DO UPDATE SET total = ledger_balances.total + EXCLUDED.total;
                RETURN NULL;
            END
            $$
            """,
            // Dropping the row trigger locks the ledger until the migration commits: an instance
            // of the previous version appending meanwhile waits, and its entries meet the new
            // trigger, counted once.
            "DROP TRIGGER ledger_balances_follow_entries ON ledger_entries",
            """
            CREATE TRIGGER ledger_balances_follow_entries AFTER INSERT ON ledger_entries
            REFERENCING NEW TABLE AS added_entries
            FOR EACH STATEMENT EXECUTE FUNCTION ledger_balances_add_entries()
            """,
            "DROP FUNCTION ledger_balances_add_entry()",
        ])

    /// PostgreSQL keeps a payload in its row up to 4,000 bytes, so that two fit in a page. A body
    /// is now stored with its tokens' certificate chain once (`StoredNotificationBody`): about
    /// 2.7 KB for the App Store, about 3.5 KB a row with its kept record. At PostgreSQL's default
    /// of 2 KB the body went to the TOAST table (two chunk rows and their index entries on every
    /// webhook's insert). A row over 4,000 bytes has its kept record (JSON, `EXTENDED`) compressed
    /// first, and one still too long moves its body to the TOAST table as before; the body column
    /// stays `EXTERNAL` (migration 17), never compressed. (Measured from a run's database: 4,150
    /// rows in 2,076 pages, nothing in TOAST.) SQLite has no such threshold.
    static let payloadsInTheirRows = Migration(
        version: 19, name: "payloads in their rows",
        sqlite: [],
        postgresql: ["ALTER TABLE inbox_payloads SET (toast_tuple_target = 4000)"])
}

extension Migration {
    /// The overdue refresh also asks about subscriptions without access that wait on news (billing
    /// retry, paused, pending): before, a lost recovery, resumption or completed payment left a
    /// paying customer without access until the app presented the purchase again. The index holds
    /// only those states, by when each last had news and then when it was last refreshed, so a run
    /// reads the due ones alone: one asked about moves out of the range it scans.
    static let subscriptionsAwaitingNews = Migration(
        version: 20, name: "subscriptions awaiting news",
        sqlite: [awaitingNewsIndex(.sqlite)], postgresql: [awaitingNewsIndex(.postgresql)])

    private static func awaitingNewsIndex(_ flavor: SQLFlavor) -> String {
        """
        CREATE INDEX purchases_awaiting_news ON purchases (
            (\(flavor.subscriptionLastNews)), (COALESCE(refreshed_at, 0)), store, id)
        WHERE \(awaitingNewsCondition)
        """
    }

    /// The rows `purchases_awaiting_news` holds, which its query repeats so that both planners
    /// match the partial index.
    static let awaitingNewsCondition = "kind = 'subscription' AND state IN ('billing_retry', 'paused', 'pending')"
}

extension Migration {
    /// Drops `ledger_entries_transaction` (customer, transaction), which every ledger insert kept.
    /// Since the running balances (migration 14) its readers were a transfer's (one customer's
    /// credits of one transaction), which finds them as well through `ledger_entries_by_transaction`
    /// (a transaction has a credit or two), and a customer's whole ledger, which the unique
    /// (customer, idempotency key) index serves; QueryPlanTests checks both plans. With many
    /// customers each ledger insert wrote one more entry into a random page of it.
    static let ledgerWithoutCustomerTransactionIndex = Migration(
        version: 21, name: "ledger without its customer-transaction index",
        sqlite: ["DROP INDEX ledger_entries_transaction"], postgresql: ["DROP INDEX ledger_entries_transaction"])
}

extension Migration {
    /// `purchases_customer` (customer) becomes (customer, store, id) in byte order: a customer's
    /// purchase history (`GET /v1/customers/{id}/purchases`) is read a page at a time in key
    /// order from a cursor, which the old index could only serve by reading and sorting all of the
    /// customer's purchases, thousands for a customer who buys coins. Still one index per purchase.
    static let customerPurchasesInKeyOrder = Migration(
        version: 22, name: "a customer's purchases in key order",
        sqlite: ["DROP INDEX purchases_customer", customerPurchasesIndex(.sqlite)],
        postgresql: ["DROP INDEX purchases_customer", customerPurchasesIndex(.postgresql)])

    private static func customerPurchasesIndex(_ flavor: SQLFlavor) -> String {
        "CREATE INDEX purchases_customer ON purchases (customer_id, \(flavor.byteOrder("store", "id")))"
    }
}

extension Migration {
    /// `webhook_deliveries_due_in_order` (endpoint, position) over deliveries that can come due
    /// (pending, with a next attempt): a round's due deliveries are read in position order from
    /// the endpoint's lowest pending one, each tested for being its customer's earliest through
    /// `webhook_deliveries_pending` (endpoint, ordering_key, position), and the read stops at the
    /// round's limit. Before it, PostgreSQL read every pending row and sorted them, and without
    /// statistics tested every pending row against every other: seconds a round with thousands
    /// pending. SQLite read the endpoint's whole delivered history through the primary key.
    ///
    /// Every pending delivery has a next attempt; the `next_attempt_at IS NOT NULL` in this
    /// index's predicate, and now in `webhook_deliveries_pending_by_position`'s (pruning's lowest
    /// pending position), keeps the test for an earlier pending delivery of the same customer,
    /// which does not imply it, off both: PostgreSQL without statistics chose them for it,
    /// scanning every earlier pending delivery for each one read.
    ///
    /// On PostgreSQL the table is analyzed after every 5,000 changed rows rather than a tenth of
    /// the table: on a large delivery log a burst of thousands pending is too few changes for the
    /// default, and with statistics from before it the planner reads and sorts every pending row
    /// each round.
    static let dueDeliveriesInOrder = Migration(
        version: 23, name: "due webhook deliveries in order",
        sqlite: dueDeliveriesInOrderIndexes,
        postgresql: dueDeliveriesInOrderIndexes + [
            """
            ALTER TABLE webhook_deliveries
            SET (autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 5000)
            """
        ])

    private static let dueDeliveriesInOrderIndexes = [
        """
        CREATE INDEX webhook_deliveries_due_in_order ON webhook_deliveries (endpoint, position)
        WHERE status = 'pending' AND next_attempt_at IS NOT NULL
        """,
        "DROP INDEX webhook_deliveries_pending_by_position",
        """
        CREATE INDEX webhook_deliveries_pending_by_position ON webhook_deliveries (position)
        WHERE status = 'pending' AND next_attempt_at IS NOT NULL
        """,
    ]

    /// A Google Play subscription's base plan (`offerDetails.basePlanId`): a monthly and a yearly
    /// plan of one product were the same purchase to the app, and a change between them a change
    /// of product to itself. Purchases stored before keep none until their next fact.
    static let basePlans = Migration(
        version: 24, name: "base plans", sqlite: basePlanColumn, postgresql: basePlanColumn)

    private static let basePlanColumn = ["ALTER TABLE purchases ADD COLUMN base_plan_id TEXT"]
}
