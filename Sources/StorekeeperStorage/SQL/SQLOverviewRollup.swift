import Foundation
import SQLKit
import Storekeeper

/// The overview's daily rollup (``OverviewRollupQueries``), on both backends. Rows are keyed by
/// store, app (`''` when not known), environment, day (days since 1970, UTC), kind and currency
/// (`''` for counts and for billing events without a price).
extension SQLStorageTransaction {
    private static let millisecondsPerDay: Int64 = 86_400_000

    func backfillOverviewRollup() async throws -> Int {
        if flavor == .postgresql {
            // Held to commit: waits for transactions writing events and keeps new ones out, so
            // every change is either in the history read here or in an event after `covered`.
            try await run("LOCK TABLE events IN SHARE MODE")
        }
        while try await sequenceEvents(limit: 10_000) > 0 {}
        let covered = try await lastEventPosition()
        let ended = "('expired', 'revoked')"
        let day = { (column: String) in "\(column) / \(Self.millisecondsPerDay)" }
        let slice = "p.store, COALESCE(p.app, '') AS app, p.environment"
        let grouping = "p.store, COALESCE(p.app, ''), p.environment"
        // Family members' purchases are left out, as the event fold leaves them
        // (`OverviewRollup`): the purchaser's own purchase counts what was paid. A change of
        // product is neither new (a purchase that replaces another) nor a renewal (a billing event
        // of another product than the one before it). A purchase replacing one of the same product
        // and base plan (Google: a prepaid plan's top-up) goes on from it: its first billing event is
        // a renewal. A purchase pending its payment is new when paid, and neither new nor churned
        // when its payment is canceled; one first seen ended and never billed never started. Churn, as from events, is an end after a state the server
        // saw (a purchase first seen ended is new, not churned).
        let paid = "p.ownership <> '\(Ownership.familyShared.rawValue)'"
        let statements: [String] = [
            """
            SELECT \(slice), \(day("s.observed_at")) AS day, 'new' AS kind, '' AS currency, COUNT(*) AS count,
                   0 AS amount
            FROM state_changes s JOIN purchases p ON p.store = s.store AND p.id = s.purchase_id
            WHERE \(paid) AND p.kind = 'subscription' AND p.replaces_id IS NULL
                AND ((s.from_state IS NULL AND s.to_state NOT IN ('superseded', 'pending')
                        AND (s.to_state NOT IN \(ended) OR EXISTS (
                            SELECT 1 FROM transactions t WHERE t.store = s.store AND t.purchase_id = s.purchase_id)))
                    OR (s.from_state = 'pending' AND s.to_state NOT IN ('superseded', 'pending', 'expired', 'revoked')))
            GROUP BY \(grouping), \(day("s.observed_at"))
            """,
            """
            SELECT \(slice), \(day("s.observed_at")) AS day, 'churned' AS kind, '' AS currency, COUNT(*) AS count,
                   0 AS amount
            FROM state_changes s JOIN purchases p ON p.store = s.store AND p.id = s.purchase_id
            WHERE \(paid) AND s.to_state IN \(ended)
                AND s.from_state NOT IN ('expired', 'revoked', 'pending')
                AND p.kind = 'subscription'
            GROUP BY \(grouping), \(day("s.observed_at"))
            """,
            """
            SELECT \(slice), \(day("t.purchased_at")) AS day, 'renewed' AS kind, '' AS currency, COUNT(*) AS count,
                   0 AS amount
            FROM (
                -- One pass over the billing events in order: a subquery per billing event for the
                -- one before it took 27-29 s on PostgreSQL at 7.7 M billing events, this 10 s.
                SELECT store, purchase_id, product_id, purchased_at,
                       LAG(product_id) OVER (PARTITION BY store, purchase_id ORDER BY purchased_at, id)
                           AS previous_product
                FROM transactions
            ) t JOIN purchases p ON p.store = t.store AND p.id = t.purchase_id
            LEFT JOIN purchases r ON r.store = p.replaces_store AND r.id = p.replaces_id
            WHERE \(paid) AND p.kind = 'subscription'
                AND (t.previous_product = t.product_id
                    OR (t.previous_product IS NULL AND r.product_id = t.product_id
                        AND (r.base_plan_id IS NULL OR p.base_plan_id IS NULL OR r.base_plan_id = p.base_plan_id)))
            GROUP BY \(grouping), \(day("t.purchased_at"))
            """,
            """
            SELECT \(slice), \(day("t.revoked_at")) AS day, 'refunded' AS kind, '' AS currency, COUNT(*) AS count,
                   0 AS amount
            FROM transactions t JOIN purchases p ON p.store = t.store AND p.id = t.purchase_id
            WHERE \(paid) AND t.revoked_at IS NOT NULL AND t.refunded_fraction > 0
            GROUP BY \(grouping), \(day("t.revoked_at"))
            """,
            """
            SELECT \(slice), \(day("t.purchased_at")) AS day, 'revenue' AS kind, COALESCE(t.currency, '') AS currency,
                   COUNT(*) AS count, CAST(COALESCE(SUM(t.price_micros), 0) AS BIGINT) AS amount
            FROM transactions t JOIN purchases p ON p.store = t.store AND p.id = t.purchase_id
            WHERE \(paid)
            GROUP BY \(grouping), \(day("t.purchased_at")), COALESCE(t.currency, '')
            """,
            // Refunds take their share back on the day of the refund (a second statement: one
            // statement may not upsert the same row twice).
            """
            SELECT \(slice), \(day("t.revoked_at")) AS day, 'revenue' AS kind, t.currency AS currency, 0 AS count,
                   CAST(-SUM(ROUND(t.price_micros * t.refunded_fraction)) AS BIGINT) AS amount
            FROM transactions t JOIN purchases p ON p.store = t.store AND p.id = t.purchase_id
            WHERE \(paid) AND t.revoked_at IS NOT NULL AND t.price_micros IS NOT NULL
            GROUP BY \(grouping), \(day("t.revoked_at")), t.currency
            """,
        ]
        for select in statements {
            try await run(
                """
                INSERT INTO overview_activity (store, app, environment, day, kind, currency, count, amount_micros)
                SELECT store, app, environment, day, kind, currency, count, amount FROM (\(unsafeRaw: select)) folded
                WHERE true
                ON CONFLICT (store, app, environment, day, kind, currency) DO UPDATE SET
                    count = overview_activity.count + excluded.count,
                    amount_micros = overview_activity.amount_micros + excluded.amount_micros
                """)
        }
        return covered
    }

