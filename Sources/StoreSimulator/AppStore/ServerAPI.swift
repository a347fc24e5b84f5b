import AppStoreServer
import Foundation

/// An App Store Server API error: HTTP status, Apple's error code and message.
struct APIFailure: Error, Sendable {
    var status: Int
    var code: APIErrorCode?
    var message: String

    static let unauthenticated = APIFailure(status: 401, code: nil, message: "Unauthenticated")
    static func notFound(_ id: String) -> APIFailure {
        APIFailure(status: 404, code: .transactionIdNotFound, message: "Transaction id not found: \(id)")
    }
    static func originalNotFound(_ id: String) -> APIFailure {
        APIFailure(
            status: 404, code: .originalTransactionIdNotFound, message: "Original transaction id not found: \(id)")
    }
    static func invalidTransactionId(_ id: String) -> APIFailure {
        APIFailure(status: 400, code: .invalidTransactionId, message: "Invalid transaction id: \(id)")
    }
}

/// The App Store Server API's answers, computed from the simulation's state.
extension AppStoreSimulation {
    static let apiPageSize = 20

    /// The app the bearer token names, as the API host called serves it: its `environment` is the
    /// host's (`host` nil: the base URL, which serves the app's default environment). Every answer
    /// is about that environment only; the other one's purchases are unknown there. Tokens are
    /// judged on the wall clock (a client can't know the simulated time) or the simulated one.
    func apiAuthenticate(_ authorization: String?, host: Environment? = nil) throws(APIFailure) -> SimulatedApp {
        let now = [clock.wallClock.now(), clock.now()]
        let keys = state.withLock { $0.apiKeys }
        guard let bundleId = try? APIAuthenticator.authenticate(authorization: authorization, keys: keys, now: now),
            var app = state.withLock({ $0.apps[bundleId] })
        else { throw .unauthenticated }
        if let host { app.environment = host }
        return app
    }

    /// Get Transaction Info.
    func apiTransactionInfo(app: SimulatedApp, transactionId: String) throws(APIFailure) -> TransactionInfoResponse {
        let now = clock.now()
        return try apiRead { (state) throws(APIFailure) in
            let record = try state.apiTransaction(transactionId, app: app)
            return TransactionInfoResponse(signedTransactionInfo: try state.apiSign(record, app: app, now: now))
        }
    }

    /// Get Transaction History (v2): the customer's transactions for the app, by revision.
    func apiHistory(
        app: SimulatedApp, transactionId: String, revision: String?, filter: HistoryFilter
    ) throws(APIFailure) -> HistoryResponse {
        let now = clock.now()
        let matches = try filter.predicate()
        return try apiRead { (state) throws(APIFailure) in
            let record = try state.apiTransaction(transactionId, app: app)
            var all = state.transactions.values
                .filter {
                    $0.bundleId == app.bundleId && $0.environment == app.environment
                        && $0.appTransactionId == record.appTransactionId && matches($0)
                }
                .sorted { ($0.purchaseDate, $0.transactionId) < ($1.purchaseDate, $1.transactionId) }
            if filter.descending { all.reverse() }
            let offset = try Self.apiOffset(revision, code: .invalidRequestRevision)
            let page = all.dropFirst(offset).prefix(Self.apiPageSize)
            var signed: [String] = []
            for transaction in page { signed.append(try state.apiSign(transaction, app: app, now: now)) }
            let next = offset + page.count
            return HistoryResponse(
                revision: Self.apiToken(next), bundleId: app.bundleId, appAppleId: app.appAppleId,
                environment: app.environment, hasMore: next < all.count, signedTransactions: signed)
        }
    }

    /// Get All Subscription Statuses: the customer's subscriptions for the app, by group, optionally
    /// only those whose status is in `statuses`.
    func apiStatuses(
        app: SimulatedApp, transactionId: String, statuses: [Int32]
    ) throws(APIFailure) -> StatusResponse {
        let now = clock.now()
        return try apiRead { (state) throws(APIFailure) in
            let record = try state.apiTransaction(transactionId, app: app)
            let subscriptions = state.subscriptions.values
                .filter {
                    $0.bundleId == app.bundleId && $0.environment == app.environment
                        && $0.appTransactionId == record.appTransactionId
                }
                .sorted { $0.originalTransactionId < $1.originalTransactionId }
            var groups: [String: [LastTransactionsItem]] = [:]
            for subscription in subscriptions {
                guard statuses.isEmpty || statuses.contains(subscription.phase.status.rawValue) else { continue }
                guard let latest = state.transactions[subscription.latestTransactionId] else { continue }
                let renewal = PayloadBuilder.renewalInfo(
                    subscription, renewalProduct: state.products[subscription.autoRenewProductId], app: app,
                    signedDate: now)
                let signedRenewal: String
                do {
                    guard let signer = state.signer else { throw AppStoreSimulationError.notStarted }
                    signedRenewal = try signer.sign(renewal)
                } catch {
                    throw APIFailure(status: 500, code: .generalInternal, message: "signing failed")
                }
                groups[subscription.groupId, default: []].append(
                    LastTransactionsItem(
                        status: subscription.phase.status, originalTransactionId: subscription.originalTransactionId,
                        signedTransactionInfo: try state.apiSign(latest, app: app, now: now),
                        signedRenewalInfo: signedRenewal))
            }
            return StatusResponse(
                environment: app.environment, bundleId: app.bundleId, appAppleId: app.appAppleId,
                data: groups.keys.sorted().map {
                    SubscriptionGroupIdentifierItem(subscriptionGroupIdentifier: $0, lastTransactions: groups[$0])
                })
        }
    }

