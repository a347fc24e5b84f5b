public import AppStoreServer
import Foundation

/// The App Store Server API's remaining endpoints: refund history, app transactions, order
/// lookup, consumption information, app account tokens, renewal-date extensions, finishing.
extension AppStoreSimulation {
    /// Get Refund History (v2): the customer's refunded transactions, by revision.
    func apiRefundHistory(
        app: SimulatedApp, transactionId: String, revision: String?
    ) throws(APIFailure) -> RefundHistoryResponse {
        let now = clock.now()
        return try state.withLock { (state) throws(APIFailure) in
            let record = try state.apiTransaction(transactionId, app: app)
            let refunded = state.transactions.values
                .filter {
                    $0.bundleId == app.bundleId && $0.environment == app.environment
                        && $0.appTransactionId == record.appTransactionId && $0.revocation != nil
                }
                .sorted { ($0.purchaseDate, $0.transactionId) < ($1.purchaseDate, $1.transactionId) }
            let offset = try Self.apiOffset(revision, code: .invalidRequestRevision)
            let page = refunded.dropFirst(offset).prefix(Self.apiPageSize)
            var signed: [String] = []
            for transaction in page { signed.append(try state.apiSign(transaction, app: app, now: now)) }
            let next = offset + page.count
            return RefundHistoryResponse(
                signedTransactions: signed, revision: Self.apiToken(next), hasMore: next < refunded.count)
        }
    }

    /// Get App Transaction Info: the customer's app transaction (any of their transaction ids).
    func apiAppTransactionInfo(app: SimulatedApp, transactionId: String) throws(APIFailure)
        -> AppTransactionInfoResponse
    {
        let now = clock.now()
        return try state.withLock { (state) throws(APIFailure) in
            let record = try state.apiTransaction(transactionId, app: app)
            do {
                return AppTransactionInfoResponse(
                    signedAppTransactionInfo: try state.signedAppTransaction(
                        record.appTransactionId, app: app, environment: app.environment, at: now))
            } catch {
                throw APIFailure(status: 500, code: .generalInternal, message: "signing failed")
            }
        }
    }

    /// The app transaction StoreKit gives the app on the customer's device (`AppTransaction.shared`),
    /// signed: the customer's `appTransactionId` for the app in `environment` (the app's default
    /// when nil), issued now if they had none — the download.
    public func signedAppTransaction(
        customer: String, bundleId: String, environment: Environment? = nil
    ) throws(AppStoreSimulationError) -> String {
        let now = clock.now()
        return try state.withLock { (state) throws(AppStoreSimulationError) in
            guard let app = state.apps[bundleId] else { throw .unknownApp(bundleId) }
            let environment = environment ?? app.environment
            let id = state.appTransactionId(of: customer, bundleId: bundleId, environment: environment)
            return try state.signedAppTransaction(id, app: app, environment: environment, at: now)
        }
    }

    /// The order id a customer's receipt e-mail shows for a transaction (the simulator's own scheme).
    public static func orderId(forTransactionId transactionId: String) -> String {
        "SIM" + transactionId
    }

    /// Look Up Order ID.
    func apiLookUpOrder(app: SimulatedApp, orderId: String) throws(APIFailure) -> OrderLookupResponse {
        let now = clock.now()
        return try state.withLock { (state) throws(APIFailure) in
            guard orderId.hasPrefix("SIM"), let record = state.transactions[String(orderId.dropFirst(3))],
                record.bundleId == app.bundleId, record.environment == app.environment
            else { return OrderLookupResponse(status: .invalid, signedTransactions: []) }
            return OrderLookupResponse(
                status: .valid, signedTransactions: [try state.apiSign(record, app: app, now: now)])
        }
    }

