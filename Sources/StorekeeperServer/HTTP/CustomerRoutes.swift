import Foundation
import Hummingbird
import Storekeeper

/// `/v1/customers`: the app's view of its customers.
struct CustomerRoutes {
    let service: CustomerService

    struct AppStoreSubmission: Decodable {
        var signedTransaction: String?
        var transactionId: String?
        var environment: String?
        var appReceipt: String?
    }

    struct GooglePlaySubmission: Decodable {
        var purchaseToken: String?
        var productId: String?
        var packageName: String?
    }

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
    }

    func register(on group: RouterGroup<BasicRequestContext>) {
        group.put("customers/:id") { _, context in
            let id = try customerID(context)
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
                throw ServiceError.customerNotFound(id)
            }
            return try JSONResponse.make(view)
        }
        group.post("customers/:id/purchases/app-store") { request, context in
            let id = try customerID(context)
            let submission = try await decode(AppStoreSubmission.self, request)
            let facts: [PurchaseFact]
            if let jws = submission.signedTransaction {
                facts = [try await service.appStoreFact(signedTransaction: jws)]
            } else if let transactionID = submission.transactionId {
                facts = [
                    try await service.appStoreFact(transactionID: transactionID, environment: submission.environment)
                ]
            } else if let receipt = submission.appReceipt {
                facts = try await service.appStoreFacts(appReceipt: receipt, environment: submission.environment)
            } else {
                throw APIError(
                    .badRequest, "malformed-submission", "send one of signedTransaction, transactionId or appReceipt"
                )
            }
            // Everything is verified before anything is recorded.
            var view: CustomerView?
            for fact in facts {
                let cause = ChangeCause(source: "submission", event: "app-store", reference: fact.key.id)
                let (submitted, purchase) = try await service.submit(fact, cause: cause, for: id)
                await service.setAppAccountTokenIfMissing(on: purchase, fact: fact, view: submitted)
                view = submitted
            }
            guard let view else {
                throw APIError(.notFound, "purchase-not-found", "the submission names no purchase")
            }
            return try JSONResponse.make(view)
        }
        group.post("customers/:id/purchases/google-play") { request, context in
            let id = try customerID(context)
            let submission = try await decode(GooglePlaySubmission.self, request)
            guard let token = submission.purchaseToken, !token.isEmpty else {
                throw APIError(
                    .badRequest, "malformed-submission", "send purchaseToken (and productId for one-time products)")
            }
            let view = try await service.submitGooglePlay(
                token: token, productID: submission.productId, packageName: submission.packageName, for: id)
            return try JSONResponse.make(view)
        }
        group.post("customers/:id/balances/:balance/debits") { request, context in
            let id = try customerID(context)
            let balance = context.parameters.get("balance") ?? ""
            let debit = try await decode(Debit.self, request)
            guard debit.amount > 0 else {
                throw APIError(.badRequest, "invalid-amount", "amount must be a positive integer")
            }
            guard !debit.idempotencyKey.isEmpty, debit.idempotencyKey.utf8.count <= 200 else {
                throw APIError(.badRequest, "invalid-idempotency-key", "idempotencyKey must be 1 to 200 bytes")
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

    func customerID(_ context: BasicRequestContext) throws -> CustomerID {
        let raw = context.parameters.get("id") ?? ""
        if let problem = CustomerID.problem(with: raw) { throw APIError(.badRequest, "invalid-customer-id", problem) }
        return CustomerID(raw)
    }
}

/// Decodes a JSON request body, answering a specific 400 when it doesn't fit.
func decode<Value: Decodable>(_ type: Value.Type, _ request: Request) async throws -> Value {
    let body = try await request.body.collect(upTo: 256 * 1024)
    do {
        return try JSONDecoder().decode(Value.self, from: Data(buffer: body))
    } catch {
        throw APIError(.badRequest, "malformed-body", "the body is not the expected JSON: \(error)")
    }
}
