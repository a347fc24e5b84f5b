import Foundation
import SQLKit
import Storekeeper
import Testing

@testable import StorekeeperStorage

/// The console's queries read their indexes on both backends (see QueryPlanTests for how).
extension QueryPlanTests {
    @Test(arguments: Backend.available)
    func consoleQueriesUseTheirIndexes(backend: Backend) async throws {
        try await TestDatabase.withFresh(backend) { storage, _ async throws in
            try await storage.transaction { transaction async throws in
                let database = try #require(transaction as? SQLStorageTransaction).database
                for statement in Self.rows(backend) + Self.historyRows(backend) {
                    try await database.raw(SQLQueryString(statement)).run()
                }
            }
            let now = Date(timeIntervalSince1970: Double(Self.now) / 1000)

            let states = try await plan(of: storage, backend) { _ = try await $0.subscriptionStateCounts() }
            if backend == .sqlite {
                // Counted from the partial index alone.
                #expect(states.contains("COVERING INDEX purchases_overview"), "\(states)")
            } else {
                // Nine in ten of this fixture's subscriptions are counted, so PostgreSQL may
                // rightly read the table here; the customer-read benchmark shows its plan at scale.
                #expect(!states.isEmpty)
            }
            let activity = try await plan(of: storage, backend) {
                _ = try await $0.subscriptionActivity(in: now.addingTimeInterval(-7 * 86_400)..<now)
            }
            for index in ["state_changes_observed", "transactions_purchased", "transactions_revoked"] {
                #expect(activity.contains(index), "expected \(index) in the plan:\n\(activity)")
            }
            if backend == .sqlite {
                let scans = activity.split(separator: "\n").filter { $0.contains("SCAN ") }
                #expect(scans.isEmpty, "a full scan in the plan:\n\(activity)")
            } else {
                #expect(!activity.contains("Seq Scan on state_changes"), "\(activity)")
                #expect(!activity.contains("Seq Scan on transactions"), "\(activity)")
            }
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
            expect(overdue, uses: "purchases_overdue", sorted: false, backend)
        }
    }

    /// A state change and a billing event per subscription over 400 days (one in 50 refunded).
    static func historyRows(_ backend: Backend) -> [String] {
        let numbers =
            switch backend {
            case .sqlite: "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 4000)"
            case .postgresql: "WITH n(i) AS (SELECT CAST(generate_series(1, 4000) AS BIGINT))"
            }
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
        if backend == .postgresql { statements.append("ANALYZE purchases, state_changes, transactions") }
        return statements
    }
}