    /// Send Consumption Information (v2).
    /// Send Consumption Information (v2), validated the way Apple documents it (field types,
    /// required fields, consent, the percentage's range and its combinations with the product type,
    /// the delivery status and the preference), recorded, and — if the customer's refund request
    /// is still open — decided at once by ``RefundDecisionRule`` (docs/simulator.md).
    func apiConsumption(app: SimulatedApp, transactionId: String, body: Data) throws(APIFailure) {
        let request = try Self.validatedConsumption(body)
        let record = try state.withLock { (state) throws(APIFailure) in
            let record = try state.apiTransaction(transactionId, app: app)
            if record.type == .autoRenewableSubscription, request.consumptionPercentage != nil {
                throw APIFailure(
                    status: 400, code: .consumptionPercentageAutoRenewableSubscription,
                    message:
                        "Invalid request. The consumption percentage field is not supported for auto-renewable subscription transactions."
                )
            }
            if request.refundPreference == .grantProrated, record.type != .autoRenewableSubscription {
                guard let percentage = request.consumptionPercentage, percentage > 0, percentage < 100_000 else {
                    throw APIFailure(
                        status: 400, code: .generalBadRequest,
                        message:
                            "ConsumptionPercentageOutOfRangeError: GRANT_PRORATED needs a consumptionPercentage above 0 and below 100000"
                    )
                }
            }
            state.consumption[transactionId] = request
            state.consumptionAnswers[transactionId, default: []].append(
                ReceivedConsumption(request: request, receivedAt: clock.now()))
            return record
        }
        guard record.refundRequested else { return }
        // A decision notifies the app like any other; an invalid one (already refunded) is no answer's fault.
        let decision = RefundDecisionRule.decide(
            request, for: TransactionRecordView(purchaseDate: record.purchaseDate, expiresDate: record.expiresDate),
            at: clock.now())
        do {
            switch decision {
            case .decline: try declineRefund(transactionId: transactionId)
            case .refund(let percentage):
                try refund(transactionId: transactionId, revocationPercentage: percentage, reason: .other)
            }
            state.withLock { state in
                guard let last = state.consumptionAnswers[transactionId]?.indices.last else { return }
                state.consumptionAnswers[transactionId]?[last].decision = decision
            }
        } catch {
            // Decided meanwhile through the control API: this answer decides nothing.
        }
    }

    /// The V2 body as sent: every field optional and loosely typed, so that each missing or
    /// mistyped one gets its own error code.
    private struct ConsumptionBody: Decodable {
        var customerConsented: Bool?
        var sampleContentProvided: Bool?
        var deliveryStatus: String?
        var consumptionPercentage: Int32?
        var refundPreference: String?
    }

