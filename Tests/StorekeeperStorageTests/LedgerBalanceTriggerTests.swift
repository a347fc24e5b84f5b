import Foundation
import SQLKit
import Storekeeper
import Testing

@testable import StorekeeperStorage

/// PostgreSQL keeps the running balances once per inserting statement (migration 18): a batch's
/// entries cost one upsert per balance they touch, not one per entry, and the totals are the same.
@Suite struct LedgerBalanceTriggerTests {
    @Test(.enabled(if: StorageBackend.postgresURL != nil, StorageBackend.skippedPostgresMessage))
    func aStatementOfEntriesUpdatesEachBalanceOnce() async throws {
        try await TestDatabase.withFresh(.postgresql) { storage, _ async throws in
            let alice = makeCustomer("alice")
            let bob = makeCustomer("bob")
            try await storage.transaction { transaction async throws in
                try await transaction.insertCustomer(alice)
                try await transaction.insertCustomer(bob)
                // Already posted: the statement below skips its key.
                _ = try await transaction.appendLedgerEntry(
                    LedgerEntry(
                        customerID: alice.id, balance: "coins", amount: 1000, reason: .purchase,
                        idempotencyKey: "posted", createdAt: at(0)))
            }
            let updates = try await storage.transaction { transaction async throws -> Int in
                let database = try #require(transaction as? SQLStorageTransaction).database
                // Nine entries over three balances, and the one already posted.
                try await database.raw(
                    """
                    INSERT INTO ledger_entries (\(unsafeRaw: SQLStorageTransaction.ledgerColumns)) VALUES
                    ('alice', 'coins', 100, 'purchase', 'a1', NULL, 1), ('bob', 'coins', 10, 'purchase', 'b1', NULL, 1),
                    ('alice', 'coins', -30, 'debit', 'a2', NULL, 2), ('alice', 'gems', 5, 'purchase', 'a3', NULL, 2),
                    ('bob', 'coins', 20, 'purchase', 'b2', NULL, 3), ('alice', 'coins', 7, 'purchase', 'a4', NULL, 3),
                    ('alice', 'gems', 6, 'purchase', 'a5', NULL, 4), ('bob', 'coins', -5, 'debit', 'b3', NULL, 4),
                    ('alice', 'coins', 1000, 'purchase', 'posted', NULL, 5), ('alice', 'coins', 3, 'purchase', 'a6', NULL, 5)
                    ON CONFLICT (customer_id, idempotency_key) DO NOTHING
                    """
                ).run()
                // This transaction's updates of the totals so far.
                let row = try #require(
                    try await database.raw(
                        """
                        SELECT CAST(n_tup_upd AS BIGINT) AS updates FROM pg_stat_xact_user_tables
                        WHERE relname = 'ledger_balances'
                        """
                    ).first())
                return try row.decode(column: "updates", as: Int.self)
            }
            #expect(updates == 1, "alice's coins, the one balance that existed, updated once, not once per entry")
            let balances = try await storage.transaction { transaction async throws in
                (try await transaction.balances(of: alice.id), try await transaction.balances(of: bob.id))
            }
            #expect(balances.0 == ["coins": 1080, "gems": 11], "the skipped duplicate is not counted")
            #expect(balances.1 == ["coins": 25])
        }
    }
}
