import Foundation
import Hummingbird
import Storekeeper
import StorekeeperStorage

/// `GET /v1/inbox`: the stored store notifications by status — above all the ones whose
/// processing keeps failing, with the reason — so nothing is silently dropped. Bodies (signed
/// payloads) are not listed.
struct InboxRoutes {
    let storage: any Storage

    struct Listing: Encodable {
        var notifications: [Entry]
    }

    struct Entry: Encodable {
        var store: Store
        var dedupeKey: String
        var status: InboxNotification.Status
        var attempts: Int
        var receivedAt: Date
        var nextAttemptAt: Date?
        var processedAt: Date?
        var lastError: String?
    }

    func register(on group: RouterGroup<BasicRequestContext>) {
        group.get("inbox") { request, _ in
            let statusText = request.uri.queryParameters.get("status") ?? InboxNotification.Status.failed.rawValue
            guard let status = InboxNotification.Status(rawValue: statusText) else {
                let known = InboxNotification.Status.allCases.map(\.rawValue).joined(separator: ", ")
                throw ServerError(.invalidQuery, "status must be one of \(known)")
            }
            let count = try PageLimit.parse(request.uri.queryParameters.get("limit"))
            let found = try await storage.transaction { try await $0.notifications(status: status, limit: count) }
            let entries = found.map {
                Entry(
                    store: $0.store, dedupeKey: $0.dedupeKey, status: $0.status, attempts: $0.attempts,
                    receivedAt: $0.receivedAt, nextAttemptAt: $0.nextAttemptAt, processedAt: $0.processedAt,
                    lastError: $0.lastError)
            }
            return try JSONResponse.make(Listing(notifications: entries))
        }
    }
}
