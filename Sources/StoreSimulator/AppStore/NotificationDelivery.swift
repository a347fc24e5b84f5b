import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// POSTs `{"signedPayload": …}` bodies with AsyncHTTPClient and reports Apple's `sendAttemptResult`.
struct NotificationPoster: Sendable {
    var timeout: TimeAmount

    init(timeout: Duration) {
        let (seconds, attoseconds) = timeout.components
        self.timeout = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    struct Body: Encodable {
        var signedPayload: String
    }

    func post(_ signedPayload: String, to url: String) async -> (result: String, status: Int?) {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        guard let body = try? JSONEncoder().encode(Body(signedPayload: signedPayload)) else {
            return ("OTHER", nil)
        }
        request.body = .bytes(ByteBuffer(bytes: Array(body)))
        do {
            let response = try await HTTPClient.shared.execute(request, timeout: timeout)
            _ = try? await response.body.collect(upTo: 1 << 16)
            let code = Int(response.status.code)
            return ((200...206).contains(code) ? "SUCCESS" : "UNSUCCESSFUL_HTTP_RESPONSE_CODE", code)
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout {
            return ("TIMED_OUT", nil)
        } catch {
            return ("NO_RESPONSE", nil)
        }
    }
}
