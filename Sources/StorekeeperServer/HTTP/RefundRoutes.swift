import Foundation
import Hummingbird
import Storekeeper

/// What refund decisions need from the app's backend: the customer's consent to share
/// consumption data, the usage of one-time purchases, and how each refund request was answered.
/// (Consent is set with `PUT /v1/customers/{id}`, see ``CustomerRoutes``.)
struct RefundRoutes {
    let service: CustomerService

    struct Usage: Decodable {
        /// 0 to 100, up to three decimals.
        var consumedPercent: Double?
        var deliveryProblem: String?
    }

    struct UsageResult: Encodable {
        var store: String
        var purchaseId: String
        var consumedPercent: Double
        var deliveryProblem: String?
        var reportedAt: Date
    }

    struct RequestsResult: Encodable {
        var refundRequests: [RefundRequestView]
    }

    func register(on group: RouterGroup<BasicRequestContext>) {
        group.put("customers/:id/purchases/:store/:purchase/usage") { request, context in
            let id = try customerID(context)
            let key = try purchaseKey(context)
            let usage = try await decode(Usage.self, request)
            var milliPercent: Int?
            if let percent = usage.consumedPercent {
                guard percent.isFinite, (0...100).contains(percent) else {
                    throw ServerError(.invalidUsage, "consumedPercent must be from 0 to 100, not \(percent)")
                }
                milliPercent = Int((percent * 1000).rounded())
            }
            var problem: DeliveryStatus?
            if let raw = usage.deliveryProblem {
                let known = DeliveryStatus.allCases.filter { $0 != .delivered }.map(\.rawValue)
                guard let status = DeliveryStatus(rawValue: raw), status != .delivered else {
                    throw ServerError(
                        .invalidUsage,
                        "unknown deliveryProblem '\(raw)' (expected one of: \(known.joined(separator: ", ")))")
                }
                problem = status
            }
            let saved = try await service.reportUsage(
                key, of: id, consumedMilliPercent: milliPercent, deliveryProblem: problem)
            return try JSONResponse.make(
                UsageResult(
                    store: key.store.pathSegment, purchaseId: key.id,
                    consumedPercent: Double(saved.consumedMilliPercent) / 1000,
                    deliveryProblem: saved.deliveryProblem?.rawValue, reportedAt: saved.reportedAt))
        }
        group.get("customers/:id/refund-requests") { _, context in
            let id = try customerID(context)
            let requests = try await service.refundRequests(of: id)
            return try JSONResponse.make(RequestsResult(refundRequests: requests.map(RefundRequestView.init)))
        }
    }

    func purchaseKey(_ context: BasicRequestContext) throws -> PurchaseKey {
        let store = try Store(pathSegmentOf: context, refusedAs: .invalidQuery)
        let id = context.parameters.get("purchase") ?? ""
        guard !id.isEmpty, id.utf8.count <= 1024 else {
            throw ServerError(.invalidQuery, "the purchase id must be 1 to 1024 bytes")
        }
        return PurchaseKey(store: store, id: id)
    }
}

/// One refund request as the API shows it.
struct RefundRequestView: Encodable {
    var id: String
    var store: String
    var purchaseId: String
    var transactionId: String
    var reason: String?
    var requestedAt: Date
    var deadline: Date
    var status: String
    var attempts: Int
    var nextAttemptAt: Date?
    var sent: SentAnswer?
    var skipReason: String?
    var storeErrorCode: Int?
    var lastError: String?

    /// The values sent, in the store's field names.
    struct SentAnswer: Encodable {
        var customerConsented: Bool
        var consumptionPercentage: Int?
        var deliveryStatus: String
        var refundPreference: String?
        var sampleContentProvided: Bool
    }

    init(_ request: RefundRequest) {
        id = request.id
        store = request.purchaseKey.store.pathSegment
        purchaseId = request.purchaseKey.id
        transactionId = request.transactionID
        reason = request.reason
        requestedAt = request.requestedAt
        deadline = request.deadline
        status = request.status.rawValue
        attempts = request.attempts
        nextAttemptAt = request.status == .pending ? request.nextAttemptAt : nil
        sent = request.answer.map {
            SentAnswer(
                customerConsented: $0.customerConsented, consumptionPercentage: $0.consumptionMilliPercent,
                deliveryStatus: $0.deliveryStatus.rawValue, refundPreference: $0.refundPreference?.rawValue,
                sampleContentProvided: $0.sampleContentProvided)
        }
        skipReason = request.skipReason?.rawValue
        storeErrorCode = request.storeErrorCode
        lastError = request.lastError
    }
}