    /// Get Notification History: the app's notifications of the host's environment in
    /// `[startDate, endDate)`, filtered, by page.
    func apiNotificationHistory(
        app: SimulatedApp, request: NotificationHistoryRequest, paginationToken: String?
    ) throws(APIFailure) -> NotificationHistoryResponse {
        guard let start = request.startDate else {
            throw APIFailure(status: 400, code: .invalidStartDate, message: "startDate is required")
        }
        guard let end = request.endDate else {
            throw APIFailure(status: 400, code: .invalidEndDate, message: "endDate is required")
        }
        guard start < end else {
            throw APIFailure(status: 400, code: .startDateAfterEndDate, message: "startDate is not before endDate")
        }
        return try apiRead { (state) throws(APIFailure) in
            var originalTransactionId: String?
            if let transactionId = request.transactionId {
                originalTransactionId = try state.apiTransaction(transactionId, app: app).originalTransactionId
            }
            let matching = state.notifications.filter { record in
                let notification = record.notification
                guard notification.bundleId == app.bundleId, notification.environment == app.environment,
                    let date = notification.payload.signedDate,
                    date >= start, date < end
                else { return false }
                if let type = request.notificationType, notification.payload.notificationType != type { return false }
                if let subtype = request.notificationSubtype, notification.payload.subtype != subtype { return false }
                if request.onlyFailures == true, notification.status == .delivered { return false }
                if let originalTransactionId {
                    guard let id = record.transactionId,
                        state.transactions[id]?.originalTransactionId == originalTransactionId
                    else { return false }
                }
                return true
            }
            let offset = try Self.apiOffset(paginationToken, code: .invalidPaginationToken)
            let page = matching.dropFirst(offset).prefix(Self.apiPageSize)
            let next = offset + page.count
            return NotificationHistoryResponse(
                paginationToken: next < matching.count ? Self.apiToken(next) : nil, hasMore: next < matching.count,
                notificationHistory: page.map {
                    NotificationHistoryResponseItem(
                        signedPayload: $0.notification.signedPayload,
                        sendAttempts: $0.notification.attempts.map(Self.sendAttempt))
                })
        }
    }

    /// Request a Test Notification: a `TEST` notification of the host's environment is sent to the
    /// app's URL of that environment now.
    func apiSendTestNotification(app: SimulatedApp) throws(APIFailure) -> SendTestNotificationResponse {
        do {
            return try mutate { (state, now) throws(AppStoreSimulationError) in
                try state.emit(
                    .test, nil, bundleId: app.bundleId, transactionId: nil, subscriptionId: nil,
                    environment: app.environment, at: now)
                let index = state.notifications.count - 1
                let token =
                    state.notifications[index].notification.notificationUUID + "_"
                    + String(Int64((now.timeIntervalSince1970 * 1_000).rounded()))
                state.testNotificationTokens[token] = index
                return SendTestNotificationResponse(testNotificationToken: token)
            }
        } catch {
            throw APIFailure(status: 500, code: .generalInternal, message: error.description)
        }
    }

    /// Get Test Notification Status.
    func apiTestNotificationStatus(app: SimulatedApp, token: String) throws(APIFailure) -> CheckTestNotificationResponse
    {
        try apiRead { (state) throws(APIFailure) in
            guard let index = state.testNotificationTokens[token],
                state.notifications[index].notification.bundleId == app.bundleId,
                state.notifications[index].notification.environment == app.environment
            else {
                throw APIFailure(status: 404, code: .testNotificationNotFound, message: "Test notification not found")
            }
            let notification = state.notifications[index].notification
            return CheckTestNotificationResponse(
                signedPayload: notification.signedPayload, sendAttempts: notification.attempts.map(Self.sendAttempt))
        }
    }

    private func apiRead<Result: Sendable>(
        _ body: (inout State) throws(APIFailure) -> Result
    ) throws(APIFailure) -> Result {
        try state.withLock { (state) throws(APIFailure) -> Result in try body(&state) }
    }

