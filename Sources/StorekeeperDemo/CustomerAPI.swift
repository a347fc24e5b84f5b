import AsyncHTTPClient
public import Foundation
import NIOCore
import NIOHTTP1
public import Storekeeper

/// The calls an app's backend makes to Storekeeper's `/v1/customers` API, over HTTP.
public struct CustomerAPI: Sendable {
    /// An answer that is not the customer view: the status and Storekeeper's error code and message.
    public struct Refusal: Error, Sendable, CustomStringConvertible {
        public var status: Int
        public var code: String
        public var message: String
        public var description: String { "\(status) \(code): \(message)" }
    }

    public let baseURL: String
    let apiKey: String

    public init(baseURL: String, apiKey: String) {
        self.baseURL = baseURL
        self.apiKey = apiKey
    }

    /// `PUT /v1/customers/{id}`: creates the customer (or fetches it) and returns the
    /// appAccountToken the app passes to the stores with its purchases.
    public func createCustomer(_ id: String) async throws -> UUID {
        struct Created: Decodable { var appAccountToken: UUID }
        let created: Created = try await send(.PUT, "/v1/customers/\(id)")
        return created.appAccountToken
    }

    /// `GET /v1/customers/{id}`.
    public func customer(_ id: String) async throws -> CustomerView {
        try await send(.GET, "/v1/customers/\(id)")
    }

    /// `POST /v1/customers/{id}/purchases/app-store` with a transaction id (of the app `bundleID`,
    /// which a server with several App Store apps needs to know).
    public func submitAppStore(
        customer id: String, transactionId: String, bundleID: String? = nil
    ) async throws -> CustomerView {
        var body = ["transactionId": transactionId]
        if let bundleID { body["bundleId"] = bundleID }
        return try await send(.POST, "/v1/customers/\(id)/purchases/app-store", body: body)
    }

    /// `POST /v1/customers/{id}/purchases/google-play` with a purchase token (of the app
    /// `packageName`, which a server with several Google Play apps needs to know).
    public func submitGooglePlay(
        customer id: String, purchaseToken: String, productId: String? = nil, packageName: String? = nil
    ) async throws -> CustomerView {
        var body = ["purchaseToken": purchaseToken]
        if let productId { body["productId"] = productId }
        if let packageName { body["packageName"] = packageName }
        return try await send(.POST, "/v1/customers/\(id)/purchases/google-play", body: body)
    }

    /// `PUT /v1/customers/{id}` with `consumptionConsent`: whether the customer agreed to share
    /// consumption data with Apple in refund requests.
    public func setConsumptionConsent(_ id: String, _ consented: Bool) async throws {
        struct Body: Encodable { var consumptionConsent: Bool }
        struct Answer: Decodable {}
        let _: Answer = try await send(.PUT, "/v1/customers/\(id)", body: Body(consumptionConsent: consented))
    }

    /// `POST /v1/customers/{id}/balances/{balance}/debits`: the app spends some of a balance.
    public func debit(_ id: String, balance: String, amount: Int, idempotencyKey: String) async throws {
        struct Body: Encodable {
            var amount: Int
            var idempotencyKey: String
        }
        struct Answer: Decodable {}
        let _: Answer = try await send(
            .POST, "/v1/customers/\(id)/balances/\(balance)/debits",
            body: Body(amount: amount, idempotencyKey: idempotencyKey))
    }

    /// One answer to a refund consumption request, as `GET /v1/customers/{id}/refund-requests` shows it.
    public struct RefundRequestAnswer: Decodable, Sendable {
        public struct Sent: Decodable, Sendable {
            public var consumptionPercentage: Int?
            public var deliveryStatus: String
            public var refundPreference: String?
        }
        public var transactionId: String
        public var status: String
        public var sent: Sent?
        public var skipReason: String?
    }

    /// `GET /v1/customers/{id}/refund-requests`.
    public func refundRequests(_ id: String) async throws -> [RefundRequestAnswer] {
        struct Answer: Decodable { var refundRequests: [RefundRequestAnswer] }
        let answer: Answer = try await send(.GET, "/v1/customers/\(id)/refund-requests")
        return answer.refundRequests
    }

    private static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()

    private func send<Answer: Decodable>(
        _ method: HTTPMethod, _ path: String, body: (any Encodable)? = nil
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(apiKey)")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(data: try JSONEncoder().encode(body)))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let data = Data(buffer: try await response.body.collect(upTo: 1 << 22))
        guard (200..<300).contains(response.status.code) else {
            let error = (try? JSONSerialization.jsonObject(with: data) as? [String: Any])?["error"] as? [String: Any]
            throw Refusal(
                status: Int(response.status.code), code: error?["code"] as? String ?? "unknown",
                message: error?["message"] as? String ?? "")
        }
        return try Self.decoder.decode(Answer.self, from: data)
    }
}
