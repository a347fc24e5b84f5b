import AppStoreServer
public import Foundation
public import Logging
public import StoreCore
public import Storekeeper
import StorekeeperStorage

/// The App Store behind the server: signed notifications routed to the app and environment they
/// claim and verified there, submissions (signed transactions, transaction ids, app receipts)
/// looked up with the app's own API client, overdue subscriptions refreshed in their own
/// environment, app account tokens set for purchases made outside the app, and the notification
/// history read per app and environment.
public struct AppStoreAdapter: StoreAdapter, TranslatesStoreErrors {
    static let storeName = "App Store"
    public let apps: AppStoreApps
    public let catalog: Catalog
    public let policies: Policies
    public let clock: any WallClock
    public let logger: Logger
    /// What this process accepted and has not processed yet, decoded (``RecentlyVerified``).
    let recentlyVerified = RecentlyVerified<VerifiedNotification>(capacity: 2048)

    public var store: Store { .appStore }

    public init(apps: AppStoreApps, catalog: Catalog, policies: Policies, clock: any WallClock, logger: Logger) {
        self.apps = apps
        self.catalog = catalog
        self.policies = policies
        self.clock = clock
        self.logger = logger
    }

    // MARK: Notifications

    /// Verifies the signed payload and every signed field in it, and keeps what verified (the
    /// decoded payloads, without the signed strings) for ``interpret(_:)``.
    public func accept(_ delivery: WebhookDelivery) async throws -> AcceptedDelivery {
        let (notification, nestedJSON) = try await verifiedNotificationKeepingJSON(body: delivery.body)
        guard let uuid = notification.payload.notificationUUID, !uuid.isEmpty else {
            throw ServerError(.malformedPayload, "the notification has no notificationUUID")
        }
        let record = try VerifiedNotificationRecord.encode(notification, nestedJSON: nestedJSON)
        // As the record reads back: the payload without its signed strings.
        recentlyVerified.keep(notification.withoutSignedFields, record: record, for: uuid)
        return AcceptedDelivery(dedupeKey: uuid, verified: record)
    }

    /// With what the webhook verified kept (every notification stored since migration 16), the
    /// notification is read from that record. (A record that cannot be read is verified again, on
    /// the process's CPU, plus OCSP requests when online checks are configured.)
    public func interpretsFromStoredNotification(_ notification: InboxNotification) -> Bool {
        notification.verified != nil
    }

    public func interpret(_ notification: InboxNotification) async throws -> NotificationChange {
        let verified =
            if let record = notification.verified,
                let kept = recentlyVerified.take(notification.dedupeKey, record: record)
                    ?? VerifiedNotificationRecord.decode(record)
            {
                kept
            } else if notification.bodyWasRead {
                try await verifiedNotification(body: notification.body)
            } else {
                throw BodyNotRead(store: notification.store, dedupeKey: notification.dedupeKey)
            }
        let payload = verified.payload
        let event = [payload.notificationType?.rawValue, payload.subtype?.rawValue].compactMap { $0 }
            .joined(separator: "/")
        let cause = ChangeCause(source: .notification, event: event, reference: payload.notificationUUID)
        // `summary`, `externalPurchaseToken` and `appData` notifications change no purchase: a
        // mass extension's subscriptions each get their own RENEWAL_EXTENDED.
        guard let transaction = verified.transaction else { return NotificationChange([], cause: cause) }
        let observedAt =
            AppStoreFacts.observedAt(payload.signedDate, transaction.signedDate, verified.renewalInfo?.signedDate)
            ?? notification.receivedAt
        let observation = try AppStoreFacts.observation(
            transaction: transaction, renewalInfo: verified.renewalInfo, status: payload.data?.status,
            observedAt: observedAt, catalog: catalog)
        var refundRequest: RefundRequest?
        if payload.notificationType == .consumptionRequest {
            refundRequest = try Self.refundRequest(
                payload, transaction: transaction, requestedAt: payload.signedDate ?? notification.receivedAt,
                now: clock.now())
        }
        return NotificationChange([observation], cause: cause, refundRequest: refundRequest)
    }

