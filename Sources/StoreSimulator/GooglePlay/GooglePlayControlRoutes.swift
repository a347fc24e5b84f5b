import Foundation
import GooglePlay
import Hummingbird

/// `/control/googleplay/...`: the Google Play scenario API over HTTP (JSON), for the demo and tests
/// in other languages. Mirrors ``GooglePlaySimulation``'s Swift API.
struct GooglePlayControlRoutes {
    let googlePlay: GooglePlaySimulation
    /// Creates a service account key and writes its key file (``StoreSimulator/writeServiceAccount(email:projectID:)``).
    let makeServiceAccount:
        @Sendable (_ email: String?, _ projectID: String?) throws -> (
            account: GooglePlayIdentity.ServiceAccount, path: String
        )

    struct ServiceAccountRequest: Decodable {
        var email: String?
        var projectId: String?
    }

    /// A new service account key: where its key file is, and the file's contents.
    struct ServiceAccountCreated: ResponseEncodable {
        var email: String
        var privateKeyId: String
        var keyFile: String
        var key: [String: String]
    }

    struct SubscriptionPurchase: Decodable {
        var packageName: String
        var productId: String
        var basePlanId: String?
        var options: PlayPurchaseOptions?
    }

    struct ProductPurchase: Decodable {
        var packageName: String
        var productId: String
        var quantity: Int?
        var options: PlayPurchaseOptions?
    }

    struct Advance: Decodable {
        var seconds: Double
    }

    struct Pause: Decodable {
        var cycles: Int?
    }

    struct Change: Decodable {
        var productId: String
        var basePlanId: String?
        var replacementMode: PlayReplacementMode?
    }

    struct TopUp: Decodable {
        var basePlanId: String?
    }

    struct Refund: Decodable {
        var quantity: Int?
        var revoke: Bool?
        var voidedReason: Int?
        var voidedSource: Int?
    }

    struct TestNotificationRequest: Decodable {
        var packageName: String
    }

    struct Faults: Decodable {
        var faults: [PlayPushFault]
    }

    struct Wrapped<Value: Encodable & Sendable>: ResponseEncodable {
        var value: Value
        func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
    }

    struct Done: ResponseEncodable {
        var ok = true
    }

    struct Recovered: ResponseEncodable {
        var orderId: String?
    }

    struct PushSummary: ResponseEncodable {
        struct Item: Encodable {
            var sequence: Int
            var messageId: String
            var publishTime: String
            var packageName: String
            var status: PlayPushStatus
            var data: String
            var attempts: [PlayPushAttempt]
        }
        var pushes: [Item]
    }

