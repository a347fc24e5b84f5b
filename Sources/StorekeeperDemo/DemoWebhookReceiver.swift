public import Foundation
import Hummingbird
public import Logging
public import StorekeeperServer
import Synchronization

/// The app backend's side of the demo: a small HTTP server on loopback that receives Storekeeper's
/// webhooks and checks each signature, as docs/events.md tells a receiver to.
public final class DemoWebhookReceiver: Sendable {
    /// One delivery received.
    public struct Delivery: Sendable, Hashable {
        public var eventID: String
        public var type: String
        /// Whether the signature verified under the secret and within the tolerance.
        public var signatureValid: Bool
    }

    public static let secret = "whsec_demo_0123456789abcdef"
    private let received = Mutex<[Delivery]>([])
    /// The time signatures are checked against (the demo's simulated clock).
    private let now: @Sendable () -> Date

    init(now: @escaping @Sendable () -> Date) {
        self.now = now
    }

    /// Everything received so far (repeats by event id left out, as a receiver drops them).
    public var deliveries: [Delivery] {
        var seen = Set<String>()
        return received.withLock { $0 }.filter { seen.insert($0.eventID).inserted }
    }

    /// Runs a receiver on a free loopback port while `body` runs; `body` gets it and its URL.
    /// `now` is the clock signatures are checked against.
    public static func withRunning<Result: Sendable>(
        now: @escaping @Sendable () -> Date, logger: Logger,
        _ body: (DemoWebhookReceiver, URL) async throws -> Result
    ) async throws -> Result {
        let receiver = DemoWebhookReceiver(now: now)
        let router = Router()
        router.post("webhooks") { request, _ -> Response in
            let body = Data(buffer: try await request.body.collect(upTo: 1 << 20))
            let signature = request.headers[values: .init(WebhookSignature.headerName)!].first ?? ""
            var valid = true
            do {
                try WebhookSignature.verify(header: signature, body: body, secret: Self.secret, now: receiver.now())
            } catch {
                valid = false
            }
            let type = request.headers[values: .init("Storekeeper-Event-Type")!].first ?? "?"
            let id = request.headers[values: .init("Storekeeper-Event-Id")!].first ?? ""
            receiver.received.withLock { $0.append(Delivery(eventID: id, type: type, signatureValid: valid)) }
            // A receiver answers 2xx only for what it accepts.
            return Response(status: valid ? .ok : .unauthorized)
        }
        let (bound, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) }, logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.runService(gracefulShutdownSignals: []) }
            var ports = bound.makeAsyncIterator()
            let port = await ports.next() ?? 0
            guard let url = URL(string: "http://127.0.0.1:\(port)/webhooks") else {
                group.cancelAll()
                throw DeploymentError(description: "no URL for the demo's webhook receiver")
            }
            do {
                let result = try await body(receiver, url)
                group.cancelAll()
                return result
            } catch {
                group.cancelAll()
                throw error
            }
        }
    }

    /// The webhook settings that send every event to this receiver; the story delivers after each
    /// step itself (``WebhookDispatcher/run()``), so the job's own rounds are an hour apart.
    public static func settings(url: URL) throws -> WebhookSettings {
        WebhookSettings(
            endpoints: [try WebhookEndpoint(name: "demo-backend", url: url, secrets: [try WebhookSecret(secret)])],
            pollInterval: 3_600)
    }
}
