import Foundation
import SQLKit
import Storekeeper
import Testing

@testable import StorekeeperStorage

/// How PostgreSQL stores a notification's body (migration 17): out of line and never compressed,
/// since a store's signed payload is base64 that compression cannot shrink and trying cost the
/// ingest path a sixth of the database's CPU.
@Suite struct InboxPayloadStorageTests {
    @Test(.enabled(if: StorageBackend.postgresURL != nil, StorageBackend.skippedPostgresMessage))
    func postgresStoresABodyWithoutTryingToCompressIt() async throws {
        try await TestDatabase.withFresh(.postgresql) { storage, _ async throws in
            // Compressible on purpose: under the default storage, PostgreSQL would keep it pglz-compressed.
            let body = Data(("{\"signedPayload\":\"" + String(repeating: "a", count: 16_000) + "\"}").utf8)
            try await storage.transaction { transaction async throws in
                _ = try await transaction.insertNotifications([makeNotification("large", body: body)])
            }
            let (compression, storedSize) = try await storage.transaction {
                transaction async throws -> (String?, Int) in
                let database = try #require(transaction as? SQLStorageTransaction).database
                let row = try #require(
                    try await database.raw(
                        """
                        SELECT pg_column_compression(body) AS compression, CAST(pg_column_size(body) AS BIGINT) AS size
                        FROM inbox_payloads WHERE dedupe_key = 'large'
                        """
                    ).first())
                return (
                    try row.decode(column: "compression", as: String?.self),
                    try row.decode(column: "size", as: Int.self)
                )
            }
            #expect(compression == nil)
            #expect(storedSize >= body.count)
            let stored = try await storage.transaction {
                try await $0.notification(store: .appStore, dedupeKey: "large")
            }
            #expect(stored?.body == body)
        }
    }
}
