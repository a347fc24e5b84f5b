import Foundation
import SQLKit
import Storekeeper

/// What the customer view shows, read together.
extension SQLStorageTransaction {
    func customerSnapshot(_ id: CustomerID) async throws -> CustomerSnapshot? {
        switch flavor {
        case .postgresql:
            // Each statement is a round trip over the socket, and the loopback writes and reads
            // were a third of the server's CPU per view with three (Benchmarks/README.md); one
            // statement is also one snapshot without BEGIN.
            return try await customerSnapshotInOneStatement(id)
        case .sqlite:
            // In process there is no round trip to save, and a single statement joining the three
            // was slower to prepare and run than they are (Benchmarks/README.md, 2026-11-26).
            guard let (customer, consent) = try await customerWithConsent(id) else { return nil }
            return CustomerSnapshot(
                customer: customer, consent: consent, entitlementPurchases: try await entitlementPurchases(of: id),
                balances: try await balances(of: id))
        }
    }

    /// The customer and its consent, by both tables' keys.
    private func customerWithConsent(_ id: CustomerID) async throws
        -> (customer: Customer, consent: ConsumptionConsent?)?
    {
        guard
            let found = try await selectOne(
                """
                SELECT c.id, c.app_account_token, c.created_at, k.consented, k.decided_at
                FROM customers c LEFT JOIN consumption_consents k ON k.customer_id = c.id
                WHERE c.id = \(bind: id.rawValue)
                """)
        else { return nil }
        return (try customer(from: found), try consent(from: found))
    }

    /// One row per purchase (one without a purchase when there is none), each carrying the
    /// customer, its consent and its balances as two arrays; PostgreSQL only (SQLite has no
    /// arrays). The balances' subquery is evaluated once (it depends on the parameter alone), and
    /// its two aggregates take the same rows in the same order, so the arrays pair up.
    private func customerSnapshotInOneStatement(_ id: CustomerID) async throws -> CustomerSnapshot? {
        let rows = try await select(
            """
            SELECT c.app_account_token, c.created_at, k.consented, k.decided_at,
                b.balance_names, b.balance_totals, \(unsafeRaw: Self.joinedPurchaseColumns)
            FROM customers c
            LEFT JOIN consumption_consents k ON k.customer_id = c.id
            LEFT JOIN (
                SELECT array_agg(balance) AS balance_names, array_agg(total) AS balance_totals
                FROM ledger_balances WHERE customer_id = \(bind: id.rawValue)
            ) b ON TRUE
            LEFT JOIN purchases p ON p.customer_id = c.id AND p.kind <> 'consumable'
            WHERE c.id = \(bind: id.rawValue)
            ORDER BY \(unsafeRaw: flavor.byteOrder("p.store", "p.id"))
            """)
        guard let first = rows.first else { return nil }
        let reader = RowReader(row: first, table: "customers")
        let customer = Customer(
            id: id, appAccountToken: try reader.uuid("app_account_token"), createdAt: try reader.date("created_at"))
        let names = try reader.decodeIfPresent("balance_names", as: [String].self) ?? []
        let totals = try reader.decodeIfPresent("balance_totals", as: [Int].self) ?? []
        guard names.count == totals.count else {
            throw StorageError(.corrupt, "ledger_balances: \(names.count) balances with \(totals.count) totals")
        }
        var purchases: [Purchase] = []
        for row in rows where try !RowReader(row: row, table: "purchases").isNull("store") {
            purchases.append(try purchase(from: row))
        }
        return CustomerSnapshot(
            customer: customer, consent: try consent(from: first), entitlementPurchases: purchases,
            balances: Dictionary(zip(names, totals), uniquingKeysWith: { _, last in last }))
    }

    /// ``purchaseColumns`` read through the alias `p`, where other tables share their names.
    private static let joinedPurchaseColumns = purchaseColumns.split(separator: ",")
        .map { "p." + $0.trimmingCharacters(in: .whitespacesAndNewlines) }.joined(separator: ", ")
}
