import Foundation
import SQLKit
import Storekeeper
import Testing

@testable import StorekeeperStorage

/// `pruneNotifications`: processed notifications older than the cutoff go, oldest first, with
/// their payloads; nothing still to do goes, whatever its age.
@Suite struct InboxRetentionTests {
    @Test(arguments: StorageBackend.available)
    func processedNotificationsPastTheCutoffGoWithTheirPayloadsOldestFirst(backend: StorageBackend) async throws {
        try await TestDatabase.withFresh(backend) { storage, _ async throws in
            // Received at 1…6 s (processed), 7 s (processed, after the cutoff), and two old ones
            // still to do: one pending, one failed.
            var notifications = (1...7).map { makeNotification("done-\($0)", receivedAt: at(Int64($0) * 1000)) }
            notifications.append(makeNotification("pending", store: .googlePlay, receivedAt: at(0)))
            notifications.append(makeNotification("failed", receivedAt: at(500)))
            try await storage.transaction { [notifications] transaction async throws in
                _ = try await transaction.insertNotifications(notifications)
                try await transaction.markNotificationsProcessed(Array(notifications.prefix(7)), at: at(10_000))
                var failed = notifications[8]
                failed.status = .failed
                failed.lastError = "gave up"
                try await transaction.updateNotification(failed)
            }
            let cutoff = at(6_500)
            // A page of 4: the four oldest processed ones.
            let first = try await storage.transaction {
                try await $0.pruneNotifications(processedReceivedBefore: cutoff, limit: 4)
            }
            #expect(first == 4)
            let second = try await storage.transaction {
                try await $0.pruneNotifications(processedReceivedBefore: cutoff, limit: 4)
            }
            #expect(second == 2, "done-5 and done-6; done-7 arrived after the cutoff")
            let third = try await storage.transaction {
                try await $0.pruneNotifications(processedReceivedBefore: cutoff, limit: 4)
            }
            #expect(third == 0)

            let kept = try await storage.transaction { [notifications] transaction async throws in
                var kept: [String] = []
                for notification in notifications
                where try await transaction.notification(store: notification.store, dedupeKey: notification.dedupeKey)
                    != nil
                {
                    kept.append(notification.dedupeKey)
                }
                return kept
            }
            #expect(kept == ["done-7", "pending", "failed"])
            let payloads = try await storage.transaction { transaction async throws -> [String] in
                let database = try #require(transaction as? SQLStorageTransaction).database
                return try await database.raw("SELECT dedupe_key FROM inbox_payloads ORDER BY dedupe_key").all()
                    .map { try $0.decode(column: "dedupe_key", as: String.self) }
            }
            #expect(payloads == ["done-7", "failed", "pending"], "the payloads went with their rows")
        }
    }
}
