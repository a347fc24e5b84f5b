import Foundation
import SQLKit
import Storekeeper
import Testing

@testable import StorekeeperStorage

/// The console's queries read their indexes on both backends (see QueryPlanTests for how).
extension QueryPlanTests {
    @Test(arguments: StorageBackend.available)
    func consoleQueriesUseTheirIndexes(backend: StorageBackend) async throws {
        try await withFresh(backend, rows: Self.rows(backend) + Self.historyRows(backend)) { storage in
            let now = Date(timeIntervalSince1970: Double(Self.now) / 1000)

            // The recount of states: the subscriptions from the partial index alone (SQLite), the
            // free trials from theirs.
            let recount = try await plan(of: storage, backend) {
                _ = try await $0.countOverviewStates(day: now)
            }
            if backend == .sqlite {
                #expect(recount.contains("COVERING INDEX purchases_overview"), "\(recount)")
            }
            #expect(recount.contains("transactions_free_trial"), "\(recount)")
            // What the overview page reads: a week of the rollup, and the last recount, by day.
            let activity = try await plan(of: storage, backend) {
                _ = try await $0.overviewActivity(in: now.addingTimeInterval(-7 * 86_400)..<now)
            }
            expect(activity, uses: "overview_activity_day", sorted: nil, backend)
            let states = try await plan(of: storage, backend) { _ = try await $0.overviewStates(day: now) }
            expect(states, uses: "overview_states_day", sorted: nil, backend)
            let events = try await plan(of: storage, backend) {
                _ = try await $0.recentEvents(of: CustomerID("customer-7"), limit: 200)
            }
            expect(events, uses: "events_by_customer", sorted: nil, backend)
            let byStoreID = try await plan(of: storage, backend) { _ = try await $0.purchases(storeID: "sub-42") }
            expect(
                byStoreID, uses: backend == .sqlite ? "sqlite_autoindex_purchases_1" : "purchases_pkey", sorted: nil,
                backend)
            let actions = try await plan(of: storage, backend) {
                _ = try await $0.consoleActions(target: "purchase:app_store:sub-1")
            }
            expect(actions, uses: "console_actions_target", sorted: nil, backend)
            // The overdue refresh keeps its own index (the overview's partial one does not fit it).
            let overdue = try await plan(of: storage, backend) {
                _ = try await $0.subscriptionsOverdue(
                    accessEndedBefore: now - 3600, notRefreshedSince: now - 6 * 3600, limit: 100)
            }
            expect(overdue, uses: "purchases_overdue", sorted: nil, backend)
        }
    }

    /// A state change and a billing event per subscription over 400 days (one in 50 refunded).
    static func historyRows(_ backend: StorageBackend) -> [String] {
        let numbers = Self.numbers(upTo: 4000, backend)
        var statements = [
            """
            INSERT INTO state_changes (store, purchase_id, from_state, to_state, observed_at, cause_source)
            \(numbers)
            SELECT CASE WHEN i % 2 = 0 THEN 'google_play' ELSE 'app_store' END, 'sub-' || i, NULL, 'active',
                   \(now) - i * 8640000, 'notification'
            FROM n
            """,
            """
            INSERT INTO transactions (store, id, purchase_id, product_id, purchased_at, quantity, revoked_at,
                                      refunded_fraction, observed_at)
            \(numbers)
            SELECT CASE WHEN i % 2 = 0 THEN 'google_play' ELSE 'app_store' END, 't-' || i, 'sub-' || i, 'pro',
                   \(now) - i * 8640000, 1, CASE WHEN i % 50 = 0 THEN \(now) - i * 8640000 + 1000 ELSE NULL END,
                   0, \(now) - i * 8640000
            FROM n
            """,
        ]
        // Two years of a rollup for 20 slices, and a year of daily recounts.
        func upTo(_ last: Int) -> String {
            switch backend {
            case .sqlite: "WITH RECURSIVE d(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM d WHERE i < \(last))"
            case .postgresql: "WITH d(i) AS (SELECT CAST(generate_series(0, \(last)) AS BIGINT))"
            }
        }
        statements += [
            """
            INSERT INTO overview_activity (store, app, environment, day, kind, currency, count, amount_micros)
            \(upTo(14_599))
            SELECT 'app_store', 'com.app' || (i % 20), 'production', \(now) / 86400000 - i / 20, 'new', '', 1, 0
            FROM d
            """,
            """
            INSERT INTO overview_states (store, app, environment, day, state, count)
            \(upTo(729))
            SELECT 'app_store', 'com.app' || (i % 2), 'production', \(now) / 86400000 - i / 2, 'active', 10
            FROM d
            """,
        ]
        if backend == .postgresql {
            statements.append("ANALYZE purchases, state_changes, transactions, overview_activity, overview_states")
        }
        return statements
    }
}
