import AppStoreServer
import Foundation
import Hummingbird
import Storekeeper

/// `/v1/customers/{id}/signatures/…`: what an app asks its server to sign for StoreKit.
struct SignatureRoutes {
    let service: OfferSigningService

    struct PromotionalOfferBody: Decodable {
        var productId: String
        var offerId: String
        /// `v1` or `jws`.
        var format: String
        var bundleId: String?
    }

    struct EligibilityBody: Decodable {
        var productId: String
        var bundleId: String?
    }

    struct PromotionalOfferV1Answer: Encodable {
        var format = "v1"
        var keyId: String
        var nonce: String
        var timestamp: Int64
        var signature: String
        /// What the app passes as `applicationUsername` (the signed account token, lower-cased).
        var applicationUsername: String
    }

    struct JWSAnswer: Encodable {
        var format = "jws"
        var signature: String
    }

    struct EligibilityAnswer: Encodable {
        var productId: String
        var eligible: Bool
        var signature: String
    }

    func register(on group: RouterGroup<BasicRequestContext>) {
        group.post("customers/:id/signatures/promotional-offer") { request, context in
            let id = try customerID(context)
            let body = try await decode(PromotionalOfferBody.self, request)
            guard let format = OfferSigningService.PromotionalFormat(rawValue: body.format) else {
                throw ServerError(.malformedBody, "format must be v1 or jws, not '\(body.format)'")
            }
            switch try await service.promotionalOffer(
                for: id, productID: body.productId, offerID: body.offerId, format: format,
                bundleID: body.bundleId.map(AppID.init(rawValue:)))
            {
            case .v1(let signature, let username):
                return try JSONResponse.make(
                    PromotionalOfferV1Answer(
                        keyId: signature.keyId, nonce: signature.nonce, timestamp: signature.timestamp,
                        signature: signature.signature, applicationUsername: username))
            case .jws(let jws):
                return try JSONResponse.make(JWSAnswer(signature: jws))
            }
        }
        group.post("customers/:id/signatures/introductory-offer-eligibility") { request, context in
            let id = try customerID(context)
            let body = try await decode(EligibilityBody.self, request)
            let (eligible, signature) = try await service.introductoryOfferEligibility(
                for: id, productID: body.productId, bundleID: body.bundleId.map(AppID.init(rawValue:)))
            return try JSONResponse.make(
                EligibilityAnswer(productId: body.productId, eligible: eligible, signature: signature))
        }
        group.post("customers/:id/signatures/advanced-commerce") { request, context in
            let id = try customerID(context)
            let data = Data(buffer: try await request.body.collect(upTo: 256 * 1024))
            guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
                let inner = object["request"] as? [String: Any],
                let json = try? JSONSerialization.data(withJSONObject: inner, options: [.sortedKeys])
            else {
                throw ServerError(
                    .malformedBody, "the body is not {\"request\": {…the in-app request…}, \"bundleId\"?}")
            }
            let bundleID = (object["bundleId"] as? String).map(AppID.init(rawValue:))
            let signature = try await service.advancedCommerceRequest(json, for: id, bundleID: bundleID)
            return try JSONResponse.make(JWSAnswer(format: "jws", signature: signature))
        }
    }
}
