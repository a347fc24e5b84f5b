import Crypto
import Foundation
import Hummingbird
import StoreCore
import Storekeeper

/// Requires an API key (`Authorization: Bearer <key>`) on the customer API: the secret key may do
/// everything, a read-only key only GET. Keys are compared by their SHA-256, the only form kept.
struct APIKeyMiddleware<Context: RequestContext>: RouterMiddleware {
    let keys: [String: APIKeyRecord.Scope]

    init(keys: [ConfiguredAPIKey]) {
        self.keys = Dictionary(keys.map { (Self.hash($0.secret), $0.scope) }, uniquingKeysWith: { first, _ in first })
    }

    static func hash(_ secret: String) -> String {
        Hex.encode(SHA256.hash(data: Data(secret.utf8)))
    }

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer ") else {
            throw ServerError(.missingAPIKey, "send the API key as Authorization: Bearer <key>")
        }
        guard let scope = keys[Self.hash(String(header.dropFirst("Bearer ".count)))] else {
            throw ServerError(.invalidAPIKey, "the API key is not valid")
        }
        if scope == .readOnly && request.method != .get && request.method != .head {
            throw ServerError(.readOnlyAPIKey, "a read-only API key can only read")
        }
        if scope == .appGateway && !Self.appGatewayAllows(request.method, request.uri.path) {
            throw ServerError(
                .apiKeyScope,
                "an app_gateway key may only submit purchases and app transactions and ask for signatures")
        }
        return try await next(request, context)
    }

    /// What an app-facing gateway may call: `POST /v1/customers/{id}/purchases/{store}`,
    /// `…/app-transactions` and `…/signatures/{kind}`.
    static func appGatewayAllows(_ method: HTTPRequest.Method, _ path: String) -> Bool {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true)
        guard method == .post, parts.count >= 4, parts[0] == "v1", parts[1] == "customers" else { return false }
        switch (parts[3], parts.count) {
        case ("purchases", 5), ("app-transactions", 4), ("signatures", 5): return true
        default: return false
        }
    }
}
