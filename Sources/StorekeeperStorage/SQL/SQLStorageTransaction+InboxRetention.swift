import Foundation
import SQLKit
import Storekeeper

/// Processed notifications past their retention (`retention.notifications`), deleted in pages.
extension SQLStorageTransaction {
    func pruneNotifications(processedReceivedBefore cutoff: Date, limit: Int) async throws -> Int {
        guard limit > 0 else { return 0 }
        let page = try await oldestProcessedNotifications(receivedBefore: cutoff, limit: limit)
        try await deleteProcessedNotifications(page)
        return page.keys.count
    }

    /// A page of the oldest processed notifications received before `cutoff`.
    struct ProcessedPage: Sendable {
        /// Each notification's `store` and `dedupe_key`.
        var keys: [(String, String)] = []
        /// When the page's newest notification was received.
        var receivedThrough: Int64 = 0
    }

    /// The oldest processed rows, in `inbox_status (status, received_at)` order: a page costs what
    /// it deletes, however many notifications are kept.
    func oldestProcessedNotifications(receivedBefore cutoff: Date, limit: Int) async throws -> ProcessedPage {
        var page = ProcessedPage()
        for row in try await rows(
            """
            SELECT store, dedupe_key, received_at FROM inbox
            WHERE status = 'processed' AND received_at < \(bind: StoredTime.milliseconds(cutoff))
            ORDER BY received_at LIMIT \(bind: limit)
            """)
        {
            let reader = RowReader(row: row, table: "inbox")
            page.keys.append((try reader.string("store"), try reader.string("dedupe_key")))
            page.receivedThrough = max(page.receivedThrough, try reader.decode("received_at", as: Int64.self))
        }
        return page
    }

    /// Deletes a page; their payloads go with them (`inbox_payloads` references `inbox` ON DELETE
    /// CASCADE). A thousand pairs per statement keeps within both databases' limits on bound values.
    ///
    /// The bound on `received_at` is what keeps a page's cost to its own rows: given only
    /// `status = 'processed'` and the keys, SQLite searched the status index for every processed
    /// notification (1.4 s a page with a million kept) and PostgreSQL read the table. The page is
    /// the oldest processed rows, so that range holds the page and little else.
    func deleteProcessedNotifications(_ page: ProcessedPage) async throws {
        for keys in page.keys.chunked(1_000) {
            try await run(
                """
                DELETE FROM inbox
                WHERE status = 'processed' AND received_at <= \(bind: page.receivedThrough)
                AND (store, dedupe_key) IN (\(pairs(keys)))
                """)
        }
    }
}
