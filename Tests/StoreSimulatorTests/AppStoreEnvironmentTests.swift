import AppStoreServer
import Crypto
import Foundation
import StoreSimulator
import Testing

/// Two apps, each sold in Sandbox and in Production at once: `com.example.alpha` (default
/// environment Production) and `com.example.beta` (default Sandbox), each with a notification
/// receiver per environment, and the project's own API client pointed at each API host.
struct EnvironmentHarness {
    static let alpha = "com.example.alpha"
    static let beta = "com.example.beta"
    static let appAppleIds = [alpha: Int64(1_111_111_111), beta: Int64(2_222_222_222)]
    static let day: TimeInterval = 86_400

    let simulator: StoreSimulator
    let endpoints: StoreSimulator.Endpoints
    /// By bundle id, then environment.
    let receivers: [String: [Environment: NotificationReceiver]]
    let roots: TrustedRoots
    var appStore: AppStoreSimulation { simulator.appStore }

    func receiver(_ bundleId: String, _ environment: Environment) throws -> NotificationReceiver {
        try #require(receivers[bundleId]?[environment])
    }

    /// A verifier of `bundleId`'s payloads of `environment` (it refuses the other environment's).
    func verifier(_ bundleId: String, _ environment: Environment) throws -> SignedDataVerifier {
        try SignedDataVerifier(
            configuration: .init(
                trustedRoots: roots, bundleId: bundleId, appAppleId: Self.appAppleIds[bundleId],
                environment: environment),
            clock: simulator.clock)
    }

    /// The project's API client for `bundleId` at `baseURL`, verifying payloads of `environment`.
    func client(_ bundleId: String, baseURL: String, verifying environment: Environment) throws
        -> AppStoreServerAPIClient
    {
        let privateKey = P256.Signing.PrivateKey()
        let keyId = String(UUID().uuidString.prefix(10))  // one key per client
        appStore.registerAPIKey(keyId: keyId, publicKey: privateKey.publicKey)
        let tokens = try AppStoreServerAPITokenProvider(
            key: AppStoreSigningKey(pemRepresentation: privateKey.pemRepresentation, keyId: keyId),
            issuerId: "57246542-96fe-1a63-e053-0824d011072a", bundleId: bundleId, clock: simulator.clock)
        return AppStoreServerAPIClient(
            configuration: .init(baseURL: baseURL, retryPolicy: .never), authorization: tokens,
            verifier: try verifier(bundleId, environment))
    }

    /// Clients of `bundleId` on the Production host and on the Sandbox host.
    func clients(_ bundleId: String) throws -> (production: AppStoreServerAPIClient, sandbox: AppStoreServerAPIClient) {
        (
            try client(bundleId, baseURL: endpoints.productionBaseURL, verifying: .production),
            try client(bundleId, baseURL: endpoints.sandboxBaseURL, verifying: .sandbox)
        )
    }

    /// Waits for deliveries and verifies what `bundleId`'s receiver of `environment` got after its
    /// first `index` payloads, with that environment's verifier.
    func received(_ bundleId: String, _ environment: Environment, from index: Int = 0) async throws
        -> [VerifiedNotification]
    {
        try await appStore.deliveriesSettled()
        let verifier = try verifier(bundleId, environment)
        var result: [VerifiedNotification] = []
        for payload in try receiver(bundleId, environment).received.dropFirst(index) {
            result.append(try await verifier.verifyNotification(payload))
        }
        return result
    }