    func lockOverviewRollup() async throws {
        try await lock("overview-rollup")
    }

    func addOverviewActivity(_ deltas: [OverviewActivity]) async throws {
        // One row per key: a statement may not upsert the same row twice.
        var merged: [OverviewRowKey: (count: Int, amount: Int64)] = [:]
        for delta in deltas {
            let key = OverviewRowKey(delta)
            let sum = merged[key] ?? (0, 0)
            merged[key] = (sum.count + delta.count, sum.amount + delta.amountMicros)
        }
        guard !merged.isEmpty else { return }
        let rows = SQLRows(columnCount: 8, Array(merged)) { key, sum in
            [
                .text(key.store), .text(key.app), .text(key.environment), .integer(key.day), .text(key.kind),
                .text(key.currency), .integer(sum.count), .integer(sum.amount),
            ]
        }
        try await run(
            """
            INSERT INTO overview_activity (store, app, environment, day, kind, currency, count, amount_micros)
            \(rows.source(flavor))
            ON CONFLICT (store, app, environment, day, kind, currency) DO UPDATE SET
                count = overview_activity.count + excluded.count,
                amount_micros = overview_activity.amount_micros + excluded.amount_micros
            """)
    }

    func countOverviewStates(day: Date) async throws -> [OverviewStateCount] {
        var counts: [OverviewSlice: [OverviewState: Int]] = [:]
        for row in try await select(
            """
            SELECT store, app, environment, state, COUNT(*) AS count FROM purchases
            WHERE \(unsafeRaw: Self.overviewCondition)
            GROUP BY store, app, environment, state
            """)
        {
            let reader = RowReader(row: row, table: "purchases")
            guard let state = OverviewState(rawValue: try reader.string("state")) else { continue }
            counts[try Self.slice(reader), default: [:]][state, default: 0] += try reader.int("count")
        }
        // Trials are few: read from the billing events that are free trials (a partial index), each
        // counted when it is its subscription's latest and the subscription still grants access.
        for row in try await select(
            """
            SELECT p.store, p.app, p.environment, p.state, COUNT(*) AS count
            FROM transactions t JOIN purchases p ON p.store = t.store AND p.id = t.purchase_id
            WHERE t.offer = 'free_trial' AND p.kind = 'subscription' AND p.state IN ('active', 'canceled')
                AND NOT EXISTS (
                    SELECT 1 FROM transactions later
                    WHERE later.store = t.store AND later.purchase_id = t.purchase_id
                        AND later.purchased_at > t.purchased_at)
            GROUP BY p.store, p.app, p.environment, p.state
            """)
        {
            let reader = RowReader(row: row, table: "purchases")
            guard let state = OverviewState(rawValue: try reader.string("state")) else { continue }
            let slice = try Self.slice(reader)
            let trials = try reader.int("count")
            counts[slice, default: [:]][state, default: 0] -= trials
            counts[slice, default: [:]][.trial, default: 0] += trials
        }
        let start = StoredTime.date(StoredTime.milliseconds(day) / Self.millisecondsPerDay * Self.millisecondsPerDay)
        return counts.flatMap { slice, states in
            states.filter { $0.value > 0 }.map {
                OverviewStateCount(slice: slice, state: $0.key, count: $0.value, day: start)
            }
        }
    }

    func replaceOverviewStates(_ counts: [OverviewStateCount], day: Date) async throws {
        let dayNumber = StoredTime.milliseconds(day) / Self.millisecondsPerDay
        try await run("DELETE FROM overview_states WHERE day = \(bind: dayNumber)")
        guard !counts.isEmpty else { return }
        let rows = SQLRows(columnCount: 6, counts) { counted in
            [
                .text(counted.slice.store.rawValue), .text(counted.slice.app?.rawValue ?? ""),
                .text(counted.slice.environment.rawValue), .integer(dayNumber), .text(counted.state.rawValue),
                .integer(counted.count),
            ]
        }
        try await run("INSERT INTO overview_states (store, app, environment, day, state, count) \(rows.source(flavor))")
    }