    static func sendAttempt(_ attempt: DeliveryAttempt) -> SendAttemptItem {
        SendAttemptItem(
            attemptDate: attempt.attemptDate, sendAttemptResult: SendAttemptResult(rawValue: attempt.sendAttemptResult))
    }

    /// Opaque page tokens: the offset, base64url-encoded.
    static func apiToken(_ offset: Int) -> String {
        Base64URL.encode(Data("offset:\(offset)".utf8))
    }

    static func apiOffset(_ token: String?, code: APIErrorCode) throws(APIFailure) -> Int {
        guard let token else { return 0 }
        guard let data = Base64URL.decode(token[...]), let text = String(data: data, encoding: .utf8),
            text.hasPrefix("offset:"), let offset = Int(text.dropFirst("offset:".count)), offset >= 0
        else { throw APIFailure(status: 400, code: code, message: "Invalid token") }
        return offset
    }
}

extension AppStoreSimulation.State {
    /// A transaction of `app` in the environment of the host called (`app.environment`), or Apple's
    /// 400 / 404: the other environment's transactions are unknown there.
    func apiTransaction(_ transactionId: String, app: SimulatedApp) throws(APIFailure) -> TransactionRecord {
        guard !transactionId.isEmpty, transactionId.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw .invalidTransactionId(transactionId)
        }
        guard let record = transactions[transactionId], record.bundleId == app.bundleId,
            record.environment == app.environment
        else {
            throw .notFound(transactionId)
        }
        return record
    }

    func apiSign(_ record: TransactionRecord, app: SimulatedApp, now: Date) throws(APIFailure) -> String {
        do {
            guard let signer else { throw AppStoreSimulationError.notStarted }
            return try signer.sign(PayloadBuilder.transaction(record, app: app, signedDate: now))
        } catch {
            throw APIFailure(status: 500, code: .generalInternal, message: "signing failed")
        }
    }
}

/// Get Transaction History's filters, as the query carries them.
struct HistoryFilter: Sendable {
    var startDate: Int64?
    var endDate: Int64?
    var productIds: [String]
    var productTypes: [String]
    var subscriptionGroupIdentifiers: [String]
    var inAppOwnershipType: String?
    var revoked: String?
    var descending: Bool

    /// Which transactions pass, or Apple's 400 for a malformed filter.
    func predicate() throws(APIFailure) -> @Sendable (TransactionRecord) -> Bool {
        let types: [String: TransactionType] = [
            "AUTO_RENEWABLE": .autoRenewableSubscription, "NON_RENEWABLE": .nonRenewingSubscription,
            "CONSUMABLE": .consumable, "NON_CONSUMABLE": .nonConsumable,
        ]
        var wantedTypes: Set<TransactionType> = []
        for name in productTypes {
            guard let type = types[name] else {
                throw APIFailure(status: 400, code: .invalidProductType, message: "Invalid productType \(name)")
            }
            wantedTypes.insert(type)
        }
        var wantsRevoked: Bool?
        if let revoked {
            guard revoked == "true" || revoked == "false" else {
                throw APIFailure(status: 400, code: .invalidRevoked, message: "revoked must be true or false")
            }
            wantsRevoked = revoked == "true"
        }
        var ownership: InAppOwnershipType?
        if let inAppOwnershipType {
            guard inAppOwnershipType == "PURCHASED" || inAppOwnershipType == "FAMILY_SHARED" else {
                throw APIFailure(status: 400, code: .invalidInAppOwnershipType, message: "Invalid inAppOwnershipType")
            }
            ownership = InAppOwnershipType(rawValue: inAppOwnershipType)
        }
        if let startDate, let endDate, startDate > endDate {
            throw APIFailure(status: 400, code: .startDateAfterEndDate, message: "startDate is after endDate")
        }
        let start = startDate.map { Date(timeIntervalSince1970: Double($0) / 1000) }
        let end = endDate.map { Date(timeIntervalSince1970: Double($0) / 1000) }
        let products = Set(productIds)
        let groups = Set(subscriptionGroupIdentifiers)
        let wanted = wantedTypes
        let owner = ownership
        let revokedOnly = wantsRevoked
        return { record in
            if let start, record.purchaseDate < start { return false }
            if let end, record.purchaseDate >= end { return false }
            if !products.isEmpty, !products.contains(record.productId) { return false }
            if !wanted.isEmpty, !wanted.contains(record.type) { return false }
            if !groups.isEmpty, !groups.contains(record.subscriptionGroupIdentifier ?? "") { return false }
            if let owner, record.ownership != owner { return false }
            if let revokedOnly, (record.revocation != nil) != revokedOnly { return false }
            return true
        }
    }
}