    func register(on router: Router<BasicRequestContext>) {
        let control = router.group("control/googleplay")
        control.post("apps") { request, context in
            let app = try await request.decode(as: SimulatedPlayApp.self, context: context)
            googlePlay.addApp(app)
            return Wrapped(value: app)
        }
        control.post("subscriptions") { request, context in
            let product = try await request.decode(as: SimulatedPlaySubscription.self, context: context)
            try run { () throws(GooglePlaySimulationError) in try googlePlay.addSubscription(product) }
            return Wrapped(value: product)
        }
        control.post("products") { request, context in
            let product = try await request.decode(as: SimulatedPlayProduct.self, context: context)
            try run { () throws(GooglePlaySimulationError) in try googlePlay.addProduct(product) }
            return Wrapped(value: product)
        }
        control.post("service-accounts") { request, context in
            let body = try await request.decode(as: ServiceAccountRequest.self, context: context)
            let (account, path) = try makeServiceAccount(body.email, body.projectId)
            let key = (try? JSONDecoder().decode([String: String].self, from: account.jsonKey)) ?? [:]
            return ServiceAccountCreated(
                email: account.email, privateKeyId: account.privateKeyID, keyFile: path, key: key)
        }
        control.post("subscription-purchases") { request, context in
            let body = try await request.decode(as: SubscriptionPurchase.self, context: context)
            let result = try run { () throws(GooglePlaySimulationError) in
                try googlePlay.purchaseSubscription(
                    packageName: body.packageName, productId: body.productId, basePlanId: body.basePlanId,
                    options: body.options ?? PlayPurchaseOptions())
            }
            return Wrapped(value: result)
        }
        control.post("product-purchases") { request, context in
            let body = try await request.decode(as: ProductPurchase.self, context: context)
            let result = try run { () throws(GooglePlaySimulationError) in
                try googlePlay.purchaseProduct(
                    packageName: body.packageName, productId: body.productId, quantity: body.quantity ?? 1,
                    options: body.options ?? PlayPurchaseOptions())
            }
            return Wrapped(value: result)
        }
        control.get("purchases/:token") { _, context in
            let token = try context.parameters.require("token")
            guard let snapshot = googlePlay.subscription(token) else {
                throw HTTPError(.notFound, message: "no subscription purchase with that token")
            }
            return Wrapped(value: snapshot)
        }
        control.get("product-purchases/:token") { _, context in
            let token = try context.parameters.require("token")
            guard let purchase = googlePlay.productPurchase(token) else {
                throw HTTPError(.notFound, message: "no one-time purchase with that token")
            }
            return Wrapped(value: purchase)
        }
        control.post("purchases/:token/complete") { _, context in
            let token = try context.parameters.require("token")
            let result = try run { () throws(GooglePlaySimulationError) in
                try googlePlay.completePendingPurchase(token)
            }
            return Wrapped(value: result)
        }
        simple(control, "purchases/:token/cancel-pending") { (token) throws(GooglePlaySimulationError) in
            try googlePlay.cancelPendingPurchase(token)
        }
        simple(control, "purchases/:token/cancel") { (token) throws(GooglePlaySimulationError) in
            try googlePlay.cancelSubscription(token)
        }
        simple(control, "purchases/:token/restart") { (token) throws(GooglePlaySimulationError) in
            try googlePlay.restartSubscription(token)
        }
        simple(control, "purchases/:token/resume") { (token) throws(GooglePlaySimulationError) in
            try googlePlay.resumeSubscription(token)
        }
        simple(control, "purchases/:token/fail-billing") { (token) throws(GooglePlaySimulationError) in
            try googlePlay.failBilling(token)
        }
        control.post("purchases/:token/recover-billing") { _, context in
            let token = try context.parameters.require("token")
            let orderId = try run { () throws(GooglePlaySimulationError) in try googlePlay.recoverBilling(token) }
            return Recovered(orderId: orderId)
        }
        control.post("purchases/:token/pause") { request, context in
            let token = try context.parameters.require("token")
            let body = try await request.decode(as: Pause.self, context: context)
            try run { () throws(GooglePlaySimulationError) in
                try googlePlay.pauseSubscription(token, cycles: body.cycles ?? 1)
            }
            return Done()
        }
        control.post("purchases/:token/change") { request, context in
            let token = try context.parameters.require("token")
            let body = try await request.decode(as: Change.self, context: context)
            let result = try run { () throws(GooglePlaySimulationError) in
                try googlePlay.changeSubscription(
                    token, toProductId: body.productId, basePlanId: body.basePlanId,
                    replacementMode: body.replacementMode ?? .withTimeProration)
            }
            return Wrapped(value: result)
        }
        control.post("purchases/:token/top-up") { request, context in
            let token = try context.parameters.require("token")
            let body = try await request.decode(as: TopUp.self, context: context)
            let result = try run { () throws(GooglePlaySimulationError) in
                try googlePlay.topUp(token, basePlanId: body.basePlanId)
            }
            return Wrapped(value: result)
        }
        control.post("orders/:orderId/refund") { request, context in
            let orderId = try context.parameters.require("orderId")
            let body = try await request.decode(as: Refund.self, context: context)
            try run { () throws(GooglePlaySimulationError) in
                try googlePlay.refund(
                    orderId: orderId, quantity: body.quantity, revoke: body.revoke ?? true,
                    reason: VoidedPurchase.VoidedReason(rawValue: body.voidedReason ?? 0),
                    source: VoidedPurchase.VoidedSource(rawValue: body.voidedSource ?? 0))
            }
            return Done()
        }
        control.post("test-notifications") { request, context in
            let body = try await request.decode(as: TestNotificationRequest.self, context: context)
            try run { () throws(GooglePlaySimulationError) in
                try googlePlay.sendTestNotification(packageName: body.packageName)
            }
            return Done()
        }
        control.post("advance") { request, context in
            let body = try await request.decode(as: Advance.self, context: context)
            guard body.seconds >= 0, body.seconds.isFinite else {
                throw HTTPError(.badRequest, message: "seconds must be a finite number ≥ 0")
            }
            googlePlay.advance(by: body.seconds)
            return Done()
        }
        control.post("settle") { _, _ in
            try await googlePlay.deliveriesSettled()
            return Done()
        }
        control.post("push-faults") { request, context in
            let body = try await request.decode(as: Faults.self, context: context)
            googlePlay.injectPushFaults(body.faults)
            return Done()
        }
        control.get("pushes") { _, _ in
            PushSummary(
                pushes: googlePlay.pushes.map {
                    .init(
                        sequence: $0.sequence, messageId: $0.messageId, publishTime: $0.publishTime,
                        packageName: $0.packageName, status: $0.status,
                        data: $0.notificationJSON.base64EncodedString(), attempts: $0.attempts)
                })
        }
    }

    /// A `POST` route on a purchase token that takes no body and answers `{"ok": true}`.
    private func simple(
        _ control: RouterGroup<BasicRequestContext>, _ path: String,
        _ action: @escaping @Sendable (String) throws(GooglePlaySimulationError) -> Void
    ) {
        control.post(RouterPath(path)) { _, context in
            let token = try context.parameters.require("token")
            try run { () throws(GooglePlaySimulationError) in try action(token) }
            return Done()
        }
    }

    /// Runs a scenario step, turning its error into a 404 or 400 with the explanation.
    private func run<Result>(_ body: () throws(GooglePlaySimulationError) -> Result) throws -> Result {
        do {
            return try body()
        } catch {
            throw HTTPError(error.isNotFound ? .notFound : .badRequest, message: error.description)
        }
    }
}
