import AppStoreServer
import Foundation
import Hummingbird
import NIOCore

/// The App Store Server API at Apple's paths, served from the simulation's state and
/// authenticated like Apple (see ``APIAuthenticator``). Errors are Apple's
/// `{"errorCode", "errorMessage"}`; a bad or missing token is a bare 401.
///
/// One instance is one API host: `environment` is the environment it serves (Apple's
/// `api.storekit-sandbox…` or `api.storekit…`), nil the app's default one (the base URL).
struct AppStoreAPIRoutes {
    let appStore: AppStoreSimulation
    var environment: AppStoreServer.Environment? = nil

    func register(on group: RouterGroup<BasicRequestContext>) {
        group.get("inApps/v1/transactions/:transactionId") { request, context in
            let id = context.parameters.get("transactionId") ?? ""
            return answer(request) { app throws(APIFailure) in
                try appStore.apiTransactionInfo(app: app, transactionId: id)
            }
        }
        group.get("inApps/v2/history/:transactionId") { request, context in
            let id = context.parameters.get("transactionId") ?? ""
            let query = request.uri.queryParameters
            let revision = query.get("revision")
            let filter = HistoryFilter(
                startDate: query.get("startDate", as: Int64.self), endDate: query.get("endDate", as: Int64.self),
                productIds: query.getAll("productId"), productTypes: query.getAll("productType"),
                subscriptionGroupIdentifiers: query.getAll("subscriptionGroupIdentifier"),
                inAppOwnershipType: query.get("inAppOwnershipType"), revoked: query.get("revoked"),
                descending: query.get("sort") == "DESCENDING")
            return answer(request) { app throws(APIFailure) in
                try appStore.apiHistory(app: app, transactionId: id, revision: revision, filter: filter)
            }
        }
        group.get("inApps/v1/subscriptions/:transactionId") { request, context in
            let id = context.parameters.get("transactionId") ?? ""
            let statuses = request.uri.queryParameters.getAll("status", as: Int32.self)
            return answer(request) { app throws(APIFailure) in
                try appStore.apiStatuses(app: app, transactionId: id, statuses: statuses)
            }
        }
        group.post("inApps/v1/notifications/history") { request, _ in
            let body = try await request.body.collect(upTo: 1 << 20)
            let token = request.uri.queryParameters.get("paginationToken")
            let decoded = try? AppStoreJSON.makeDecoder().decode(
                NotificationHistoryRequest.self, from: Data(body.readableBytesView))
            return answer(request) { app throws(APIFailure) in
                guard let decoded else {
                    throw APIFailure(status: 400, code: .generalBadRequest, message: "Invalid request body")
                }
                return try appStore.apiNotificationHistory(app: app, request: decoded, paginationToken: token)
            }
        }
        group.post("inApps/v1/notifications/test") { request, _ in
            answer(request) { app throws(APIFailure) in try appStore.apiSendTestNotification(app: app) }
        }
        group.get("inApps/v1/notifications/test/:token") { request, context in
            let token = context.parameters.get("token") ?? ""
            return answer(request) { app throws(APIFailure) in
                try appStore.apiTestNotificationStatus(app: app, token: token)
            }
        }
        group.get("inApps/v2/refund/lookup/:transactionId") { request, context in
            let id = context.parameters.get("transactionId") ?? ""
            let revision = request.uri.queryParameters.get("revision")
            return answer(request) { app throws(APIFailure) in
                try appStore.apiRefundHistory(app: app, transactionId: id, revision: revision)
            }
        }
        group.get("inApps/v1/transactions/appTransactions/:transactionId") { request, context in
            let id = context.parameters.get("transactionId") ?? ""
            return answer(request) { app throws(APIFailure) in
                try appStore.apiAppTransactionInfo(app: app, transactionId: id)
            }
        }
        group.get("inApps/v1/lookup/:orderId") { request, context in
            let id = context.parameters.get("orderId") ?? ""
            return answer(request) { app throws(APIFailure) in try appStore.apiLookUpOrder(app: app, orderId: id) }
        }
        group.put("inApps/v2/transactions/consumption/:transactionId") { request, context in
            let id = context.parameters.get("transactionId") ?? ""
            let body = try await Self.body(request)
            return answerEmpty(request, status: 202) { app throws(APIFailure) in
                try appStore.apiConsumption(app: app, transactionId: id, body: body)
            }
        }
        group.put("inApps/v1/transactions/consumption/:originalTransactionId") { request, context in
            let id = context.parameters.get("originalTransactionId") ?? ""
            let body = try await Self.body(request)
            return answerEmpty(request, status: 202) { app throws(APIFailure) in
                try appStore.apiConsumptionV1(app: app, originalTransactionId: id, body: body)
            }
        }
        // Same parameter name as the other routes at this position (the router requires it).
        group.put("inApps/v1/transactions/:transactionId/appAccountToken") { request, context in
            let id = context.parameters.get("transactionId") ?? ""
            let body = try await Self.body(request)
            return answerEmpty(request, status: 200) { app throws(APIFailure) in
                try appStore.apiSetAppAccountToken(app: app, originalTransactionId: id, body: body)
            }
        }
        group.post("inApps/v1/transactions/:transactionId/finish") { request, context in
            let id = context.parameters.get("transactionId") ?? ""
            return answerEmpty(request, status: 200) { app throws(APIFailure) in
                try appStore.apiFinish(app: app, transactionId: id)
            }
        }
        group.put("inApps/v1/subscriptions/extend/:originalTransactionId") { request, context in
            let id = context.parameters.get("originalTransactionId") ?? ""
            let body = try await Self.body(request)
            return answer(request) { app throws(APIFailure) in
                try appStore.apiExtend(app: app, originalTransactionId: id, body: body)
            }
        }
        group.post("inApps/v1/subscriptions/extend/mass") { request, _ in
            let body = try await Self.body(request)
            return answer(request) { app throws(APIFailure) in try appStore.apiMassExtend(app: app, body: body) }
        }
        group.get("inApps/v1/subscriptions/extend/mass/:productId/:requestIdentifier") { request, context in
            let productId = context.parameters.get("productId") ?? ""
            let requestIdentifier = context.parameters.get("requestIdentifier") ?? ""
            return answer(request) { app throws(APIFailure) in
                try appStore.apiMassExtensionStatus(
                    app: app, productId: productId, requestIdentifier: requestIdentifier)
            }
        }
    }

