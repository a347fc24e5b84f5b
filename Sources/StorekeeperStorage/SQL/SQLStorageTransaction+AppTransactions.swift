import Foundation
import SQLKit
import Storekeeper

/// Customers' links to app transactions (migration 11).
extension SQLStorageTransaction {
    func appTransactionLink(app: AppID, id: String) async throws -> AppTransactionLink? {
        guard
            let found = try await selectOne(
                """
                SELECT environment, customer_id, linked_at FROM app_transactions
                WHERE app = \(bind: app.rawValue) AND id = \(bind: id)
                """)
        else { return nil }
        let reader = RowReader(row: found, table: "app_transactions")
        return AppTransactionLink(
            app: app, appTransactionID: id, environment: try reader.raw("environment", as: PurchaseEnvironment.self),
            customerID: CustomerID(try reader.string("customer_id")), linkedAt: try reader.date("linked_at"))
    }

    func saveAppTransactionLink(_ link: AppTransactionLink) async throws {
        try await run(
            """
            INSERT INTO app_transactions (app, id, environment, customer_id, linked_at)
            VALUES (\(bind: link.app.rawValue), \(bind: link.appTransactionID), \(bind: link.environment.rawValue),
                    \(bind: link.customerID.rawValue), \(bind: StoredTime.milliseconds(link.linkedAt)))
            ON CONFLICT (app, id) DO UPDATE SET
                environment = excluded.environment, customer_id = excluded.customer_id, linked_at = excluded.linked_at
            """)
    }

    func unlinkedPurchases(app: AppID, appTransactionID id: String) async throws -> [Purchase] {
        try await rows(
            """
            SELECT \(unsafeRaw: Self.purchaseColumns) FROM purchases
            WHERE app = \(bind: app.rawValue) AND app_transaction_id = \(bind: id) AND customer_id IS NULL
            ORDER BY observed_at, store, id
            """
        ).map(purchase(from:))
    }
}