    /// The outbox row for a `CONSUMPTION_REQUEST`: due now, answerable for Apple's 12 hours.
    static func refundRequest(
        _ payload: NotificationPayload, transaction: JWSTransaction, requestedAt: Date, now: Date
    ) throws(ServerError) -> RefundRequest {
        guard let uuid = payload.notificationUUID, let original = transaction.originalTransactionId,
            let transactionID = transaction.transactionId, let bundleID = transaction.bundleId,
            let environment = AppStoreFacts.environment(transaction.environment)
        else {
            throw ServerError(
                .malformedPayload, "the CONSUMPTION_REQUEST lacks its notificationUUID or transaction ids")
        }
        return RefundRequest(
            id: uuid, purchaseKey: .appStore(original), transactionID: transactionID, app: AppID(bundleID),
            environment: environment, reason: payload.data?.consumptionRequestReason?.rawValue,
            requestedAt: requestedAt, deadline: requestedAt.addingTimeInterval(RefundRequest.answerWindow),
            nextAttemptAt: now, updatedAt: now)
    }

    // MARK: Refund requests

    public func answer(_ request: RefundRequest, with answer: ConsumptionAnswer) async throws {
        let client = try apps.client(request.app, request.environment)
        let body = ConsumptionRequest(
            customerConsented: answer.customerConsented,
            consumptionPercentage: answer.consumptionMilliPercent.map { Int32(clamping: $0) },
            deliveryStatus: AppStoreServer.DeliveryStatus(rawValue: answer.deliveryStatus.rawValue),
            refundPreference: answer.refundPreference.map { AppStoreServer.RefundPreference(rawValue: $0.rawValue) },
            sampleContentProvided: answer.sampleContentProvided)
        let transactionID = request.transactionID
        try await translating { try await client.sendConsumptionInformation(transactionId: transactionID, body) }
    }

    /// A notification request body (`{"signedPayload": …}`) verified by the verifier of the app and
    /// environment it claims — in `data`, `summary`, `externalPurchaseToken` or `appData`.
    func verifiedNotification(body: Data) async throws(ServerError) -> VerifiedNotification {
        try await verifiedNotificationKeepingJSON(body: body).notification
    }

    /// ``verifiedNotification(body:)`` with the nested payloads' JSON as signed.
    func verifiedNotificationKeepingJSON(body: Data) async throws(ServerError)
        -> (notification: VerifiedNotification, nestedJSON: VerifiedNotification.NestedJSON)
    {
        guard let signedPayload = NotificationRequestBody.signedPayload(body) else {
            throw ServerError(.malformedPayload, "the body is not {\"signedPayload\": \"<JWS>\"}")
        }
        return try await translating {
            // Read once: the claimed app and environment pick the verifier, which checks the same
            // decoded payload.
            let unverified = try UnverifiedSignedData(parsing: signedPayload, as: NotificationPayload.self)
            return try await apps.verifier(for: unverified).verifyNotificationKeepingJSON(unverified)
        }
    }

    // MARK: Submissions

    /// `POST /v1/customers/{id}/purchases/app-store`: one of `signedTransaction`, `transactionId` or
    /// `appReceipt`; `bundleId` names the app when several are configured (a signed transaction and
    /// a receipt name their own); `environment` limits the lookup of a transaction id or receipt
    /// (by default Production, then Sandbox, as Apple advises).
    struct Submission: Decodable {
        var signedTransaction: String?
        var transactionId: String?
        var appReceipt: String?
        var bundleId: String?
        var environment: String?
    }

    public func interpretSubmission(_ body: Data) async throws -> [PurchaseObservation] {
        let submission = try decodeJSONBody(Submission.self, body)
        let environments: [PurchaseEnvironment]
        switch submission.environment {
        case nil: environments = [.production, .sandbox]
        case let name?:
            guard let environment = PurchaseEnvironment(rawValue: name.lowercased()) else {
                throw ServerError(.malformedSubmission, "environment must be Production or Sandbox, not '\(name)'")
            }
            environments = [environment]
        }
        if let jws = submission.signedTransaction {
            let transaction = try await translating { try await apps.verify(jws, as: JWSTransaction.self) }
            return [try await submittedObservation(transaction)]
        }
        if let transactionID = submission.transactionId {
            let app = try apps.app(named: submission.bundleId.map { AppID($0) })
            let transaction = try await inFirstEnvironment(environments, of: app) { client in
                try await client.getTransactionInfo(transactionId: transactionID)
            }
            return [try await submittedObservation(transaction)]
        }
        if let receipt = submission.appReceipt {
            return try await receiptObservations(receipt, environments: environments)
        }
        throw ServerError(.malformedSubmission, "send one of signedTransaction, transactionId or appReceipt")
    }

