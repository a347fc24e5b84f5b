import Foundation
import SQLKit
import Storekeeper
import Testing

@testable import StorekeeperStorage

/// Pruning and the API-managed webhook endpoints read and delete through indexes (migration 13),
/// on both backends: the storage's own statements, explained with their real parameters on a
/// database with enough events, deliveries and attempts that PostgreSQL's planner, after
/// `ANALYZE`, prefers an index where one fits.
extension QueryPlanTests {
    @Test(arguments: StorageBackend.available)
    func pruningReadsAndDeletesThroughIndexes(backend: StorageBackend) async throws {
        try await withFresh(backend, rows: Self.pruningRows(backend)) { storage in
            let cutoff = Date(timeIntervalSince1970: Double(Self.now) / 1000)
            let positions = backend == .sqlite ? "sqlite_autoindex_events_1" : "events_position_key"

            let first = try await plan(of: storage, backend) { _ = try await $0.firstEventPosition() }
            expect(first, uses: positions, sorted: false, backend)
            let batch = try await plan(of: storage, backend) {
                _ = try await $0.pruneEvents(occurredBefore: cutoff, through: 3_000, limit: 1_000)
            }
            expect(batch, uses: positions, sorted: false, backend)
            let deletes = try await plan(of: storage, backend) { transaction in
                let sql = try #require(transaction as? SQLStorageTransaction)
                for statement in SQLStorageTransaction.deleteEvents(from: 1, through: 1_000) {
                    try await sql.run(statement)
                }
            }
            expect(deletes, uses: "webhook_deliveries_by_position", sorted: nil, backend)
            expect(deletes, uses: positions, sorted: nil, backend)

            let pending = try await plan(of: storage, backend) { _ = try await $0.firstPendingDeliveryPosition() }
            expect(pending, uses: "webhook_deliveries_pending_by_position", sorted: false, backend)

            let attemptKey = backend == .sqlite ? "PRIMARY KEY" : "webhook_attempts_pkey"
            let attempts = try await plan(of: storage, backend) {
                _ = try await $0.pruneDeliveryAttempts(attemptedBefore: cutoff, limit: 1_000)
            }
            expect(attempts, uses: attemptKey, sorted: false, backend)
            let attemptDelete = try await plan(of: storage, backend) { transaction in
                try await #require(transaction as? SQLStorageTransaction).run(
                    SQLStorageTransaction.deleteAttempts(through: 1_000))
            }
            expect(attemptDelete, uses: attemptKey, sorted: nil, backend)

            // Deleting an endpoint deletes its queue and log by the endpoint (one of several: the
            // rows here are all another endpoint's).
            let deleted = try await plan(of: storage, backend) { transaction in
                let sql = try #require(transaction as? SQLStorageTransaction)
                for statement in SQLStorageTransaction.deleteEndpointRows("retired").prefix(2) {
                    try await sql.run(statement)
                }
            }
            expect(
                deleted,
                uses: backend == .sqlite ? "sqlite_autoindex_webhook_deliveries_1" : "webhook_deliveries_pkey",
                sorted: nil, backend)
            expect(deleted, uses: "webhook_attempts_by_endpoint", sorted: nil, backend)
        }
    }

    /// 4,000 numbered events, a delivery of each to one endpoint (one in 500 pending), and an
    /// attempt for each; then statistics for PostgreSQL's planner.
    static func pruningRows(_ backend: StorageBackend) -> [String] {
        let numbers = Self.numbers(upTo: 4000, backend)
        let body = backend == .sqlite ? "X'7B7D'" : "'\\x7b7d'::bytea"
        var statements = [
            """
            INSERT INTO events (position, id, type, customer_id, environment, ordering_key, occurred_at, body)
            \(numbers) SELECT i, 'event-' || i, 'balance.changed', 'c' || (i % 100), NULL, 'customer:c' || (i % 100),
                              \(now) - (4000 - i) * 60000, \(body) FROM n
            """,
            """
            INSERT INTO webhook_deliveries (endpoint, position, event_id, event_type, ordering_key, status, attempts,
                                            next_attempt_at, occurred_at)
            \(numbers) SELECT 'backend', i, 'event-' || i, 'balance.changed', 'customer:c' || (i % 100),
                              CASE WHEN i % 500 = 0 THEN 'pending' ELSE 'delivered' END, 1, NULL,
                              \(now) - (4000 - i) * 60000 FROM n
            """,
            """
            INSERT INTO webhook_attempts (endpoint, event_id, position, attempt, attempted_at, status_code, latency_ms)
            \(numbers) SELECT 'backend', 'event-' || i, i, 1, \(now) - (4000 - i) * 60000, 200, 3 FROM n
            """,
        ]
        if backend == .postgresql { statements.append("ANALYZE events, webhook_deliveries, webhook_attempts") }
        return statements
    }
}
