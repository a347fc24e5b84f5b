import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The HTTP calls the process tests make to a running `storekeeper serve`, with its secret API key.
struct ServerAPI {
    let baseURL: String
    let apiKey: String

    /// The decoded JSON answer to `method path`.
    func json(_ path: String, method: String = "GET") async throws -> Any {
        var request = URLRequest(url: try #require(URL(string: baseURL + path)))
        request.httpMethod = method
        request.setValue("Bearer \(apiKey)", forHTTPHeaderField: "Authorization")
        let (body, _) = try await URLSession.shared.data(for: request)
        return try JSONSerialization.jsonObject(with: body)
    }

    /// Creates the customer; returns its app account token.
    func createCustomer(_ id: String) async throws -> UUID {
        let object = try await json("/v1/customers/\(id)", method: "PUT") as? [String: Any]
        return try #require(UUID(uuidString: object?["appAccountToken"] as? String ?? ""))
    }
}

/// Polls `condition` until it holds; records an issue if it doesn't within `timeout` seconds.
func waitUntil(timeout: TimeInterval, _ condition: () async -> Bool) async throws {
    let deadline = Date().addingTimeInterval(timeout)
    while await !condition() {
        guard Date() < deadline else {
            Issue.record("not reached within \(timeout) s")
            return
        }
        try await Task.sleep(for: .milliseconds(50))
    }
}