    /// The facts a StoreKit 1 app receipt leads to. The receipt only names a transaction; what
    /// counts is the customer's transaction history as the App Store Server API answers it (signed
    /// by Apple and verified): the latest transaction of each original purchase.
    func receiptObservations(_ base64: String, environments: [PurchaseEnvironment]) async throws
        -> [PurchaseObservation]
    {
        let receipt: AppReceipt
        let transactionID: String
        do {
            receipt = try AppReceipt(base64: base64)
            transactionID = try receipt.requireTransactionId()
        } catch {
            throw ServerError(.malformedSubmission, "the app receipt: \(error.description)")
        }
        let app = try apps.app(named: AppID(receipt.bundleId))
        let history = try await inFirstEnvironment(environments, of: app) { client in
            var latest: [String: JWSTransaction] = [:]
            for try await transaction in client.transactionHistory(transactionId: transactionID) {
                let original = transaction.originalTransactionId ?? transaction.transactionId ?? ""
                if let known = latest[original],
                    (known.purchaseDate ?? .distantPast) >= (transaction.purchaseDate ?? .distantPast)
                {
                    continue
                }
                latest[original] = transaction
            }
            guard !latest.isEmpty else {
                throw AppStoreServerAPIError(
                    httpStatus: 404, code: nil, message: "the receipt's transaction \(transactionID) has no history")
            }
            return latest.values.sorted { ($0.purchaseDate ?? .distantPast) < ($1.purchaseDate ?? .distantPast) }
        }
        var observations: [PurchaseObservation] = []
        for transaction in history { observations.append(try await submittedObservation(transaction)) }
        return observations
    }

    /// The first answer among `environments` of the app's clients; an environment without an API
    /// key or that does not know the id is passed over.
    func inFirstEnvironment<Result: Sendable>(
        _ environments: [PurchaseEnvironment], of app: AppStoreApps.App,
        _ call: (AppStoreServerAPIClient) async throws -> Result
    ) async throws -> Result {
        var lastError = ServerError(.notConfigured, "app \(app.name) has no App Store Server API key")
        for environment in environments {
            guard let client = app.clients[environment] else { continue }
            do {
                return try await call(client)
            } catch {
                // (A typed `catch … where` here sends the 6.3 compiler's SIL passes into a loop.)
                let translated = Self.translate(error)
                guard translated.code == .purchaseNotFound else { throw translated }
                lastError = translated
            }
        }
        throw lastError
    }

    /// A verified transaction presented by a customer, with — for a subscription — its current
    /// status and renewal info from its own app and environment.
    func submittedObservation(_ transaction: JWSTransaction) async throws -> PurchaseObservation {
        var renewalInfo: JWSRenewalInfo?
        var status: SubscriptionStatus?
        var latest: JWSTransaction?
        if transaction.type == .autoRenewableSubscription, let original = transaction.originalTransactionId,
            let bundleID = transaction.bundleId, let environment = AppStoreFacts.environment(transaction.environment),
            let client = try? apps.client(AppID(bundleID), environment)
        {
            let item = try await translating {
                try await client.getAllSubscriptionStatuses(transactionId: original)
                    .subscription(originalTransactionId: original)
            }
            renewalInfo = item?.renewalInfo
            status = item?.status
            latest = item?.transaction
        }
        func observing(_ transaction: JWSTransaction) throws(ServerError) -> PurchaseObservation {
            let observedAt =
                AppStoreFacts.observedAt(transaction.signedDate, renewalInfo?.signedDate) ?? clock.now()
            return try AppStoreFacts.observation(
                transaction: transaction, renewalInfo: renewalInfo, status: status, observedAt: observedAt,
                catalog: catalog)
        }
        var observation = try observing(transaction)
        // An earlier transaction of the subscription (its original, a past renewal, one upgraded
        // within the group) does not state the subscription's state; its latest one, as the
        // status answer gives it, does.
        if case .billingEvent = observation, let latest { observation = try observing(latest) }
        // A transaction from before Apple carried appTransactionId: Get App Transaction Info names it.
        if case .purchase(var fact, let older) = observation, fact.appTransactionID == nil,
            let transactionID = transaction.transactionId,
            let client = try? apps.client(fact.app, fact.environment),
            let appTransaction = try? await client.getAppTransactionInfo(transactionId: transactionID)
        {
            fact.appTransactionID = appTransaction.appTransactionId
            observation = .purchase(fact, supersedes: older)
        }
        guard case .purchase = observation else {
            throw ServerError(
                .transactionUpgraded,
                "transaction \(transaction.transactionId ?? "?") was upgraded; submit the newer one")
        }
        return observation
    }

