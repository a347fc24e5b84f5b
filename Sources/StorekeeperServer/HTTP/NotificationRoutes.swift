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
            let body = try await request.body.collect(upTo: 512 * 1024)
            do {
                let receipt = try await inbox.receiveAppStore(body: Data(buffer: body))
                metrics.notificationReceived(store: "app_store", result: receipt == .stored ? "stored" : "duplicate")
                wake()
                return Response(status: .ok)
            } catch {
                let mapped = ErrorMapping.apiError(for: error)
                metrics.notificationReceived(store: "app_store", result: mapped.code)
                throw mapped
            }
        }
    }
}
