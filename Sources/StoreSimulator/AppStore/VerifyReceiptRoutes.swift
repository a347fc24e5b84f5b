public import AppStoreServer
import Foundation
import Hummingbird
import NIOCore

extension AppStoreSimulation {
    /// Sets (or, with nil, removes) the app-specific shared secret verifyReceipt requires as `password`.
    public func setSharedSecret(_ secret: String?, bundleId: String) throws(AppStoreSimulationError) {
        try state.withLock { (state) throws(AppStoreSimulationError) in
            guard state.apps[bundleId] != nil else { throw .unknownApp(bundleId) }
            state.sharedSecrets[bundleId] = secret
        }
    }

    /// What the legacy verifyReceipt endpoint of `endpoint` (production or sandbox) answers for a
    /// base64 receipt: 21002 when it does not decode, 21007 for a sandbox receipt sent to production,
    /// 21008 for the reverse, 21004 when the app has a shared secret and `password` differs, else 0
    /// with the decoded receipt (`in_app`), `latest_receipt_info` (every transaction of the receipt's
    /// subscriptions as they are now, only the latest of each with `excludeOldTransactions`),
    /// `pending_renewal_info` and a fresh `latest_receipt`.
    public func verifyReceipt(
        receiptData: String, password: String?, excludeOldTransactions: Bool, endpoint: AppStoreServer.Environment
    ) -> VerifyReceiptResponse {
        guard let receipt = try? AppReceipt(base64: receiptData) else {
            return VerifyReceiptResponse(status: .malformedReceiptData)
        }
        let receiptEnvironment: AppStoreServer.Environment
        switch receipt.receiptType {
        case "Production", "ProductionVPP": receiptEnvironment = .production
        case "ProductionSandbox", "ProductionVPPSandbox", "Sandbox": receiptEnvironment = .sandbox
        default: return VerifyReceiptResponse(status: .malformedReceiptData)
        }
        if endpoint == .production, receiptEnvironment == .sandbox {
            return VerifyReceiptResponse(status: .sandboxReceiptSentToProduction, environment: .sandbox)
        }
        if endpoint == .sandbox, receiptEnvironment == .production {
            return VerifyReceiptResponse(status: .productionReceiptSentToSandbox, environment: .production)
        }
        let now = clock.now()
        return state.withLock { state in
            guard let app = state.apps[receipt.bundleId] else {
                return VerifyReceiptResponse(status: .malformedReceiptData)
            }
            if let secret = state.sharedSecrets[app.bundleId], password != secret {
                return VerifyReceiptResponse(status: .sharedSecretMismatch, environment: receiptEnvironment)
            }
            return state.verifyReceiptAnswer(
                receipt, app: app, environment: receiptEnvironment, excludeOldTransactions: excludeOldTransactions,
                now: now)
        }
    }
}

extension AppStoreSimulation.State {
    func verifyReceiptAnswer(
        _ receipt: AppReceipt, app: SimulatedApp, environment: AppStoreServer.Environment, excludeOldTransactions: Bool,
        now: Date
    ) -> VerifyReceiptResponse {
        // A receipt of one environment knows only that environment's purchases.
        let known = { (id: String?) -> TransactionRecord? in
            id.flatMap { transactions[$0] }.flatMap {
                $0.bundleId == app.bundleId && $0.environment == environment ? $0 : nil
            }
        }
        let inApp = receipt.inAppPurchases.map { purchase in
            known(purchase.transactionId).map { VerifyReceiptJSON.transaction($0) }
                ?? VerifyReceiptTransaction(
                    originalPurchaseDateMs: purchase.originalPurchaseDate.map(VerifyReceiptJSON.milliseconds),
                    originalTransactionId: purchase.originalTransactionId, productId: purchase.productId,
                    purchaseDateMs: purchase.purchaseDate.map(VerifyReceiptJSON.milliseconds),
                    quantity: purchase.quantity.map { String($0) }, transactionId: purchase.transactionId)
        }
        var subscriptionIds: [String] = []
        for purchase in receipt.inAppPurchases {
            guard let id = purchase.originalTransactionId, subscriptions[id]?.environment == environment,
                subscriptions[id]?.bundleId == app.bundleId, !subscriptionIds.contains(id)
            else { continue }
            subscriptionIds.append(id)
        }
        let live = subscriptionIds.compactMap { subscriptions[$0] }
        var latest: [TransactionRecord] = []
        for subscription in live {
            let ids = excludeOldTransactions ? [subscription.latestTransactionId] : subscription.transactionIds
            latest.append(contentsOf: ids.compactMap { transactions[$0] })
        }
        latest.sort { ($0.purchaseDate, $0.transactionId) < ($1.purchaseDate, $1.transactionId) }
        let pending = live.map { subscription in
            VerifyReceiptJSON.pendingRenewal(subscription)
        }
        var latestReceipt: String?
        if !live.isEmpty {
            let receiptTransactions = receipt.inAppPurchases.compactMap { known($0.transactionId) }
            let all = Dictionary(
                (receiptTransactions + live.flatMap { $0.transactionIds.compactMap { transactions[$0] } })
                    .map { ($0.transactionId, $0) }, uniquingKeysWith: { first, _ in first })
            latestReceipt =
                (try? ReceiptMinter.receipt(
                    app: app, environment: environment, transactions: Array(all.values), createdAt: now))
                .map { Data($0).base64EncodedString() }
        }
        let nowMs = VerifyReceiptJSON.milliseconds(now)
        return VerifyReceiptResponse(
            status: .valid, environment: environment,
            receipt: VerifyReceiptAppReceipt(
                adamId: environment == .production ? app.appAppleId : 0,
                appItemId: environment == .production ? app.appAppleId : 0, applicationVersion: "1.0",
                bundleId: receipt.bundleId, downloadId: 0, inApp: inApp, originalApplicationVersion: "1.0",
                receiptCreationDateMs: nowMs, receiptType: receipt.receiptType, requestDateMs: nowMs),
            latestReceipt: latestReceipt,
            latestReceiptInfo: live.isEmpty ? nil : latest.map(VerifyReceiptJSON.transaction),
            pendingRenewalInfo: live.isEmpty ? nil : pending)
    }
}

