import AppStoreServer
import Crypto
import Foundation
import Hummingbird

/// `/control/appstore/...`: the scenario API over HTTP (JSON), for the demo and tests in other
/// languages. Mirrors ``AppStoreSimulation``'s Swift API.
struct AppStoreControlRoutes {
    let appStore: AppStoreSimulation

    struct Purchase: Decodable {
        var customerId: String
        var productId: String
        var appAccountToken: UUID?
        var offer: SimulatedOffer?
        var inAppOwnershipType: InAppOwnershipType?
        /// Sandbox or Production; absent: the app's default.
        var environment: AppStoreServer.Environment?
    }

    struct NotificationURL: Decodable {
        var url: String?
        /// Sandbox or Production; absent: both.
        var environment: AppStoreServer.Environment?
    }

    struct Advance: Decodable {
        var seconds: Double
    }

    struct AutoRenew: Decodable {
        var on: Bool
    }

    struct ChangeProduct: Decodable {
        var productId: String
    }

    struct Refund: Decodable {
        var revocationPercentage: Int32?
        var revocationReason: RevocationReason?
    }

    struct RefundRequest: Decodable {
        var reason: ConsumptionRequestReason?
    }

    struct APIKey: Decodable {
        var keyId: String
        var publicKeyPEM: String
    }

    struct Faults: Decodable {
        var faults: [DeliveryFault]
    }

    struct Wrapped<Value: Encodable & Sendable>: ResponseEncodable {
        var value: Value
        func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
    }

    struct Done: ResponseEncodable {
        var ok = true
    }

    struct Change: ResponseEncodable {
        var change: AppStoreSimulation.ProductChange
    }

    struct NotificationSummary: ResponseEncodable {
        struct Item: Encodable {
            var sequence: Int
            var notificationUUID: String
            var bundleId: String
            var environment: AppStoreServer.Environment
            var notificationType: String?
            var subtype: String?
            var status: DeliveryStatus
            var signedPayload: String
            var sendAttempts: [DeliveryAttempt]
        }
        var notifications: [Item]
    }

