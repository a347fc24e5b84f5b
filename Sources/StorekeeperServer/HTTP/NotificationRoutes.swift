import Foundation
import Hummingbird
import NIOCore

/// `/v1/notifications`: the stores' webhooks, authenticated by the stores' own signatures. A 2xx
/// means the notification is durable; anything else makes the store deliver it again.
struct NotificationRoutes {
    let inbox: NotificationInbox
    let metrics: ServerMetrics
    let wake: @Sendable () -> Void

    func register(on group: RouterGroup<BasicRequestContext>) {
        group.post("notifications/app-store") { request, _ in
            try await receive(request, store: "app_store") { try await inbox.receiveAppStore(body: $0) }
        }
        group.post("notifications/google-play") { request, _ in
            let authorization = request.headers[.authorization]
            return try await receive(request, store: "google_play") {
                try await inbox.receiveGooglePlay(authorization: authorization, body: $0)
            }
        }
    }

    /// Stores one delivery through `store`, counts the outcome and wakes the worker; the answer is
    /// a 200 only once the notification is durable.
    private func receive(
        _ request: Request, store: String, _ storeBody: (Data) async throws -> NotificationInbox.Receipt
    ) async throws -> Response {
        let body = try await request.body.collect(upTo: 512 * 1024)
        do {
            let receipt = try await storeBody(Data(buffer: body))
            metrics.notificationReceived(store: store, result: receipt == .stored ? "stored" : "duplicate")
            wake()
            return Response(status: .ok)
        } catch {
            let mapped = ErrorMapping.apiError(for: error)
            metrics.notificationReceived(store: store, result: mapped.code)
            throw mapped
        }
    }
}
