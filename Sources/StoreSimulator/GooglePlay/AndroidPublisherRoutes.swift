import Foundation
import GooglePlay
import Hummingbird
import NIOCore

/// The Android Publisher API at Google's paths (`/androidpublisher/v3/applications/{packageName}/…`),
/// served from the simulation's state. Every request needs `Authorization: Bearer <token>` issued
/// by the simulator's token endpoint (else 401 `UNAUTHENTICATED`); errors are Google's
/// `{"error": {"code", "message", "status", "errors": [{"domain", "reason", "message"}]}}`.
///
/// Custom methods (`tokens/{token}:acknowledge`) arrive as one path segment; the route captures it
/// and splits it at its last colon (a percent-encoded colon is accepted too).
struct AndroidPublisherRoutes {
    static let prefix = "androidpublisher/v3/applications"

    let googlePlay: GooglePlaySimulation
    let identity: GooglePlayIdentity

    func register(on group: RouterGroup<BasicRequestContext>) {
        let subscriptionsV2 = ":packageName/purchases/subscriptionsv2/tokens/:token"
        group.get(RouterPath(subscriptionsV2)) { request, context in
            authorized(request) { () throws(PlayAPIFailure) in
                let (package, token) = try Self.packageAndToken(context)
                return .json(try googlePlay.apiSubscriptionV2(packageName: package, token: token))
            }
        }
        group.post(RouterPath(subscriptionsV2)) { request, context in
            let body = try await Self.body(request)
            return authorized(request) { () throws(PlayAPIFailure) in
                let (package, segment) = try Self.packageAndToken(context)
                let (token, method) = Self.split(segment)
                switch method {
                case "cancel":
                    try googlePlay.apiCancelSubscription(
                        packageName: package, token: token,
                        body: Self.decode(CancelSubscriptionPurchaseRequest.self, body))
                    return .json(CancelSubscriptionPurchaseResponse())
                case "revoke":
                    try googlePlay.apiRevokeSubscription(
                        packageName: package, token: token,
                        body: Self.decode(RevokeSubscriptionPurchaseRequest.self, body))
                    return .json(RevokeSubscriptionPurchaseResponse())
                case "defer":
                    return .json(
                        try googlePlay.apiDeferSubscription(
                            packageName: package, token: token,
                            body: Self.decode(DeferSubscriptionPurchaseRequest.self, body)))
                default:
                    throw Self.unknownMethod(method)
                }
            }
        }
        group.post(RouterPath(":packageName/purchases/subscriptions/:productId/tokens/:token")) { request, context in
            let body = try await Self.body(request)
            return authorized(request) { () throws(PlayAPIFailure) in
                let (package, segment) = try Self.packageAndToken(context)
                let productId = context.parameters.get("productId") ?? ""
                let (token, method) = Self.split(segment)
                switch method {
                case "acknowledge":
                    let payload = Self.decode(SubscriptionPurchasesAcknowledgeRequest.self, body)?.developerPayload
                    try googlePlay.apiAcknowledgeSubscription(
                        packageName: package, subscriptionId: productId, token: token, payload: payload)
                case "cancel":
                    try googlePlay.apiCancelSubscriptionV1(
                        packageName: package, subscriptionId: productId, token: token)
                case "defer":
                    throw Self.notSimulated(request)
                default:
                    throw Self.unknownMethod(method)
                }
                return .empty
            }
        }
        let productsV1 = ":packageName/purchases/products/:productId/tokens/:token"
        group.get(RouterPath(productsV1)) { request, context in
            authorized(request) { () throws(PlayAPIFailure) in
                let (package, token) = try Self.packageAndToken(context)
                let productId = context.parameters.get("productId") ?? ""
                return .json(try googlePlay.apiProductV1(packageName: package, productId: productId, token: token))
            }
        }
        group.post(RouterPath(productsV1)) { request, context in
            let body = try await Self.body(request)
            return authorized(request) { () throws(PlayAPIFailure) in
                let (package, segment) = try Self.packageAndToken(context)
                let productId = context.parameters.get("productId") ?? ""
                let (token, method) = Self.split(segment)
                switch method {
                case "acknowledge":
                    let payload = Self.decode(ProductPurchasesAcknowledgeRequest.self, body)?.developerPayload
                    try googlePlay.apiAcknowledgeProduct(
                        packageName: package, productId: productId, token: token, payload: payload)
                case "consume":
                    try googlePlay.apiConsumeProduct(packageName: package, productId: productId, token: token)
                default:
                    throw Self.unknownMethod(method)
                }
                return .empty
            }
        }
        group.get(RouterPath(":packageName/purchases/productsv2/tokens/:token")) { request, context in
            authorized(request) { () throws(PlayAPIFailure) in
                let (package, token) = try Self.packageAndToken(context)
                return .json(try googlePlay.apiProductV2(packageName: package, token: token))
            }
        }
        group.get(RouterPath(":packageName/purchases/voidedpurchases")) { request, context in
            authorized(request) { () throws(PlayAPIFailure) in
                let package = context.parameters.get("packageName") ?? ""
                var parameters: [String: String] = [:]
                for (key, value) in request.uri.queryParameters { parameters[String(key)] = String(value) }
                return .json(try googlePlay.apiVoidedPurchases(packageName: package, parameters: parameters))
            }
        }
        group.get(RouterPath(":packageName/orders/:orderId")) { request, context in
            authorized(request) { () throws(PlayAPIFailure) in
                let package = context.parameters.get("packageName") ?? ""
                let orderId = Self.decoded(context.parameters.get("orderId") ?? "")
                return .json(try googlePlay.apiOrder(packageName: package, orderId: orderId))
            }
        }
        group.post(RouterPath(":packageName/orders/:orderId")) { request, context in
            authorized(request) { () throws(PlayAPIFailure) in
                let package = context.parameters.get("packageName") ?? ""
                let (orderId, method) = Self.split(Self.decoded(context.parameters.get("orderId") ?? ""))
                guard method == "refund" else {
                    throw method == "reviewrefund" ? Self.notSimulated(request) : Self.unknownMethod(method)
                }
                let revoke = request.uri.queryParameters.get("revoke") == "true"
                try googlePlay.apiRefundOrder(packageName: package, orderId: orderId, revoke: revoke)
                return .empty
            }
        }
        // Every other Android Publisher call: Google's answer for a method a service does not implement.
        for method in [HTTPRequest.Method.get, .post, .put, .patch, .delete] {
            group.on(RouterPath(":packageName/**"), method: method) { request, _ in
                authorized(request) { () throws(PlayAPIFailure) in throw Self.notSimulated(request) }
            }
        }
    }