    func register(on router: Router<BasicRequestContext>) {
        let control = router.group("control/appstore")
        control.post("apps") { request, context in
            let app = try await request.decode(as: SimulatedApp.self, context: context)
            appStore.addApp(app)
            return Wrapped(value: app)
        }
        control.post("products") { request, context in
            let product = try await request.decode(as: SimulatedProduct.self, context: context)
            try run { () throws(AppStoreSimulationError) in try appStore.addProduct(product) }
            return Wrapped(value: product)
        }
        control.post("purchases") { request, context in
            let body = try await request.decode(as: Purchase.self, context: context)
            let result = try run { () throws(AppStoreSimulationError) in
                try appStore.purchase(
                    customer: body.customerId, product: body.productId, appAccountToken: body.appAccountToken,
                    offer: body.offer, ownership: body.inAppOwnershipType ?? .purchased, environment: body.environment)
            }
            return Wrapped(value: result)
        }
        control.post("apps/:bundleId/notification-url") { request, context in
            let bundleId = try context.parameters.require("bundleId")
            let body = try await request.decode(as: NotificationURL.self, context: context)
            try run { () throws(AppStoreSimulationError) in
                try appStore.setNotificationURL(body.url, bundleId: bundleId, environment: body.environment)
            }
            return Done()
        }
        control.post("advance") { request, context in
            let body = try await request.decode(as: Advance.self, context: context)
            guard body.seconds >= 0, body.seconds.isFinite else {
                throw HTTPError(.badRequest, message: "seconds must be a finite number ≥ 0")
            }
            try run { () throws(AppStoreSimulationError) in try appStore.advance(by: body.seconds) }
            return Done()
        }
        control.post("settle") { _, _ in
            try await appStore.deliveriesSettled()
            return Done()
        }
        control.get("subscriptions/:id") { _, context in
            let id = try context.parameters.require("id")
            guard let snapshot = appStore.subscription(id) else {
                throw HTTPError(.notFound, message: "no subscription \(id)")
            }
            return Wrapped(value: snapshot)
        }
        control.post("subscriptions/:id/auto-renew") { request, context in
            let id = try context.parameters.require("id")
            let body = try await request.decode(as: AutoRenew.self, context: context)
            try run { () throws(AppStoreSimulationError) in try appStore.setAutoRenew(id, on: body.on) }
            return Done()
        }
        control.post("subscriptions/:id/fail-billing") { _, context in
            let id = try context.parameters.require("id")
            try run { () throws(AppStoreSimulationError) in try appStore.failBilling(id) }
            return Done()
        }
        control.post("subscriptions/:id/recover-billing") { _, context in
            let id = try context.parameters.require("id")
            try run { () throws(AppStoreSimulationError) in try appStore.recoverBilling(id) }
            return Done()
        }
        control.post("subscriptions/:id/change-product") { request, context in
            let id = try context.parameters.require("id")
            let body = try await request.decode(as: ChangeProduct.self, context: context)
            let change = try run { () throws(AppStoreSimulationError) in
                try appStore.changeProduct(id, to: body.productId)
            }
            return Change(change: change)
        }
        control.post("transactions/:id/refund") { request, context in
            let id = try context.parameters.require("id")
            let body = try await request.decode(as: Refund.self, context: context)
            try run { () throws(AppStoreSimulationError) in
                try appStore.refund(
                    transactionId: id, revocationPercentage: body.revocationPercentage,
                    reason: body.revocationReason ?? .other)
            }
            return Done()
        }
        control.post("transactions/:id/refund-request") { request, context in
            let id = try context.parameters.require("id")
            let body = try await request.decode(as: RefundRequest.self, context: context)
            try run { () throws(AppStoreSimulationError) in
                try appStore.requestRefund(transactionId: id, reason: body.reason ?? .unintendedPurchase)
            }
            return Done()
        }
        // What the app answered the refund requests of a transaction with, and what each decided.
        control.get("transactions/:id/consumption") { _, context in
            let id = try context.parameters.require("id")
            return Wrapped(value: ["answers": appStore.consumptionAnswers(transactionId: id)])
        }
        control.post("transactions/:id/refund-decline") { _, context in
            let id = try context.parameters.require("id")
            try run { () throws(AppStoreSimulationError) in try appStore.declineRefund(transactionId: id) }
            return Done()
        }
        control.post("transactions/:id/refund-reverse") { _, context in
            let id = try context.parameters.require("id")
            try run { () throws(AppStoreSimulationError) in try appStore.reverseRefund(transactionId: id) }
            return Done()
        }
        control.post("transactions/:id/family-revoke") { _, context in
            let id = try context.parameters.require("id")
            try run { () throws(AppStoreSimulationError) in try appStore.revokeFamilySharing(transactionId: id) }
            return Done()
        }
        control.post("api-keys") { request, context in
            let body = try await request.decode(as: APIKey.self, context: context)
            guard let key = try? P256.Signing.PublicKey(pemRepresentation: body.publicKeyPEM) else {
                throw HTTPError(.badRequest, message: "publicKeyPEM is not a P-256 public key")
            }
            appStore.registerAPIKey(keyId: body.keyId, publicKey: key)
            return Done()
        }
        control.post("delivery-faults") { request, context in
            let body = try await request.decode(as: Faults.self, context: context)
            appStore.injectDeliveryFaults(body.faults)
            return Done()
        }
        control.get("notifications") { _, _ in
            NotificationSummary(
                notifications: appStore.notifications.map {
                    .init(
                        sequence: $0.sequence, notificationUUID: $0.notificationUUID, bundleId: $0.bundleId,
                        environment: $0.environment, notificationType: $0.payload.notificationType?.rawValue,
                        subtype: $0.payload.subtype?.rawValue,
                        status: $0.status, signedPayload: $0.signedPayload, sendAttempts: $0.attempts)
                })
        }
    }

    /// Runs a scenario step, turning its error into a 404 or 400 with the explanation.
    private func run<Result>(_ body: () throws(AppStoreSimulationError) -> Result) throws -> Result {
        do {
            return try body()
        } catch {
            throw HTTPError(error.isNotFound ? .notFound : .badRequest, message: error.description)
        }
    }
}
