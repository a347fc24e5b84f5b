import Foundation
import Hummingbird
public import Storekeeper

/// `/v1/customers`: the app's view of its customers.
struct CustomerRoutes {
    let service: CustomerService

    struct Debit: Decodable {
        var amount: Int
        var idempotencyKey: String
    }

    struct DebitResult: Encodable {
        var balance: String
        var amount: Int
        var remaining: Int
        var idempotencyKey: String
    }

    struct CreatedCustomer: Encodable {
        var id: String
        var appAccountToken: String
        var created: Bool
        var consumptionConsent: ConsumptionConsent?
    }

    /// `PUT /v1/customers/{id}`'s optional body: `consumptionConsent` true, false or null (unknown).
    struct CustomerUpdate: Decodable {
        var consumptionConsent: Bool?
        /// Whether the body names the consent at all (null clears it; absent leaves it).
        var setsConsent: Bool

        enum CodingKeys: String, CodingKey {
            case consumptionConsent
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            setsConsent = container.contains(.consumptionConsent)
            consumptionConsent = try container.decodeIfPresent(Bool.self, forKey: .consumptionConsent)
        }
    }

    /// A page of the purchase history.
    struct PurchasePage: Encodable {
        var purchases: [PurchaseView]
        /// Pass as `after` for the next page; present exactly when `hasMore`.
        var next: String?
        var hasMore: Bool
    }

    func register(on group: RouterGroup<BasicRequestContext>) {
        group.put("customers/:id") { request, context in
            let id = try customerID(context)
            let body = try await request.body.collect(upTo: 64 * 1024)
            // With a body, the customer is updated and must exist: consent never creates one.
            if body.readableBytes > 0 {
                let update = try decodeJSONBody(CustomerUpdate.self, Data(buffer: body))
                guard update.setsConsent else {
                    throw ServerError(.malformedBody, "the body sets nothing (expected consumptionConsent)")
                }
                let view = try await service.setConsumptionConsent(update.consumptionConsent, for: id)
                return try JSONResponse.make(
                    CreatedCustomer(
                        id: view.customerID.rawValue, appAccountToken: view.appAccountToken.uuidString.lowercased(),
                        created: false, consumptionConsent: view.consumptionConsent))
            }
            let (customer, created) = try await service.createOrFetch(id)
            return try JSONResponse.make(
                CreatedCustomer(
                    id: customer.id.rawValue, appAccountToken: customer.appAccountToken.uuidString.lowercased(),
                    created: created
                ),
                status: created ? .created : .ok
            )
        }
        group.get("customers/:id") { _, context in
            let id = try customerID(context)
            guard let view = try await service.view(of: id) else {
                throw ServerError.customerNotFound(id)
            }
            return JSONResponse.make(view)
        }
        group.get("customers/:id/purchases") { request, context in
            let id = try customerID(context)
            let query = request.uri.queryParameters
            let after = try PurchaseCursor.key(after: query.get("after"))
            let limit = try PageLimit.parse(query.get("limit"))
            guard let (purchases, hasMore) = try await service.purchaseHistory(of: id, after: after, limit: limit)
            else { throw ServerError.customerNotFound(id) }
            let next =
                hasMore
                ? purchases.last.map { PurchaseCursor(PurchaseKey(store: $0.store, id: $0.purchaseID)).text } : nil
            return try JSONResponse.make(PurchasePage(purchases: purchases, next: next, hasMore: hasMore))
        }
        // One route per store (`app-store`, `google-play`); the store's adapter reads its own body.
        group.post("customers/:id/purchases/:store") { request, context in
            let id = try customerID(context)
            let store = try Store(pathSegmentOf: context, refusedAs: .malformedSubmission)
            let body = try await request.body.collect(upTo: 256 * 1024)
            return JSONResponse.make(try await service.submit(Data(buffer: body), to: store, for: id))
        }
        group.post("customers/:id/balances/:balance/debits") { request, context in
            let id = try customerID(context)
            let balance = context.parameters.get("balance") ?? ""
            let debit = try await decode(Debit.self, request)
            guard debit.amount > 0 else {
                throw ServerError(.invalidAmount, "amount must be a positive integer")
            }
            guard !debit.idempotencyKey.isEmpty, debit.idempotencyKey.utf8.count <= 200 else {
                throw ServerError(.invalidIdempotencyKey, "idempotencyKey must be 1 to 200 bytes")
            }
            let (entry, remaining) = try await service.debit(
                id, balance: balance, amount: debit.amount, idempotencyKey: debit.idempotencyKey
            )
            return try JSONResponse.make(
                DebitResult(
                    balance: entry.balance, amount: -entry.amount, remaining: remaining,
                    idempotencyKey: debit.idempotencyKey
                )
            )
        }
    }
}

/// The customer id of a `/v1/customers/:id/…` path, refused with a specific error when unusable.
func customerID(_ context: BasicRequestContext) throws -> CustomerID {
    let raw = context.parameters.get("id") ?? ""
    if let problem = CustomerID.problem(with: raw) { throw ServerError(.invalidCustomerID, problem) }
    return CustomerID(raw)
}

/// Decodes a JSON request body, answering a specific 400 when it doesn't fit.
func decode<Value: Decodable>(_ type: Value.Type, _ request: Request) async throws -> Value {
    try decodeJSONBody(Value.self, Data(buffer: try await request.body.collect(upTo: 256 * 1024)))
}

extension Store {
    /// The store's segment in the API's paths (`/v1/notifications/app-store`, …).
    public var pathSegment: String {
        switch self {
        case .appStore: "app-store"
        case .googlePlay: "google-play"
        }
    }

    /// The store the route's `:store` segment names, or a specific error with `code`.
    init(pathSegmentOf context: BasicRequestContext, refusedAs code: ErrorCode) throws(ServerError) {
        let segment = context.parameters.get("store") ?? ""
        guard let store = Store(pathSegment: segment) else {
            throw ServerError(
                code,
                "unknown store '\(segment)' (expected \(Store.allCases.map(\.pathSegment).joined(separator: " or ")))")
        }
        self = store
    }

    init?(pathSegment: String) {
        guard let store = Store.allCases.first(where: { $0.pathSegment == pathSegment }) else { return nil }
        self = store
    }
}
