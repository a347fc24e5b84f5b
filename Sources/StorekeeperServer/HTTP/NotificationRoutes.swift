import Foundation
import Hummingbird
import NIOCore
import Storekeeper

/// `/v1/notifications`: the stores' webhooks, authenticated by the stores' own signatures. A 2xx
/// means the notification is durable; anything else makes the store deliver it again.
struct NotificationRoutes {
    let inbox: NotificationInbox
    let metrics: ServerMetrics
    let wake: @Sendable () -> Void

    func register(on group: RouterGroup<BasicRequestContext>) {
        // One webhook per store (`app-store`, `google-play`); the store's adapter authenticates it.
        group.post("notifications/:store") { request, context in
            let segment = context.parameters.get("store") ?? ""
            guard let store = Store(pathSegment: segment) else { throw HTTPError(.notFound) }
            let body = try await request.body.collect(upTo: 512 * 1024)
            let delivery = WebhookDelivery(body: Data(buffer: body), authorization: request.headers[.authorization])
            do {
                let receipt = try await inbox.receive(store, delivery)
                metrics.notificationReceived(store: store, result: receipt == .stored ? .stored : .duplicate)
                wake()
                return Response(status: .ok)
            } catch {
                let mapped = ErrorMapping.serverError(for: error)
                metrics.notificationReceived(store: store, result: .refused(mapped.code))
                throw mapped
            }
        }
    }
}
