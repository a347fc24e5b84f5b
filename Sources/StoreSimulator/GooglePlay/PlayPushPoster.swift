import AsyncHTTPClient
import Foundation
import GooglePlay
import NIOCore

/// POSTs Pub/Sub push envelopes with AsyncHTTPClient, authenticated with an OIDC bearer token,
/// and reports the endpoint's status (nil when it did not answer).
struct PlayPushPoster: Sendable {
    var timeout: TimeAmount

    init(timeout: Duration) {
        let (seconds, attoseconds) = timeout.components
        self.timeout = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    /// The push body: `{"message": {"data", "messageId", "message_id", "publishTime",
    /// "publish_time", "attributes"}, "subscription"}`.
    static func envelope(_ message: PlayPushMessage, subscription: String) -> Data {
        let envelope = PubSubPushEnvelope(
            message: PubSubMessage(
                payload: message.notificationJSON, attributes: [:], messageId: message.messageId,
                publishTime: message.publishTime),
            subscription: subscription)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(envelope)) ?? Data("{}".utf8)
    }

    func post(_ body: Data, to url: String, bearer: String?) async -> Int? {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        if let bearer { request.headers.add(name: "Authorization", value: "Bearer " + bearer) }
        request.body = .bytes(ByteBuffer(bytes: Array(body)))
        do {
            let response = try await HTTPClient.shared.execute(request, timeout: timeout)
            _ = try? await response.body.collect(upTo: 1 << 16)
            return Int(response.status.code)
        } catch {
            return nil
        }
    }
}