    /// The simulated clock stands still at the real time (whole seconds), so API tokens are valid
    /// whichever clock judges them.
    static func run(_ body: (EnvironmentHarness) async throws -> Void) async throws {
        var receivers: [String: [Environment: NotificationReceiver]] = [:]
        for bundleId in [alpha, beta] {
            for environment in [Environment.production, .sandbox] {
                let receiver = NotificationReceiver()
                try await receiver.start()
                receivers[bundleId, default: [:]][environment] = receiver
            }
        }
        let start = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        do {
            try await StoreSimulator.withRunning(configuration: .init(start: start, rate: 0)) { simulator, endpoints in
                let appStore = simulator.appStore
                appStore.addApp(
                    SimulatedApp(
                        bundleId: alpha, appAppleId: appAppleIds[alpha] ?? 0, environment: .production,
                        gracePeriodDays: 16))
                appStore.addApp(
                    SimulatedApp(bundleId: beta, appAppleId: appAppleIds[beta] ?? 0, environment: .sandbox))
                for bundleId in [alpha, beta] {
                    try appStore.addProduct(
                        .autoRenewable(
                            bundleId + ".monthly", bundleId: bundleId, group: "pro", level: 1, period: "P1M",
                            price: 4_990))
                    try appStore.addProduct(
                        .oneTime(bundleId + ".coins", bundleId: bundleId, kind: .consumable, price: 990))
                }
                let harness = EnvironmentHarness(
                    simulator: simulator, endpoints: endpoints, receivers: receivers,
                    roots: try TrustedRoots(appleRootFiles: [], allowedRootFiles: [endpoints.rootCertificatePath]))
                // Alpha's URLs through the Swift API, beta's through the control route.
                try appStore.setNotificationURL(
                    try harness.receiver(alpha, .production).url, bundleId: alpha, environment: .production)
                try appStore.setNotificationURL(
                    try harness.receiver(alpha, .sandbox).url, bundleId: alpha, environment: .sandbox)
                for environment in [Environment.production, .sandbox] {
                    let url = try harness.receiver(beta, environment).url
                    let answer = try await loopbackRequest(
                        .POST, endpoints.controlURL + "/appstore/apps/\(beta)/notification-url",
                        json: #"{"url": "\#(url)", "environment": "\#(environment)"}"#)
                    #expect(answer.status == 200)
                }
                try await body(harness)
            }
        } catch {
            for receiver in receivers.values.flatMap(\.values) { await receiver.stop() }
            throw error
        }
        for receiver in receivers.values.flatMap(\.values) { await receiver.stop() }
    }
}

@Suite struct AppStoreEnvironmentTests {
    /// Two apps × two environments at once: each purchase's notifications go to its app's URL of
    /// its environment and carry that environment everywhere, renewals and refunds included.
    @Test func twoAppsTwoEnvironmentsDeliverApart() async throws {
        try await EnvironmentHarness.run { h in
            let alpha = EnvironmentHarness.alpha
            let beta = EnvironmentHarness.beta
            // The same customer subscribes in both environments: two subscriptions, not a conflict.
            let alphaLive = try h.appStore.purchase(customer: "ann", product: alpha + ".monthly")
            let alphaTest = try h.appStore.purchase(
                customer: "ann", product: alpha + ".monthly", environment: .sandbox)
            #expect(alphaLive.environment == .production)  // alpha's default
            #expect(alphaTest.environment == .sandbox)
            #expect(alphaLive.originalTransactionId != alphaTest.originalTransactionId)
            let betaDefault = try await loopbackRequest(
                .POST, h.endpoints.controlURL + "/appstore/purchases",
                json: #"{"customerId": "ann", "productId": "\#(beta).monthly"}"#)
            let betaLive = try await loopbackRequest(
                .POST, h.endpoints.controlURL + "/appstore/purchases",
                json: #"{"customerId": "ann", "productId": "\#(beta).monthly", "environment": "Production"}"#)
            #expect(betaDefault.status == 200 && betaLive.status == 200)
            #expect(betaDefault.body["environment"] as? String == "Sandbox")  // beta's default
            #expect(betaLive.body["environment"] as? String == "Production")
            let betaTestId = try #require(betaDefault.body["originalTransactionId"] as? String)
            let betaLiveId = try #require(betaLive.body["originalTransactionId"] as? String)

            let expected = [
                (alpha, Environment.production, alphaLive.originalTransactionId),
                (alpha, .sandbox, alphaTest.originalTransactionId),
                (beta, .production, betaLiveId),
                (beta, .sandbox, betaTestId),
            ]
            for (bundleId, environment, originalTransactionId) in expected {
                let received = try await h.received(bundleId, environment)
                #expect(received.count == 1, "\(bundleId) \(environment)")
                let notification = try #require(received.first)
                #expect(notification.payload.notificationType == .subscribed)
                #expect(notification.payload.data?.environment == environment)
                #expect(notification.payload.data?.bundleId == bundleId)
                #expect(notification.transaction?.environment == environment)
                #expect(notification.transaction?.originalTransactionId == originalTransactionId)
                #expect(notification.renewalInfo?.environment == environment)
                #expect(h.appStore.subscription(originalTransactionId)?.environment == environment)
            }
            // The other environment's verifier refuses the payload: they really are apart.
            let sandboxPayload = try #require(try h.receiver(alpha, .sandbox).received.first)
            await #expect(throws: (any Error).self) {
                _ = try await h.verifier(alpha, .production).verifyNotification(sandboxPayload)
            }

            // Renewals and a refund stay in the purchase's environment.
            try h.appStore.advance(by: 32 * EnvironmentHarness.day)
            let renewed = try await h.received(alpha, .sandbox, from: 1)
            #expect(renewed.map(\.payload.notificationType) == [.didRenew])
            #expect(renewed.first?.transaction?.environment == .sandbox)
            let renewal = try #require(renewed.first?.transaction?.transactionId)
            try h.appStore.refund(transactionId: renewal)
            let refunded = try await h.received(alpha, .sandbox, from: 2)
            #expect(refunded.map(\.payload.notificationType) == [.refund])
            #expect(refunded.first?.payload.data?.environment == .sandbox)
            #expect(try await h.received(alpha, .production, from: 1).map(\.payload.notificationType) == [.didRenew])
            #expect(try await h.received(beta, .production, from: 1).map(\.payload.notificationType) == [.didRenew])
            #expect(try await h.received(beta, .sandbox, from: 1).map(\.payload.notificationType) == [.didRenew])

            // The control API shows each one's environment.
            let snapshot = try await loopbackRequest(
                .GET, h.endpoints.controlURL + "/appstore/subscriptions/\(alphaTest.originalTransactionId)")
            #expect(snapshot.body["environment"] as? String == "Sandbox")
            #expect(snapshot.body["bundleId"] as? String == alpha)
            let listed = try await loopbackRequest(.GET, h.endpoints.controlURL + "/appstore/notifications")
            let items = try #require(listed.body["notifications"] as? [[String: Any]])
            #expect(items.count == 9)
            #expect(items.compactMap { $0["environment"] as? String }.filter { $0 == "Sandbox" }.count == 5)
            let environments = h.appStore.notifications.map { "\($0.bundleId) \($0.environment)" }
            #expect(Set(environments).count == 4)
            // A purchase's environment must be one of the two.
            let refused = try await loopbackRequest(
                .POST, h.endpoints.controlURL + "/appstore/purchases",
                json: #"{"customerId": "ann", "productId": "\#(alpha).coins", "environment": "Xcode"}"#)
            #expect(refused.status == 400)
        }
    }

    /// Each API host answers only for its own environment: the other one's purchases are unknown
    /// there (404 with Apple's error code); the base URL serves each app's default environment.
    @Test func eachAPIHostAnswersOnlyForItsEnvironment() async throws {
        try await EnvironmentHarness.run { h in
            let alpha = EnvironmentHarness.alpha
            let live = try h.appStore.purchase(customer: "bo", product: alpha + ".monthly", environment: .production)
            let liveCoins = try h.appStore.purchase(customer: "bo", product: alpha + ".coins")
            let test = try h.appStore.purchase(customer: "bo", product: alpha + ".monthly", environment: .sandbox)
            let testCoins = try h.appStore.purchase(
                customer: "bo", product: alpha + ".coins", environment: .sandbox)
            try h.appStore.refund(transactionId: liveCoins.transactionId)
            try h.appStore.refund(transactionId: testCoins.transactionId)
            let (production, sandbox) = try h.clients(alpha)

            let liveInfo = try await production.getTransactionInfo(transactionId: live.transactionId)
            #expect(liveInfo.environment == .production)
            let testInfo = try await sandbox.getTransactionInfo(transactionId: test.transactionId)
            #expect(testInfo.environment == .sandbox)
            try await expectNotFound(.transactionIdNotFound) {
                _ = try await production.getTransactionInfo(transactionId: test.transactionId)
            }
            try await expectNotFound(.transactionIdNotFound) {
                _ = try await sandbox.getTransactionInfo(transactionId: live.transactionId)
            }

            // History, statuses and refund history hold only the host's environment.
            var liveHistory: [String] = []
            for try await transaction in production.transactionHistory(transactionId: live.transactionId) {
                liveHistory.append(transaction.transactionId ?? "")
            }
            #expect(liveHistory == [live.transactionId, liveCoins.transactionId])
            var testHistory: [String] = []
            for try await transaction in sandbox.transactionHistory(transactionId: testCoins.transactionId) {
                testHistory.append(transaction.transactionId ?? "")
            }
            #expect(testHistory == [test.transactionId, testCoins.transactionId])
            let statuses = try await sandbox.getAllSubscriptionStatuses(transactionId: test.transactionId)
            #expect(statuses.flatMap(\.subscriptions).map(\.originalTransactionId) == [test.originalTransactionId])
            #expect(statuses.first?.subscriptions.first?.renewalInfo?.environment == .sandbox)
            try await expectNotFound(.transactionIdNotFound) {
                _ = try await production.getAllSubscriptionStatuses(transactionId: test.transactionId)
            }
            var refunds: [String] = []
            for try await transaction in production.refundHistory(transactionId: live.transactionId) {
                refunds.append(transaction.transactionId ?? "")
            }
            #expect(refunds == [liveCoins.transactionId])
            try await expectNotFound(.transactionIdNotFound) {
                _ = try await sandbox.getRefundHistory(transactionId: live.transactionId)
            }

            // App transactions are per environment.
            let liveApp = try await production.getAppTransactionInfo(transactionId: live.transactionId)
            let testApp = try await sandbox.getAppTransactionInfo(transactionId: test.transactionId)
            #expect(liveApp.receiptType == .production && testApp.receiptType == .sandbox)
            #expect(liveApp.appTransactionId != testApp.appTransactionId)
            #expect(liveInfo.appTransactionId == liveApp.appTransactionId)

            // Answers to the App Store and extensions: the other environment's ids are unknown.
            let consumption = ConsumptionRequest(
                customerConsented: true, deliveryStatus: .delivered, sampleContentProvided: false)
            try await sandbox.sendConsumptionInformation(transactionId: testCoins.transactionId, consumption)
            try await expectNotFound(.transactionIdNotFound) {
                try await production.sendConsumptionInformation(transactionId: testCoins.transactionId, consumption)
            }
            try await expectNotFound(.transactionIdNotFound) {
                try await sandbox.setAppAccountToken(
                    originalTransactionId: live.originalTransactionId, appAccountToken: UUID())
            }
            try await expectNotFound(.transactionIdNotFound) {
                try await production.finishTransaction(transactionId: test.transactionId)
            }
            let extend = ExtendRenewalDateRequest(
                extendByDays: 3, extendReasonCode: .customerSatisfaction, requestIdentifier: "extend-1")
            try await expectNotFound(.originalTransactionIdNotFound) {
                _ = try await sandbox.extendSubscriptionRenewalDate(
                    originalTransactionId: live.originalTransactionId, extend)
            }
            let extended = try await production.extendSubscriptionRenewalDate(
                originalTransactionId: live.originalTransactionId, extend)
            #expect(extended.success == true)
            let renewalExtended = try await h.received(alpha, .production, from: 3)
            #expect(renewalExtended.map(\.payload.notificationType) == [.renewalExtended])
            #expect(renewalExtended.first?.payload.data?.environment == .production)
            #expect(try await h.received(alpha, .sandbox, from: 3).isEmpty)

            let order = AppStoreSimulation.orderId(forTransactionId: test.transactionId)
            #expect(try await sandbox.lookUpOrderId(order).status == .valid)
            #expect(try await production.lookUpOrderId(order).status == .invalid)

            // The base URL serves each app's default environment: Production for alpha, Sandbox for beta.
            let root = try h.client(alpha, baseURL: h.endpoints.baseURL, verifying: .production)
            #expect(try await root.getTransactionInfo(transactionId: live.transactionId).environment == .production)
            try await expectNotFound(.transactionIdNotFound) {
                _ = try await root.getTransactionInfo(transactionId: test.transactionId)
            }
            let beta = EnvironmentHarness.beta
            let betaTest = try h.appStore.purchase(customer: "bo", product: beta + ".coins")
            let betaRoot = try h.client(beta, baseURL: h.endpoints.baseURL, verifying: .sandbox)
            #expect(
                try await betaRoot.getTransactionInfo(transactionId: betaTest.transactionId).environment == .sandbox)
            // Another app's transaction is unknown too, whichever host.
            try await expectNotFound(.transactionIdNotFound) {
                _ = try await betaRoot.getTransactionInfo(transactionId: test.transactionId)
            }

            let endpoints = try await loopbackRequest(.GET, h.endpoints.controlURL + "/endpoints")
            #expect(endpoints.body["sandboxBaseURL"] as? String == h.endpoints.baseURL + "/sandbox")
            #expect(endpoints.body["productionBaseURL"] as? String == h.endpoints.baseURL + "/production")
        }
    }

    /// Notification history and test notifications are per environment: a Sandbox host's TEST goes
    /// to the Sandbox URL as a Sandbox notification.
    @Test func notificationHistoryAndTestNotificationsPerEnvironment() async throws {
        try await EnvironmentHarness.run { h in
            let alpha = EnvironmentHarness.alpha
            let start = h.simulator.clock.now()
            let live = try h.appStore.purchase(customer: "cy", product: alpha + ".monthly")
            let test = try h.appStore.purchase(customer: "cy", product: alpha + ".coins", environment: .sandbox)
            try await h.appStore.deliveriesSettled()
            let (production, sandbox) = try h.clients(alpha)
            let window = NotificationHistoryRequest(startDate: start, endDate: start.addingTimeInterval(1))

            var liveHistory: [NotificationHistoryPage.Entry] = []
            for try await entry in production.notificationHistory(window) { liveHistory.append(entry) }
            #expect(liveHistory.map(\.notification.payload.notificationType) == [.subscribed])
            #expect(liveHistory.first?.notification.payload.data?.environment == .production)
            #expect(liveHistory.first?.notification.transaction?.transactionId == live.transactionId)
            var testHistory: [NotificationHistoryPage.Entry] = []
            for try await entry in sandbox.notificationHistory(window) { testHistory.append(entry) }
            #expect(testHistory.map(\.notification.payload.notificationType) == [.oneTimeCharge])
            #expect(testHistory.first?.notification.transaction?.transactionId == test.transactionId)
            var filtered = window
            filtered.transactionId = test.transactionId
            try await expectNotFound(.transactionIdNotFound) {
                _ = try await production.getNotificationHistory(filtered)
            }

            let token = try await sandbox.requestTestNotification()
            let received = try await h.received(alpha, .sandbox, from: 1)
            #expect(received.map(\.payload.notificationType) == [.test])
            #expect(received.first?.payload.data?.environment == .sandbox)
            #expect(try h.receiver(alpha, .production).received.count == 1)
            let status = try await sandbox.getTestNotificationStatus(token: token)
            #expect(status.notification.payload.data?.environment == .sandbox)
            #expect(status.sendAttempts.map(\.sendAttemptResult) == [.success])
            try await expectNotFound(.testNotificationNotFound) {
                _ = try await production.getTestNotificationStatus(token: token)
            }
            #expect(h.appStore.notifications.last?.environment == .sandbox)
        }
    }

    /// A mass extension asked of the Sandbox host extends Sandbox subscriptions only, and its
    /// SUMMARY goes to the Sandbox URL with `environment` Sandbox.
    @Test func sandboxMassExtensionSummaryGoesToTheSandboxURL() async throws {
        try await EnvironmentHarness.run { h in
            let alpha = EnvironmentHarness.alpha
            let product = alpha + ".monthly"
            let live = try h.appStore.purchase(customer: "di", product: product)
            let test = try h.appStore.purchase(customer: "di", product: product, environment: .sandbox)
            let otherTest = try h.appStore.purchase(customer: "ed", product: product, environment: .sandbox)
            try await h.appStore.deliveriesSettled()
            let liveExpiry = try #require(h.appStore.subscription(live.originalTransactionId)?.expiresDate)
            let testExpiry = try #require(h.appStore.subscription(test.originalTransactionId)?.expiresDate)
            let (production, sandbox) = try h.clients(alpha)

            let request = MassExtendRenewalDateRequest(
                extendByDays: 5, extendReasonCode: .serviceIssueOrOutage, requestIdentifier: "outage-1",
                productId: product)
            _ = try await sandbox.extendRenewalDateForAllActiveSubscribers(request)
            // Each extended subscription's RENEWAL_EXTENDED, then the SUMMARY.
            let sent = try await h.received(alpha, .sandbox, from: 2)
            #expect(sent.map(\.payload.notificationType) == [.renewalExtended, .renewalExtended, .renewalExtension])
            let summary = sent.filter { $0.payload.subtype == .summary }
            #expect(summary.first?.payload.subtype == .summary)
            #expect(summary.first?.payload.summary?.environment == .sandbox)
            #expect(summary.first?.payload.summary?.succeededCount == 2)
            #expect(try h.receiver(alpha, .production).received.count == 1)
            #expect(h.appStore.subscription(test.originalTransactionId)?.expiresDate == testExpiry + 5 * 86_400)
            #expect(h.appStore.subscription(otherTest.originalTransactionId)?.expiresDate == testExpiry + 5 * 86_400)
            #expect(h.appStore.subscription(live.originalTransactionId)?.expiresDate == liveExpiry)

            let status = try await sandbox.getStatusOfSubscriptionRenewalDateExtensions(
                productId: product, requestIdentifier: "outage-1")
            #expect(status.complete == true && status.succeededCount == 2)
            try await expectNotFound(.statusRequestNotFound) {
                _ = try await production.getStatusOfSubscriptionRenewalDateExtensions(
                    productId: product, requestIdentifier: "outage-1")
            }
            // The same request identifier is a new request in Production.
            _ = try await production.extendRenewalDateForAllActiveSubscribers(request)
            let liveSummary = try await h.received(alpha, .production, from: 1).filter {
                $0.payload.subtype == .summary
            }
            #expect(liveSummary.first?.payload.summary?.environment == .production)
            #expect(liveSummary.first?.payload.summary?.succeededCount == 1)
            #expect(h.appStore.subscription(live.originalTransactionId)?.expiresDate == liveExpiry + 5 * 86_400)
        }
    }

    /// Without any environment argument nothing changes: purchases are in the app's environment and
    /// `setNotificationURL` sets both environments' URL; app receipts are per environment.
    @Test func defaultsAndReceiptsPerEnvironment() async throws {
        try await EnvironmentHarness.run { h in
            let beta = EnvironmentHarness.beta
            let receiver = try h.receiver(beta, .production)
            try h.appStore.setNotificationURL(receiver.url, bundleId: beta)
            let test = try h.appStore.purchase(customer: "fay", product: beta + ".coins")
            let live = try h.appStore.purchase(customer: "fay", product: beta + ".coins", environment: .production)
            try await h.appStore.deliveriesSettled()
            #expect(receiver.received.count == 2)
            #expect(try h.receiver(beta, .sandbox).received.isEmpty)
            #expect(h.appStore.transaction(test.transactionId)?.environment == .sandbox)
            #expect(h.appStore.transaction(live.transactionId)?.environment == .production)

            let sandboxReceipt = try AppReceipt(
                bytes: Array(try h.appStore.makeAppReceipt(customer: "fay", bundleId: beta)))
            #expect(sandboxReceipt.receiptType == "ProductionSandbox")
            #expect(sandboxReceipt.inAppPurchases.compactMap(\.transactionId) == [test.transactionId])
            let answer = try await loopbackRequest(
                .POST, h.endpoints.controlURL + "/appstore/receipts",
                json: #"{"customerId": "fay", "bundleId": "\#(beta)", "environment": "Production"}"#)
            let base64 = try #require(answer.body["receiptData"] as? String)
            let liveReceipt = try AppReceipt(base64: base64)
            #expect(liveReceipt.receiptType == "Production")
            #expect(liveReceipt.inAppPurchases.compactMap(\.transactionId) == [live.transactionId])
            let verified = h.appStore.verifyReceipt(
                receiptData: base64, password: nil, excludeOldTransactions: false, endpoint: .production)
            #expect(verified.environment == .production)
            #expect(verified.receipt?.inApp?.compactMap(\.transactionId) == [live.transactionId])
        }
    }

    func expectNotFound(
        _ code: APIErrorCode, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void
    ) async throws {
        do {
            try await body()
            Issue.record("expected 404 \(code.rawValue)", sourceLocation: sourceLocation)
        } catch let error as AppStoreServerAPIError {
            #expect(error.httpStatus == 404, sourceLocation: sourceLocation)
            #expect(error.code == code, sourceLocation: sourceLocation)
        }
    }
}