    enum Answer {
        case json(any Encodable)
        case empty
    }

    /// Checks the bearer token, runs `body` and encodes its answer or Google's error body.
    private func authorized(_ request: Request, _ body: () throws(PlayAPIFailure) -> Answer) -> Response {
        let header = request.headers[.authorization] ?? ""
        let token = header.hasPrefix("Bearer ") ? String(header.dropFirst(7)) : ""
        guard !token.isEmpty, identity.isValidAccessToken(token) else { return GooglePlayIdentity.unauthenticated() }
        do {
            switch try body() {
            case .json(let value): return Self.json(value, status: .ok)
            case .empty: return Response(status: .noContent)
            }
        } catch {
            return Self.json(error.body, status: HTTPResponse.Status(code: error.status))
        }
    }

    static func json(_ value: any Encodable, status: HTTPResponse.Status) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(value) else { return Response(status: .internalServerError) }
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=UTF-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: Array(data))))
    }

    static func body(_ request: Request) async throws -> Data {
        Data(try await request.body.collect(upTo: 1 << 20).readableBytesView)
    }

    /// Decodes an optional JSON body (empty or malformed: nil, as the fields are optional).
    static func decode<Value: Decodable>(_ type: Value.Type, _ data: Data) -> Value? {
        data.isEmpty ? nil : try? JSONDecoder().decode(type, from: data)
    }

    static func packageAndToken(_ context: BasicRequestContext) throws(PlayAPIFailure) -> (String, String) {
        guard let package = context.parameters.get("packageName"), let token = context.parameters.get("token") else {
            throw .tokenNotFound
        }
        return (package, decoded(token))
    }

    static func decoded(_ segment: String) -> String { segment.removingPercentEncoding ?? segment }

    /// `token:method` → (token, method); no colon → (segment, "").
    static func split(_ segment: String) -> (String, String) {
        guard let colon = segment.lastIndex(of: ":") else { return (segment, "") }
        return (String(segment[..<colon]), String(segment[segment.index(after: colon)...]))
    }

    /// An Android Publisher call Google serves and the simulator does not: Google's answer for a
    /// method a service does not implement (501 `UNIMPLEMENTED`).
    static func notSimulated(_ request: Request) -> PlayAPIFailure {
        PlayAPIFailure(
            status: 501, googleStatus: "UNIMPLEMENTED", reason: "notImplemented",
            message: "\(request.method) \(request.uri.path) is not simulated (see docs/simulator.md).")
    }

    static func unknownMethod(_ method: String) -> PlayAPIFailure {
        PlayAPIFailure(
            status: 404, googleStatus: "NOT_FOUND", reason: "notFound",
            message: method.isEmpty ? "Method not found." : "Method \(method.prefix(40)) not found.")
    }
}

/// Records every Android Publisher request (before faults are injected) in
/// ``GooglePlaySimulation/apiRequests``, with its quota bucket, the status answered and when it
/// arrived (``ArrivalStamp``).
struct PlayRequestLogMiddleware<Context: RequestContext>: RouterMiddleware {
    let googlePlay: GooglePlaySimulation
    let arrivals: ArrivalStamp

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let arrival = arrivals.arrival(of: request.head)
        let path = request.uri.path
        let userAgent = request.headers[.userAgent]
        do {
            let response = try await next(request, context)
            googlePlay.logRequest(
                method: request.method.rawValue, path: path, status: Int(response.status.code), arrival: arrival,
                userAgent: userAgent)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            googlePlay.logRequest(
                method: request.method.rawValue, path: path, status: Int(status), arrival: arrival,
                userAgent: userAgent)
            throw error
        }
    }
}

extension GooglePlaySimulation {
    /// The quota bucket of an Android Publisher path.
    public static func quotaBucket(forPath path: String) -> String {
        if path.contains("/purchases/voidedpurchases") { return "purchases.voidedpurchases" }
        if path.contains("/purchases/subscriptionsv2/") { return "purchases.subscriptionsv2" }
        if path.contains("/purchases/subscriptions/") { return "purchases.subscriptions" }
        if path.contains("/purchases/productsv2/") { return "purchases.productsv2" }
        if path.contains("/purchases/products/") { return "purchases.products" }
        if path.contains("/orders/") { return "orders" }
        return "other"
    }

    func logRequest(
        method: String, path: String, status: Int, arrival: ContinuousClock.Instant, userAgent: String? = nil
    ) {
        let entry = APIRequest(
            method: method, path: path, bucket: Self.quotaBucket(forPath: path), status: status, arrival: arrival,
            simulatedDate: clock.now(), userAgent: userAgent)
        state.withLock { $0.apiRequests.append(entry) }
    }
}