/// verifyReceipt's JSON shapes: every value a string, dates in milliseconds since 1970.
enum VerifyReceiptJSON {
    static func milliseconds(_ date: Date) -> String {
        String(Int64((date.timeIntervalSince1970 * 1000).rounded()))
    }

    static func transaction(_ record: TransactionRecord) -> VerifyReceiptTransaction {
        let offer = record.offer
        let isSubscription = record.type == .autoRenewableSubscription
        return VerifyReceiptTransaction(
            appAccountToken: record.appAccountToken?.uuidString.lowercased(),
            cancellationDateMs: record.revocation.map { milliseconds($0.date) },
            cancellationReason: record.revocation.map { $0.reason == .appIssue ? "1" : "0" },
            expiresDateMs: record.expiresDate.map(milliseconds),
            inAppOwnershipType: record.ownership.rawValue,
            isInIntroOfferPeriod: isSubscription
                ? String(offer?.type == .introductory && offer?.discountType != .freeTrial) : nil,
            isTrialPeriod: isSubscription ? String(offer?.discountType == .freeTrial) : nil,
            isUpgraded: record.isUpgraded ? "true" : nil,
            offerCodeRefName: offer?.type == .offerCode ? offer?.identifier : nil,
            originalPurchaseDateMs: milliseconds(record.originalPurchaseDate),
            originalTransactionId: record.originalTransactionId,
            productId: record.productId,
            promotionalOfferId: offer?.type == .promotional ? offer?.identifier : nil,
            purchaseDateMs: milliseconds(record.purchaseDate),
            quantity: "1",
            subscriptionGroupIdentifier: record.subscriptionGroupIdentifier,
            transactionId: record.transactionId,
            webOrderLineItemId: record.webOrderLineItemId)
    }

    static func pendingRenewal(_ subscription: SubscriptionRecord) -> VerifyReceiptPendingRenewal {
        var intent: String?
        var inRetry = "0"
        var grace: String?
        switch subscription.phase {
        case .expired(let expiration): intent = String(expiration.rawValue)
        case .gracePeriod(let expires, _):
            inRetry = "1"
            grace = milliseconds(expires)
        case .billingRetry: inRetry = "1"
        case .active, .revoked: break
        }
        let offer = subscription.nextRenewalOffer
        return VerifyReceiptPendingRenewal(
            autoRenewProductId: subscription.autoRenewProductId, autoRenewStatus: subscription.autoRenew ? "1" : "0",
            expirationIntent: intent, gracePeriodExpiresDateMs: grace, isInBillingRetryPeriod: inRetry,
            offerCodeRefName: offer?.type == .offerCode ? offer?.identifier : nil,
            originalTransactionId: subscription.originalTransactionId,
            priceConsentStatus: subscription.priceIncrease.map { $0.accepted ? "1" : "0" },
            productId: subscription.productId,
            promotionalOfferId: offer?.type == .promotional ? offer?.identifier : nil,
            priceIncreaseStatus: subscription.priceIncrease.map { $0.status == .accepted ? "1" : "0" })
    }
}

/// `POST /verifyReceipt` (production) and `POST /sandbox/verifyReceipt` (sandbox): the legacy
/// receipt validation endpoint, answered from the simulated App Store (see
/// ``AppStoreSimulation/verifyReceipt(receiptData:password:excludeOldTransactions:endpoint:)``).
/// A body that is not the documented JSON answers status 21000.
struct VerifyReceiptRoutes {
    let appStore: AppStoreSimulation

    struct Body: Decodable {
        var receiptData: String
        var password: String?
        var excludeOldTransactions: Bool?

        enum CodingKeys: String, CodingKey {
            case receiptData = "receipt-data"
            case password
            case excludeOldTransactions = "exclude-old-transactions"
        }
    }

    func register(on group: RouterGroup<BasicRequestContext>) {
        group.post("verifyReceipt") { request, _ in await answer(request, endpoint: .production) }
        group.post("sandbox/verifyReceipt") { request, _ in await answer(request, endpoint: .sandbox) }
    }

    private func answer(_ request: Request, endpoint: AppStoreServer.Environment) async -> Response {
        var response = VerifyReceiptResponse(status: .unreadableRequest)
        if let buffer = try? await request.body.collect(upTo: 4 << 20),
            let body = try? JSONDecoder().decode(Body.self, from: Data(buffer.readableBytesView))
        {
            response = appStore.verifyReceipt(
                receiptData: body.receiptData, password: body.password,
                excludeOldTransactions: body.excludeOldTransactions ?? false, endpoint: endpoint)
        }
        guard let data = try? JSONEncoder().encode(response) else { return Response(status: .internalServerError) }
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: Array(data))))
    }
}