    func overviewActivity(in range: Range<Date>) async throws -> [OverviewActivity] {
        let from = StoredTime.milliseconds(range.lowerBound) / Self.millisecondsPerDay
        // The last day that starts before the range ends.
        let to = (StoredTime.milliseconds(range.upperBound) - 1) / Self.millisecondsPerDay
        return try await rows(
            """
            SELECT store, app, environment, day, kind, currency, count, amount_micros FROM overview_activity
            WHERE day >= \(bind: from) AND day <= \(bind: to)
            """
        ).compactMap { row in
            let reader = RowReader(row: row, table: "overview_activity")
            guard let kind = OverviewActivity.Kind(rawValue: try reader.string("kind")) else { return nil }
            let currency = try reader.string("currency")
            return OverviewActivity(
                slice: try Self.slice(reader),
                day: StoredTime.date(Int64(try reader.int("day")) * Self.millisecondsPerDay),
                kind: kind, currency: currency.isEmpty ? nil : CurrencyCode(currency), count: try reader.int("count"),
                amountMicros: try reader.decode("amount_micros", as: Int64.self))
        }
    }

    func overviewStates(day: Date) async throws -> [OverviewStateCount] {
        try await rows(
            """
            SELECT store, app, environment, day, state, count FROM overview_states
            WHERE day = \(bind: StoredTime.milliseconds(day) / Self.millisecondsPerDay)
            """
        ).compactMap { row in
            let reader = RowReader(row: row, table: "overview_states")
            guard let state = OverviewState(rawValue: try reader.string("state")) else { return nil }
            return OverviewStateCount(
                slice: try Self.slice(reader), state: state, count: try reader.int("count"),
                day: StoredTime.date(Int64(try reader.int("day")) * Self.millisecondsPerDay))
        }
    }

    private static func slice(_ reader: RowReader) throws -> OverviewSlice {
        let app = try reader.optionalString("app")
        return OverviewSlice(
            store: try reader.raw("store", as: Store.self), app: app.flatMap { $0.isEmpty ? nil : AppID($0) },
            environment: try reader.raw("environment", as: PurchaseEnvironment.self))
    }
}

/// A rollup row's key as stored.
private struct OverviewRowKey: Hashable {
    var store: String
    var app: String
    var environment: String
    var day: Int64
    var kind: String
    var currency: String

    init(_ activity: OverviewActivity) {
        store = activity.slice.store.rawValue
        app = activity.slice.app?.rawValue ?? ""
        environment = activity.slice.environment.rawValue
        day = StoredTime.milliseconds(activity.day) / 86_400_000
        kind = activity.kind.rawValue
        currency = activity.currency?.rawValue ?? ""
    }
}

extension Migration {
    /// The overview's rollup and the prices of billing events: each billing event's price and
    /// currency as its store reported them and the offer it was bought under; the daily counts per
    /// store, app, environment, day, kind and currency; the subscriptions by state as recounted;
    /// a partial index on free-trial billing events for that recount. The time indexes on state
    /// changes and billing events that only the overview's former counting read are dropped: each
    /// cost a write per change on the processing path.
    static let overviewRollup = Migration(
        version: 12, name: "overview rollup and prices",
        sqlite: overviewRollupStatements(integer: "INTEGER", strict: " STRICT"),
        postgresql: overviewRollupStatements(integer: "BIGINT", strict: ""))

    private static func overviewRollupStatements(integer: String, strict: String) -> [String] {
        [
            "ALTER TABLE transactions ADD COLUMN price_micros \(integer)",
            "ALTER TABLE transactions ADD COLUMN currency TEXT",
            "ALTER TABLE transactions ADD COLUMN offer TEXT",
            "CREATE INDEX transactions_free_trial ON transactions (store, purchase_id) WHERE offer = 'free_trial'",
            """
            CREATE TABLE overview_activity (
                store TEXT NOT NULL,
                app TEXT NOT NULL,
                environment TEXT NOT NULL,
                day \(integer) NOT NULL,
                kind TEXT NOT NULL,
                currency TEXT NOT NULL,
                count \(integer) NOT NULL,
                amount_micros \(integer) NOT NULL,
                PRIMARY KEY (store, app, environment, day, kind, currency)
            )\(strict)
            """,
            "CREATE INDEX overview_activity_day ON overview_activity (day)",
            """
            CREATE TABLE overview_states (
                store TEXT NOT NULL,
                app TEXT NOT NULL,
                environment TEXT NOT NULL,
                day \(integer) NOT NULL,
                state TEXT NOT NULL,
                count \(integer) NOT NULL,
                PRIMARY KEY (store, app, environment, day, state)
            )\(strict)
            """,
            "CREATE INDEX overview_states_day ON overview_states (day)",
            "DROP INDEX state_changes_observed",
            "DROP INDEX transactions_purchased",
        ]
    }
}