    /// The V2 body checked field by field, as Apple answers a bad one: a missing or mistyped
    /// required field and a consent other than true each have their error code.
    static func validatedConsumption(_ data: Data) throws(APIFailure) -> ConsumptionRequest {
        let consented = APIFailure(
            status: 400, code: .invalidCustomerConsented,
            message:
                "Invalid request. The customer consented field is invalid or doesn't indicate that the customer consented."
        )
        let sample = APIFailure(
            status: 400, code: .invalidSampleContentProvided,
            message: "Invalid request. The sample content provided field is invalid")
        let delivery = APIFailure(
            status: 400, code: .invalidDeliveryStatus, message: "Invalid request. The delivery status field is invalid")
        let percentage = APIFailure(
            status: 400, code: .generalBadRequest,
            message: "ConsumptionPercentageOutOfRangeError: consumptionPercentage must be an integer from 0 to 100000")
        let preference = APIFailure(
            status: 400, code: .generalBadRequest,
            message: "InvalidRefundPreferenceError: refundPreference must be DECLINE, GRANT_FULL or GRANT_PRORATED")
        let body: ConsumptionBody
        do {
            body = try JSONDecoder().decode(ConsumptionBody.self, from: data)
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.dataCorrupted(context) {
            switch context.codingPath.first?.stringValue {
            case "customerConsented": throw consented
            case "sampleContentProvided": throw sample
            case "deliveryStatus": throw delivery
            case "consumptionPercentage": throw percentage
            case "refundPreference": throw preference
            default: throw APIFailure(status: 400, code: .generalBadRequest, message: "Invalid request body")
            }
        } catch {
            throw APIFailure(status: 400, code: .generalBadRequest, message: "Invalid request body")
        }
        guard body.customerConsented == true else { throw consented }
        guard let sampleContentProvided = body.sampleContentProvided else { throw sample }
        let deliveryStatuses: Set<String> = [
            "DELIVERED", "UNDELIVERED_QUALITY_ISSUE", "UNDELIVERED_WRONG_ITEM", "UNDELIVERED_SERVER_OUTAGE",
            "UNDELIVERED_OTHER",
        ]
        guard let status = body.deliveryStatus, deliveryStatuses.contains(status) else { throw delivery }
        if let value = body.consumptionPercentage, !(0...100_000).contains(value) { throw percentage }
        if status != "DELIVERED", let value = body.consumptionPercentage, value != 0 {
            throw APIFailure(
                status: 400, code: .generalBadRequest,
                message:
                    "UndeliveredConsumptionPercentageNonZeroError: the consumption percentage must be zero when not delivered"
            )
        }
        if let name = body.refundPreference, !["DECLINE", "GRANT_FULL", "GRANT_PRORATED"].contains(name) {
            throw preference
        }
        let deliveryStatus = AppStoreServer.DeliveryStatus(rawValue: status)
        let refundPreference = body.refundPreference.map { AppStoreServer.RefundPreference(rawValue: $0) }
        return ConsumptionRequest(
            customerConsented: true, consumptionPercentage: body.consumptionPercentage,
            deliveryStatus: deliveryStatus, refundPreference: refundPreference,
            sampleContentProvided: sampleContentProvided)
    }

    /// Send Consumption Information V1 (deprecated by Apple; accepted and stored as received).
    func apiConsumptionV1(app: SimulatedApp, originalTransactionId: String, body: Data) throws(APIFailure) {
        guard (try? JSONSerialization.jsonObject(with: body)) is [String: Any] else {
            throw APIFailure(status: 400, code: .generalBadRequest, message: "Invalid request body")
        }
        try state.withLock { (state) throws(APIFailure) in
            _ = try state.apiTransaction(originalTransactionId, app: app)
        }
    }

    /// The consumption information the app sent for a transaction (the latest).
    public func consumptionInformation(transactionId: String) -> ConsumptionRequest? {
        state.withLock { $0.consumption[transactionId] }
    }

    /// Every consumption answer received for a transaction, in order, with the decision each led to.
    public func consumptionAnswers(transactionId: String) -> [ReceivedConsumption] {
        state.withLock { $0.consumptionAnswers[transactionId] ?? [] }
    }

    /// Set App Account Token: sets the token on every transaction of the purchase (and its future ones).
    func apiSetAppAccountToken(app: SimulatedApp, originalTransactionId: String, body: Data) throws(APIFailure) {
        guard let request = try? AppStoreJSON.makeDecoder().decode(UpdateAppAccountTokenRequest.self, from: body),
            let token = UUID(uuidString: request.appAccountToken)
        else {
            throw APIFailure(
                status: 400, code: .invalidAppAccountTokenUUID,
                message: "Invalid request. The app account token field must be a valid UUID.")
        }
        try state.withLock { (state) throws(APIFailure) in
            let record = try state.apiTransaction(originalTransactionId, app: app)
            guard record.originalTransactionId == originalTransactionId else {
                throw APIFailure(
                    status: 400, code: .transactionIdIsNotOriginalTransactionId,
                    message: "Invalid request. The transaction id parameter must be an original transaction id.")
            }
            guard record.ownership != .familyShared else {
                throw APIFailure(
                    status: 400, code: .familyTransactionNotSupported,
                    message: "Invalid request. Family Sharing transactions aren't supported by this endpoint.")
            }
            for (id, transaction) in state.transactions where transaction.originalTransactionId == originalTransactionId
            {
                state.transactions[id]?.appAccountToken = token
            }
            state.subscriptions[originalTransactionId]?.appAccountToken = token
        }
    }

    /// Finish Transaction.
    func apiFinish(app: SimulatedApp, transactionId: String) throws(APIFailure) {
        try state.withLock { (state) throws(APIFailure) in
            _ = try state.apiTransaction(transactionId, app: app)
            state.finishedTransactionIds.insert(transactionId)
        }
    }

    /// Whether the app finished a transaction.
    public func isFinished(transactionId: String) -> Bool {
        state.withLock { $0.finishedTransactionIds.contains(transactionId) }
    }

    /// Extend a Subscription Renewal Date: moves an active subscription's expiry and sends
    /// RENEWAL_EXTENDED. Idempotent per request identifier (and environment). A subscription unknown
    /// in the host's environment answers 404 `OriginalTransactionIdNotFoundError`; one that is not
    /// active, `success` false.
    func apiExtend(app: SimulatedApp, originalTransactionId: String, body: Data) throws(APIFailure)
        -> ExtendRenewalDateResponse
    {
        guard let request = try? AppStoreJSON.makeDecoder().decode(ExtendRenewalDateRequest.self, from: body) else {
            throw APIFailure(status: 400, code: .generalBadRequest, message: "Invalid request body")
        }
        try Self.checkExtension(
            days: request.extendByDays, reason: request.extendReasonCode, id: request.requestIdentifier)
        let key = app.environment.rawValue + "/" + request.requestIdentifier
        let known = state.withLock { state in
            state.subscriptions[originalTransactionId].map {
                $0.bundleId == app.bundleId && $0.environment == app.environment
            } ?? false
        }
        guard known else { throw .originalNotFound(originalTransactionId) }
        do {
            return try mutate { (state, now) throws(AppStoreSimulationError) in
                if let done = state.extensions[key] { return done }
                guard var subscription = state.subscriptions[originalTransactionId], subscription.phase == .active
                else {
                    let done = ExtendRenewalDateResponse(originalTransactionId: originalTransactionId, success: false)
                    state.extensions[key] = done
                    return done
                }
                let latest = subscription.latestTransactionId
                subscription.expiresDate += Double(request.extendByDays) * 86_400
                subscription.lastEventDate = max(subscription.lastEventDate, now)
                state.subscriptions[originalTransactionId] = subscription
                state.transactions[latest]?.expiresDate = subscription.expiresDate
                try state.emit(
                    .renewalExtended, nil, bundleId: app.bundleId, transactionId: latest,
                    subscriptionId: originalTransactionId, at: now)
                let done = ExtendRenewalDateResponse(
                    originalTransactionId: originalTransactionId,
                    webOrderLineItemId: state.transactions[latest]?.webOrderLineItemId, success: true,
                    effectiveDate: subscription.expiresDate)
                state.extensions[key] = done
                return done
            }
        } catch {
            throw APIFailure(status: 500, code: .generalInternal, message: error.description)
        }
    }

    /// Extend Subscription Renewal Dates for All Active Subscribers of a product in the host's
    /// environment: done at once, then RENEWAL_EXTENSION SUMMARY, to that environment's URL.
    func apiMassExtend(app: SimulatedApp, body: Data) throws(APIFailure) -> MassExtendRenewalDateResponse {
        guard let request = try? AppStoreJSON.makeDecoder().decode(MassExtendRenewalDateRequest.self, from: body) else {
            throw APIFailure(status: 400, code: .generalBadRequest, message: "Invalid request body")
        }
        try Self.checkExtension(
            days: request.extendByDays, reason: request.extendReasonCode, id: request.requestIdentifier)
        if let codes = request.storefrontCountryCodes, codes.isEmpty {
            throw APIFailure(
                status: 400, code: .invalidEmptyStorefrontCountryCodeList, message: "storefrontCountryCodes is empty")
        }
        do {
            try mutate { (state, now) throws(AppStoreSimulationError) in
                let key = Self.massExtensionKey(app.environment, request.productId, request.requestIdentifier)
                guard state.massExtensions[key] == nil else { return }
                var succeeded: Int64 = 0
                // Each extended subscription gets its own RENEWAL_EXTENDED (as with a single
                // extension), then the request as a whole its SUMMARY.
                for (id, subscription) in state.subscriptions.sorted(by: { $0.key < $1.key })
                where subscription.bundleId == app.bundleId && subscription.environment == app.environment
                    && subscription.productId == request.productId && subscription.phase == .active
                {
                    state.subscriptions[id]?.expiresDate += Double(request.extendByDays) * 86_400
                    state.subscriptions[id]?.lastEventDate = max(subscription.lastEventDate, now)
                    state.transactions[subscription.latestTransactionId]?.expiresDate =
                        state.subscriptions[id]?.expiresDate
                    try state.emit(
                        .renewalExtended, nil, bundleId: app.bundleId, transactionId: subscription.latestTransactionId,
                        subscriptionId: id, at: now)
                    succeeded += 1
                }
                state.massExtensions[key] = MassExtendRenewalDateStatusResponse(
                    requestIdentifier: request.requestIdentifier, complete: true, completeDate: now,
                    succeededCount: succeeded, failedCount: 0)
                try state.emit(
                    .renewalExtension, .summary, bundleId: app.bundleId, transactionId: nil, subscriptionId: nil,
                    environment: app.environment,
                    summary: NotificationSummary(
                        requestIdentifier: request.requestIdentifier, environment: app.environment,
                        appAppleId: app.appAppleId, bundleId: app.bundleId, productId: request.productId,
                        storefrontCountryCodes: request.storefrontCountryCodes, failedCount: 0,
                        succeededCount: succeeded),
                    at: now)
            }
        } catch {
            throw APIFailure(status: 500, code: .generalInternal, message: error.description)
        }
        return MassExtendRenewalDateResponse(requestIdentifier: request.requestIdentifier)
    }

    /// Get Status of Subscription Renewal Date Extensions.
    func apiMassExtensionStatus(
        app: SimulatedApp, productId: String, requestIdentifier: String
    ) throws(APIFailure) -> MassExtendRenewalDateStatusResponse {
        let key = Self.massExtensionKey(app.environment, productId, requestIdentifier)
        guard let status = state.withLock({ $0.massExtensions[key] }) else {
            throw APIFailure(status: 404, code: .statusRequestNotFound, message: "No such extension request")
        }
        return status
    }

    /// Mass extensions are kept per environment, product and request identifier.
    static func massExtensionKey(_ environment: Environment, _ productId: String, _ requestIdentifier: String)
        -> String
    {
        environment.rawValue + "/" + productId + "/" + requestIdentifier
    }

    static func checkExtension(days: Int32, reason: ExtendReasonCode, id: String) throws(APIFailure) {
        guard (1...90).contains(days) else {
            throw APIFailure(status: 400, code: .invalidExtendByDays, message: "extendByDays must be 1–90")
        }
        guard (0...3).contains(reason.rawValue) else {
            throw APIFailure(status: 400, code: .invalidExtendReasonCode, message: "extendReasonCode must be 0–3")
        }
        guard !id.isEmpty, id.count <= 128 else {
            throw APIFailure(status: 400, code: .invalidRequestIdentifier, message: "requestIdentifier is invalid")
        }
    }
}

extension AppStoreSimulation.State {
    /// The customer's `appTransactionId` for an app in an environment: one per download, issued
    /// the first time it is needed (a purchase, or the app asking StoreKit for it).
    mutating func appTransactionId(of customer: String, bundleId: String, environment: Environment) -> String {
        var record = customers[customer] ?? CustomerRecord()
        let key = CustomerRecord.appTransactionKey(bundleId: bundleId, environment: environment)
        let id = record.appTransactionIds[key] ?? ids.appTransactionId()
        record.appTransactionIds[key] = id
        customers[customer] = record
        return id
    }

    /// The signed `AppTransaction` of one download (`appTransactionId`) of `app` in `environment`.
    func signedAppTransaction(
        _ appTransactionId: String, app: SimulatedApp, environment: Environment, at now: Date
    ) throws(AppStoreSimulationError) -> String {
        let firstPurchase = transactions.values
            .filter { $0.environment == environment && $0.appTransactionId == appTransactionId }
            .map(\.originalPurchaseDate).min()
        let appTransaction = AppTransaction(
            receiptType: environment, appAppleId: app.appAppleId, bundleId: app.bundleId, applicationVersion: "1",
            receiptCreationDate: now, originalPurchaseDate: firstPurchase ?? now, originalApplicationVersion: "1",
            appTransactionId: appTransactionId, originalPlatform: .iOS)
        guard let signer else { throw .notStarted }
        do {
            return try signer.sign(appTransaction)
        } catch {
            throw .notStarted
        }
    }
}
