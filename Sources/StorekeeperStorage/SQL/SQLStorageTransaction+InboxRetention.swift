import Foundation
import SQLKit
import Storekeeper

/// Processed notifications past their retention (`retention.notifications`), deleted in pages.
extension SQLStorageTransaction {
    func pruneNotifications(processedReceivedBefore cutoff: Date, limit: Int) async throws -> Int {
        guard limit > 0 else { return 0 }
        // The oldest processed rows, in `inbox_status (status, received_at)` order: a page costs
        // what it deletes, however many notifications are kept.
        let keys = try await rows(
            """
            SELECT store, dedupe_key FROM inbox
            WHERE status = 'processed' AND received_at < \(bind: StoredTime.milliseconds(cutoff))
            ORDER BY received_at LIMIT \(bind: limit)
            """
        ).map { row in
            let reader = RowReader(row: row, table: "inbox")
            return (try reader.string("store"), try reader.string("dedupe_key"))
        }
        guard !keys.isEmpty else { return 0 }
        // Their payloads go with them (`inbox_payloads` references `inbox` ON DELETE CASCADE).
        // A thousand pairs per statement keeps within both databases' limits on bound values.
        for page in keys.chunked(1_000) {
            try await run(
                """
                DELETE FROM inbox WHERE status = 'processed'
                AND (store, dedupe_key) IN (VALUES \(Self.pairs(page)))
                """)
        }
        return keys.count
    }
}