    static func body(_ request: Request) async throws -> Data {
        Data(try await request.body.collect(upTo: 1 << 20).readableBytesView)
    }

    /// Like ``answer(_:_:)`` for endpoints that answer with an empty body.
    private func answerEmpty(
        _ request: Request, status: Int, _ body: (SimulatedApp) throws(APIFailure) -> Void
    ) -> Response {
        do {
            let app = try appStore.apiAuthenticate(request.headers[.authorization], host: environment)
            try body(app)
            return Response(status: HTTPResponse.Status(code: status))
        } catch {
            guard error.status != 401 else { return Response(status: .unauthorized) }
            return json(ErrorPayload(errorCode: error.code, errorMessage: error.message), status: error.status)
        }
    }

    private func answer<Value: Encodable>(
        _ request: Request, _ body: (SimulatedApp) throws(APIFailure) -> Value
    ) -> Response {
        do {
            let app = try appStore.apiAuthenticate(request.headers[.authorization], host: environment)
            return json(try body(app), status: 200)
        } catch {
            guard error.status != 401 else { return Response(status: .unauthorized) }
            return json(ErrorPayload(errorCode: error.code, errorMessage: error.message), status: error.status)
        }
    }

    private func json(_ value: some Encodable, status: Int) -> Response {
        guard let data = try? AppStoreJSON.makeEncoder().encode(value) else {
            return Response(status: .internalServerError)
        }
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(
            status: HTTPResponse.Status(code: status), headers: headers,
            body: .init(byteBuffer: ByteBuffer(bytes: Array(data))))
    }
}
