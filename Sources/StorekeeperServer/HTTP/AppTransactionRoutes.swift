import Foundation
import Hummingbird
import Storekeeper

/// `POST /v1/customers/{id}/app-transactions`: the app's backend submits the app transaction
/// StoreKit gave the app (`AppTransaction.shared`'s JWS).
struct AppTransactionRoutes {
    let service: AppTransactionService

    struct Submission: Decodable {
        var signedAppTransaction: String
    }

    struct Linked: Encodable {
        var customerId: String
        var appTransactionId: String
        var bundleId: String
        var environment: String
        var linkedAt: Date
    }

    func register(on group: RouterGroup<BasicRequestContext>) {
        group.post("customers/:id/app-transactions") { request, context in
            let id = try customerID(context)
            let submission = try await decode(Submission.self, request)
            let link = try await service.submit(submission.signedAppTransaction, for: id)
            return try JSONResponse.make(
                Linked(
                    customerId: link.customerID.rawValue, appTransactionId: link.appTransactionID,
                    bundleId: link.app.rawValue, environment: link.environment.rawValue, linkedAt: link.linkedAt))
        }
    }
}
