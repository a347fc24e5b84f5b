import AppStoreServer
import Foundation
import Hummingbird

/// More of `/control/appstore/...`: offers, price increases, shared secrets and app receipts,
/// mirroring ``AppStoreSimulation``'s Swift API.
struct AppStoreOfferRoutes {
    let appStore: AppStoreSimulation

    struct RedeemOffer: Decodable {
        var offer: SimulatedOffer
        var productId: String?
    }

    struct OfferCode: Decodable {
        var customerId: String
        var productId: String
        var offer: SimulatedOffer
        /// Sandbox or Production; absent: the app's default.
        var environment: AppStoreServer.Environment?
    }

    struct PriceIncrease: Decodable {
        var price: Int64
        var requiresConsent: Bool?
    }

    struct SharedSecret: Decodable {
        var sharedSecret: String?
    }

    struct ReceiptRequest: Decodable {
        var customerId: String
        var bundleId: String
        /// Sandbox or Production; absent: the app's default.
        var environment: AppStoreServer.Environment?
    }

    struct Result: ResponseEncodable {
        var originalTransactionId: String
        var transactionId: String
        var environment: AppStoreServer.Environment

        init(_ result: AppStoreSimulation.PurchaseResult) {
            originalTransactionId = result.originalTransactionId
            transactionId = result.transactionId
            environment = result.environment
        }
    }

    struct Affected: ResponseEncodable {
        var originalTransactionIds: [String]
    }

    struct Receipt: ResponseEncodable {
        var receiptData: String
    }

    struct Done: ResponseEncodable {
        var ok = true
    }

    func register(on router: Router<BasicRequestContext>) {
        let control = router.group("control/appstore")
        control.post("subscriptions/:id/redeem-offer") { request, context in
            let id = try context.parameters.require("id")
            let body = try await request.decode(as: RedeemOffer.self, context: context)
            let result = try run { () throws(AppStoreSimulationError) in
                try appStore.redeemOffer(id, offer: body.offer, product: body.productId)
            }
            return Result(result)
        }
        control.post("offer-codes") { request, context in
            let body = try await request.decode(as: OfferCode.self, context: context)
            let result = try run { () throws(AppStoreSimulationError) in
                try appStore.redeemOfferCode(
                    customer: body.customerId, product: body.productId, offer: body.offer, environment: body.environment
                )
            }
            return Result(result)
        }
        control.post("products/:id/price-increase") { request, context in
            let id = try context.parameters.require("id")
            let body = try await request.decode(as: PriceIncrease.self, context: context)
            let affected = try run { () throws(AppStoreSimulationError) in
                try appStore.requestPriceIncrease(
                    product: id, newPrice: body.price, requiresConsent: body.requiresConsent ?? true)
            }
            return Affected(originalTransactionIds: affected)
        }
        control.post("subscriptions/:id/accept-price-increase") { _, context in
            let id = try context.parameters.require("id")
            try run { () throws(AppStoreSimulationError) in try appStore.acceptPriceIncrease(id) }
            return Done()
        }
        control.post("apps/:bundleId/shared-secret") { request, context in
            let bundleId = try context.parameters.require("bundleId")
            let body = try await request.decode(as: SharedSecret.self, context: context)
            try run { () throws(AppStoreSimulationError) in
                try appStore.setSharedSecret(body.sharedSecret, bundleId: bundleId)
            }
            return Done()
        }
        control.post("receipts") { request, context in
            let body = try await request.decode(as: ReceiptRequest.self, context: context)
            let receipt = try run { () throws(AppStoreSimulationError) in
                try appStore.makeAppReceipt(
                    customer: body.customerId, bundleId: body.bundleId, environment: body.environment)
            }
            return Receipt(receiptData: receipt.base64EncodedString())
        }
    }

    /// Runs a scenario step, turning its error into a 404 or 400 with the explanation.
    private func run<Value>(_ body: () throws(AppStoreSimulationError) -> Value) throws -> Value {
        do {
            return try body()
        } catch {
            throw HTTPError(error.isNotFound ? .notFound : .badRequest, message: error.description)
        }
    }
}
