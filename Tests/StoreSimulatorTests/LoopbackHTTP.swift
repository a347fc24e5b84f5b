import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// What a loopback server answered: status, headers (names lower-cased) and the body as a JSON
/// object (empty when the body is not one).
struct HTTPResult {
    var status: Int
    var headers: [String: String]
    var body: [String: Any]
}

/// Sends one request to a server on loopback (the simulator, a test's receiver) and reads the answer.
func loopbackRequest(
    _ method: HTTPMethod, _ url: String, json: String? = nil, bytes: [UInt8]? = nil, bearer: String? = nil
) async throws -> HTTPResult {
    var request = HTTPClientRequest(url: url)
    request.method = method
    if let bearer { request.headers.add(name: "Authorization", value: "Bearer \(bearer)") }
    if let json {
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: json))
    } else if let bytes {
        request.body = .bytes(ByteBuffer(bytes: bytes))
    }
    // A guard against a hang, not a speed check: under the whole suite's load a loopback answer has
    // taken over 10 s on CI.
    let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
    let body = try await response.body.collect(upTo: 1 << 20)
    let object = (try? JSONSerialization.jsonObject(with: Data(buffer: body))) as? [String: Any] ?? [:]
    var headers: [String: String] = [:]
    for header in response.headers { headers[header.name.lowercased()] = header.value }
    return HTTPResult(status: Int(response.status.code), headers: headers, body: object)
}