    // MARK: The purchase's own app and environment

    public func currentFact(of purchase: Purchase) async throws -> PurchaseFact? {
        let client = try apps.client(try purchase.requireApp(), purchase.environment)
        let id = purchase.key.id
        let item = try await translating {
            try await client.getAllSubscriptionStatuses(transactionId: id).subscription(originalTransactionId: id)
        }
        guard let item else { throw ServerError(.purchaseNotFound, "the App Store lists no status for \(id)") }
        return try AppStoreFacts.fact(from: item, catalog: catalog)
    }

    /// Sets the customer's account token on a purchase whose store-side token is not theirs — made
    /// outside the app (an offer code, a purchase in the App Store), or moved to them by the
    /// ownership policy — when the policy says so, so that the store's later notifications name
    /// the customer. Not for family-shared purchases: Apple refuses them
    /// (FamilyTransactionNotSupportedError, taken as nothing owed).
    public func settle(_ purchase: Purchase, accountToken: UUID?) async throws -> PurchaseSettlement? {
        let token = AccountHint.normalized(accountToken?.uuidString)
        guard let accountToken, let token, policies.setAppAccountToken, purchase.accountHint != token,
            purchase.ownership == .purchased
        else { return nil }
        let client = try apps.client(try purchase.requireApp(), purchase.environment)
        do {
            try await client.setAppAccountToken(originalTransactionId: purchase.key.id, appAccountToken: accountToken)
        } catch {
            let translated = Self.translate(error)
            guard translated.storeErrorCode == Int(APIErrorCode.familyTransactionNotSupported.rawValue) else {
                throw translated
            }
            // Apple keeps family-shared transactions token-free: nothing is owed.
            logger.notice(
                "Apple refused an account token for a family-shared purchase",
                metadata: ["purchase": "\(purchase.key)"])
            return nil
        }
        return .accountTokenSet(token)
    }

    // MARK: Catch-up

    /// Stores every notification Apple's history lists since the cursor (at first,
    /// `historyLookback` back), per app and environment with an API key, then moves the cursor to
    /// now less an overlap: Apple may list a notification a little after it was sent.
    public func catchUp(_ context: CatchUpContext, _ report: inout CatchUpReport) async throws {
        let now = clock.now()
        var stored = 0
        for app in apps.apps {
            for environment in PurchaseEnvironment.allCases {
                guard let client = app.clients[environment] else { continue }
                let cursor = CatchUpCursor.notificationHistory(app.id, environment)
                // Apple keeps 180 days of history.
                let start = try await context.cursors.date(
                    cursor, default: now - context.settings.historyLookback, oldest: now - 179 * 86_400)
                let request = NotificationHistoryRequest(startDate: start, endDate: now)
                try await context.step(
                    after: cursor, from: start, movingTo: max(start, now - context.settings.overlap), &report
                ) {
                    report in
                    do {
                        for try await entry in client.notificationHistory(request) {
                            let body = try JSONEncoder().encode(["signedPayload": entry.signedPayload])
                            let new = try await context.eachItem("notification history entry", &report) {
                                try await context.storeFromHistory(.appStore, body: body)
                            }
                            stored += new == true ? 1 : 0
                        }
                    } catch {
                        throw Self.translate(error)
                    }
                }
            }
        }
        report.count(.history, stored)
        if stored > 0 {
            logger.notice("stored App Store notifications that were never delivered", metadata: ["count": "\(stored)"])
        }
    }

    // MARK: Errors

    /// The App Store verifier's and API client's errors: an id Apple doesn't know is not found;
    /// 429, 5xx and network failures are retryable.
    static func translateStoreError(_ error: any Error) -> ServerError? {
        switch error {
        case let error as SignedDataVerificationError:
            return ServerError(.invalidSignedData, "\(error.reason.rawValue): \(error.detail)", underlying: error)
        case let error as AppStoreServerAPIError:
            if error.httpStatus == 404 {
                return ServerError(
                    .purchaseNotFound, "the App Store does not know it: \(error.message)", underlying: error)
            }
            let code: ErrorCode = error.isRetryable ? .storeUnavailable : .storeRefused
            return ServerError(
                code, "App Store Server API: \(error)", underlying: error,
                storeErrorCode: error.code.map { Int($0.rawValue) })
        default:
            return nil
        }
    }
}
