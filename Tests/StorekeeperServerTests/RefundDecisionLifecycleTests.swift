import AppStoreServer
import Foundation
import Logging
import NIOHTTP1
import StoreSimulator
import Storekeeper
import StorekeeperDemo
import StorekeeperServer
import StorekeeperStorage
import Testing

/// Refund decisions end to end (issue 14): the simulator's `CONSUMPTION_REQUEST` → the outbox →
/// Send Consumption Information V2 computed from what the server knows → the simulated App
/// Store's decision → `REFUND` / `REFUND_DECLINED` → exactly what was refunded taken back. And
/// refunds themselves: each revocation type on each product type, older renewals, reversals,
/// Google voids of one order.
@Suite(.serialized) struct RefundDecisionLifecycleTests {
    static let hour: TimeInterval = 3600
    /// Send Consumption Information in the simulator's Sandbox, where the harness's purchases are.
    static let consumptionPath = "/sandbox/inApps/v2/transactions/consumption/"

    // MARK: Helpers

    func consent(_ h: ServerHarness, _ id: String, _ value: String) async throws -> Int {
        try await h.request(.PUT, "/v1/customers/\(id)", json: #"{"consumptionConsent": \#(value)}"#).status
    }

    func refundRequests(_ h: ServerHarness, _ id: String) async throws -> [[String: Any]] {
        let (status, body) = try await h.request(.GET, "/v1/customers/\(id)/refund-requests")
        #expect(status == 200)
        return body["refundRequests"] as? [[String: Any]] ?? []
    }

    func errorCode(_ response: (status: Int, body: [String: Any])) -> String? {
        (response.body["error"] as? [String: Any])?["code"] as? String
    }

    func metric(_ h: ServerHarness, status: String) async throws -> Int {
        let lines = try await h.text("/metrics").split(separator: "\n")
        return lines.filter { $0.hasPrefix("storekeeper_refund_requests_total") && $0.contains("status=\"\(status)\"") }
            .compactMap { Int($0.split(separator: " ").last ?? "") }.reduce(0, +)
    }

    /// A consenting customer's coin pack, and the refund request Apple sent about it: stored, not answered.
    func refundRequested(_ h: ServerHarness, _ customer: String) async throws -> AppStoreSimulation.PurchaseResult {
        let token = try await h.createCustomer(customer)
        _ = try await consent(h, customer, "true")
        let coins = try h.simulator.appStore.purchase(customer: customer, product: "coins.100", appAccountToken: token)
        try await h.settle()
        try h.simulator.appStore.requestRefund(transactionId: coins.transactionId)
        try await h.settle()
        return coins
    }

    static func withPolicy(_ policy: RefundPolicy)
        -> @Sendable (StoreSimulator, inout StorekeeperConfiguration)
        throws -> Void
    {
        { _, configuration in configuration.apps[0].appStore?.refundPolicy = policy }
    }

    // MARK: The consumption answer

    @Test(arguments: StorageBackend.available)
    func aMostlySpentCoinPackIsAnsweredFromTheLedgerAndDeclined(_ backend: StorageBackend) async throws {
        try await ServerHarness.run(on: backend) { h in
            let token = try await h.createCustomer("ada")
            #expect(try await consent(h, "ada", "true") == 200)
            let coins = try h.simulator.appStore.purchase(customer: "ada", product: "coins.100", appAccountToken: token)
            try await h.settle()
            let debit = #"{"amount": 70, "idempotencyKey": "spend-1"}"#
            #expect(try await h.request(.POST, "/v1/customers/ada/balances/coins/debits", json: debit).status == 200)

            try h.simulator.appStore.requestRefund(transactionId: coins.transactionId, reason: .unsatisfiedWithPurchase)
            try await h.settle()
            var requests = try await refundRequests(h, "ada")
            #expect(requests.count == 1)
            #expect(requests.first?["status"] as? String == "pending")
            #expect(requests.first?["reason"] as? String == "UNSATISFIED_WITH_PURCHASE")

            #expect(try await h.answerRefundRequests() == 1)
            let answers = h.simulator.appStore.consumptionAnswers(transactionId: coins.transactionId)
            #expect(answers.count == 1)
            let sent = try #require(answers.first?.request)
            #expect(sent.customerConsented)
            #expect(sent.deliveryStatus == .delivered)
            #expect(sent.consumptionPercentage == 70_000)
            // The demo policy: decline above 50 % consumed.
            #expect(sent.refundPreference == .decline)
            #expect(sent.sampleContentProvided == false)
            #expect(answers.first?.decision == .decline)

            requests = try await refundRequests(h, "ada")
            #expect(requests.first?["status"] as? String == "sent")
            let shown = try #require(requests.first?["sent"] as? [String: Any])
            #expect(shown["consumptionPercentage"] as? Int == 70_000)
            #expect(shown["refundPreference"] as? String == "DECLINE")
            #expect(shown["deliveryStatus"] as? String == "DELIVERED")
            // REFUND_DECLINED took nothing.
            #expect(try await h.balances("ada")["coins"] == 30)
            #expect(h.simulator.appStore.notifications.contains { $0.payload.notificationType == .refundDeclined })
            #expect(try await metric(h, status: "sent") == 1)
            // The outcome's event, written with it.
            let feed = try await h.request(.GET, "/v1/events?customer=ada&type=refund_request.settled")
            let events = feed.body["events"] as? [[String: Any]] ?? []
            #expect(events.count == 1, "\(feed.body)")
            let details = (events.first?["event"] as? [String: Any])?["details"] as? [String: Any]
            #expect(details?["refundRequestStatus"] as? String == "sent")
            #expect((details?["consumptionAnswer"] as? [String: Any])?["refundPreference"] as? String == "DECLINE")
            // Answered once: another run finds nothing due.
            #expect(try await h.answerRefundRequests() == 0)
        }
    }

    @Test(arguments: StorageBackend.available)
    func withoutConsentNothingIsSentAndTheOutcomeIsRecorded(_ backend: StorageBackend) async throws {
        try await ServerHarness.run(on: backend) { h in
            let unknown = try await h.createCustomer("bea")
            let declined = try await h.createCustomer("cid")
            #expect(try await consent(h, "cid", "false") == 200)
            let first = try h.simulator.appStore.purchase(
                customer: "bea", product: "coins.100", appAccountToken: unknown)
            let second = try h.simulator.appStore.purchase(
                customer: "cid", product: "coins.100", appAccountToken: declined)
            try await h.settle()
            try h.simulator.appStore.requestRefund(transactionId: first.transactionId)
            try h.simulator.appStore.requestRefund(transactionId: second.transactionId)
            try await h.settle()
            #expect(try await h.answerRefundRequests() == 2)
            #expect(h.simulator.appStore.consumptionAnswers(transactionId: first.transactionId).isEmpty)
            #expect(h.simulator.appStore.consumptionAnswers(transactionId: second.transactionId).isEmpty)
            #expect(try await refundRequests(h, "bea").first?["status"] as? String == "skipped")
            #expect(try await refundRequests(h, "bea").first?["skipReason"] as? String == "no-consent")
            #expect(try await refundRequests(h, "cid").first?["skipReason"] as? String == "consent-declined")
            #expect(try await metric(h, status: "skipped") == 2)
            // The view shows the consent, and null makes it unknown again.
            let view = try await h.request(.GET, "/v1/customers/cid")
            #expect((view.body["consumptionConsent"] as? [String: Any])?["consented"] as? Bool == false)
            #expect(try await consent(h, "cid", "null") == 200)
            #expect(try await h.request(.GET, "/v1/customers/cid").body["consumptionConsent"] == nil)
        }
    }

    /// One policy per run: what the server prefers for a lifetime unlock the app reports 30 % used,
    /// and what the simulated App Store then does to the entitlement (its catalog rule revokes the
    /// unlock once half or more of it is refunded).
    @Test(arguments: [
        (
            RefundPolicy(preference: .byConsumedShare(declineAbovePercent: 50, otherwise: .grantProrated)),
            "GRANT_PRORATED", false
        ),
        (RefundPolicy(preference: .fixed(.grantFull)), "GRANT_FULL", false),
        (RefundPolicy(preference: .fixed(.decline)), "DECLINE", true),
        (RefundPolicy(preference: .noPreference, sampleContentProvided: true), nil, false),
    ])
    func eachPolicyChoosesThePreference(policy: RefundPolicy, expected: String?, keepsAccess: Bool) async throws {
        for backend in StorageBackend.available {
            try await ServerHarness.run(on: backend, customize: Self.withPolicy(policy)) { h in
                let token = try await h.createCustomer("dan")
                _ = try await consent(h, "dan", "true")
                let unlock = try h.simulator.appStore.purchase(
                    customer: "dan", product: "lifetime.unlock", appAccountToken: token)
                try await h.settle()
                let usage = try await h.request(
                    .PUT, "/v1/customers/dan/purchases/app-store/\(unlock.originalTransactionId)/usage",
                    json: #"{"consumedPercent": 30}"#)
                #expect(usage.status == 200)
                try h.simulator.appStore.requestRefund(transactionId: unlock.transactionId)
                try await h.settle()
                try await h.answerRefundRequests()
                let sent = try #require(
                    h.simulator.appStore.consumptionAnswers(transactionId: unlock.transactionId).first)
                #expect(sent.request.refundPreference?.rawValue == expected, "\(backend)")
                #expect(sent.request.consumptionPercentage == 30_000)
                #expect(sent.request.sampleContentProvided == policy.sampleContentProvided)
                // GRANT_PRORATED: 70 % refunded (REFUND_PRORATED) takes the unlock; a decline keeps it.
                #expect(try await h.entitlements("dan")["lifetime"]?.active == keepsAccess, "\(backend) \(policy)")
                if expected == "GRANT_PRORATED" {
                    let transaction = try #require(h.simulator.appStore.transaction(unlock.transactionId))
                    #expect(transaction.revocationType == .refundProrated)
                    #expect(transaction.revocationPercentage == 70_000)
                }
            }
        }
    }

    @Test(arguments: StorageBackend.available)
    func answeringTurnedOffSendsNothing(_ backend: StorageBackend) async throws {
        try await ServerHarness.run(on: backend, customize: Self.withPolicy(RefundPolicy(answer: false))) { h in
            let token = try await h.createCustomer("eve")
            _ = try await consent(h, "eve", "true")
            let sub = try h.simulator.appStore.purchase(customer: "eve", product: "pro.monthly", appAccountToken: token)
            try await h.settle()
            try h.simulator.appStore.requestRefund(transactionId: sub.transactionId)
            try await h.settle()
            try await h.answerRefundRequests()
            #expect(h.simulator.appStore.consumptionAnswers(transactionId: sub.transactionId).isEmpty)
            #expect(try await refundRequests(h, "eve").first?["skipReason"] as? String == "answering-off")
        }
    }

    @Test(arguments: StorageBackend.available)
    func aSubscriptionIsAnsweredWithoutAPercentageAndAnUndeliveredPurchaseWithZero(_ backend: StorageBackend)
        async throws
    {
        let policy = RefundPolicy(preference: .fixed(.grantProrated))
        try await ServerHarness.run(on: backend, customize: Self.withPolicy(policy)) { h in
            let token = try await h.createCustomer("fay")
            _ = try await consent(h, "fay", "true")
            let sub = try h.simulator.appStore.purchase(customer: "fay", product: "pro.monthly", appAccountToken: token)
            let pass = try h.simulator.appStore.purchase(
                customer: "fay", product: "pass.season", appAccountToken: token)
            try await h.settle()
            let problem = try await h.request(
                .PUT, "/v1/customers/fay/purchases/app-store/\(pass.originalTransactionId)/usage",
                json: #"{"consumedPercent": 80, "deliveryProblem": "UNDELIVERED_QUALITY_ISSUE"}"#)
            #expect(problem.status == 200)
            try await h.advance(days: 10)
            try h.simulator.appStore.requestRefund(transactionId: sub.transactionId)
            try h.simulator.appStore.requestRefund(transactionId: pass.transactionId)
            try await h.settle()
            try await h.answerRefundRequests()
            let forSub = try #require(h.simulator.appStore.consumptionAnswers(transactionId: sub.transactionId).first)
            #expect(forSub.request.consumptionPercentage == nil)
            #expect(forSub.request.refundPreference == .grantProrated)
            #expect(forSub.request.deliveryStatus == .delivered)
            // Prorated by the period not elapsed: 10 of about 31 days used; the subscription is
            // revoked (a prorated refund of a subscription counts as a full refund of its transaction).
            guard case .refund(let share)? = forSub.decision else {
                Issue.record("expected a refund, got \(String(describing: forSub.decision))")
                return
            }
            #expect(share > 60_000 && share < 75_000)
            #expect(try await h.entitlements("fay")["pro"]?.state == "revoked")
            let forPass = try #require(h.simulator.appStore.consumptionAnswers(transactionId: pass.transactionId).first)
            #expect(forPass.request.deliveryStatus == .undeliveredQualityIssue)
            #expect(forPass.request.consumptionPercentage == 0)
            // Prorated needs a share above 0: not delivered, the server prefers a full refund.
            #expect(forPass.request.refundPreference == .grantFull)
            #expect(try await h.entitlements("fay")["season"]?.active == false)
        }
    }

    // MARK: The outbox

    @Test(arguments: StorageBackend.available)
    func aRestartBetweenRequestAndAnswerSendsItOnce(_ backend: StorageBackend) async throws {
        try await ServerHarness.run(on: backend) { h in
            let coins = try await refundRequested(h, "gus")
            // Stopped before answering; started again: a new server on new connections to the same database.
            let storage = try await StorageFactory.open(
                h.application.configuration.storageURL, logger: Logger(label: "restarted"))
            do {
                let restarted = try StorekeeperApplication(
                    configuration: h.application.configuration, storage: storage, clock: h.simulator.clock)
                #expect(try await restarted.refundAnswers.answerDue() == 1)
                #expect(try await restarted.refundAnswers.answerDue() == 0)
                #expect(try await h.application.refundAnswers.answerDue() == 0)
            } catch {
                try await storage.close()
                throw error
            }
            try await storage.close()
            try await h.settle()
            #expect(h.simulator.appStore.consumptionAnswers(transactionId: coins.transactionId).count == 1)
            #expect(try await refundRequests(h, "gus").first?["status"] as? String == "sent")
        }
    }

    @Test(arguments: StorageBackend.available)
    func appleAnswering500ThenOKSendsItOnce(_ backend: StorageBackend) async throws {
        try await ServerHarness.run(on: backend) { h in
            let coins = try await refundRequested(h, "hal")
            // As many 500s as the API client tries within one call: the call fails, the outbox retries.
            h.simulator.faults.add([APIFault(pathPrefix: Self.consumptionPath, status: 500, times: 4)])
            try await h.answerRefundRequests()
            var request = try #require(try await refundRequests(h, "hal").first)
            #expect(request["status"] as? String == "pending")
            #expect(request["attempts"] as? Int == 1)
            #expect(request["lastError"] as? String != nil)
            #expect(h.simulator.appStore.consumptionAnswers(transactionId: coins.transactionId).isEmpty)
            // Not due before its backoff (a minute).
            #expect(try await h.answerRefundRequests() == 0)
            try await h.advance(days: 61 / 86_400)
            #expect(try await h.answerRefundRequests() == 1)
            request = try #require(try await refundRequests(h, "hal").first)
            #expect(request["status"] as? String == "sent")
            #expect(request["attempts"] as? Int == 2)
            #expect(h.simulator.appStore.consumptionAnswers(transactionId: coins.transactionId).count == 1)
        }
    }

    @Test(arguments: StorageBackend.available)
    func afterTwelveHoursNothingIsSentAndThatIsRecorded(_ backend: StorageBackend) async throws {
        try await ServerHarness.run(on: backend) { h in
            let coins = try await refundRequested(h, "ivy")
            try await h.advance(days: 12.5 / 24)
            try await h.answerRefundRequests()
            #expect(h.simulator.appStore.consumptionAnswers(transactionId: coins.transactionId).isEmpty)
            let request = try #require(try await refundRequests(h, "ivy").first)
            #expect(request["status"] as? String == "expired")
            #expect(try await metric(h, status: "expired") == 1)
        }
    }

    @Test(arguments: StorageBackend.available)
    func aRefusalIsFinalAndKeptWithItsStatus(_ backend: StorageBackend) async throws {
        try await ServerHarness.run(on: backend) { h in
            _ = try await refundRequested(h, "jo")
            h.simulator.faults.add([APIFault(pathPrefix: Self.consumptionPath, status: 400)])
            try await h.answerRefundRequests()
            let request = try #require(try await refundRequests(h, "jo").first)
            #expect(request["status"] as? String == "failed")
            #expect((request["lastError"] as? String)?.contains("400") == true)
            try await h.advance(days: 1 / 24)
            #expect(try await h.answerRefundRequests() == 0)
            #expect(try await metric(h, status: "failed") == 1)
        }
    }

    // MARK: Refunds take back exactly what was refunded

    enum Revocation: String, CaseIterable, Sendable {
        case full, prorated, family
    }

    /// Every revocation type on every product type: what access and balance remain, and that
    /// `REFUND_REVERSED` restores exactly what was taken.
    @Test(arguments: StorageBackend.available)
    func eachRevocationTypeOnEachProductType(_ backend: StorageBackend) async throws {
        try await ServerHarness.run(on: backend) { h in
            let store = h.simulator.appStore
            for revocation in Revocation.allCases {
                // product, entitlement or balance, what remains after a refund of 40 % / in full
                let cases: [(product: String, name: String, proratedKeeps: Bool)] = [
                    ("coins.100", "coins", true), ("lifetime.unlock", "lifetime", true),
                    ("pass.season", "season", true), ("pro.monthly", "pro", false),
                ]
                // Consumables are never shared through Family Sharing (and a family revocation
                // refunds nothing, so it would take no credits back).
                for item in cases where !(revocation == .family && item.name == "coins") {
                    let customer = "\(revocation.rawValue)-\(item.name)"
                    let token = try await h.createCustomer(customer)
                    if revocation == .family {
                        // A family member's transaction carries no account token: its app transaction links it.
                        let appTransaction = try store.signedAppTransaction(
                            customer: customer, bundleId: ServerHarness.bundleID)
                        let linked = try await h.request(
                            .POST, "/v1/customers/\(customer)/app-transactions",
                            json: #"{"signedAppTransaction": "\#(appTransaction)"}"#)
                        #expect(linked.status == 200)
                    }
                    let bought = try store.purchase(
                        customer: customer, product: item.product, appAccountToken: token,
                        ownership: revocation == .family ? .familyShared : .purchased)
                    try await h.settle()
                    switch revocation {
                    case .full: try store.refund(transactionId: bought.transactionId)
                    case .prorated: try store.refund(transactionId: bought.transactionId, revocationPercentage: 40_000)
                    case .family: try store.revokeFamilySharing(transactionId: bought.transactionId)
                    }
                    try await h.settle()
                    let keeps = revocation == .prorated && item.proratedKeeps
                    if item.name == "coins" {
                        #expect(try await h.balances(customer)["coins"] == (keeps ? 60 : 0), "\(customer)")
                    } else {
                        #expect(try await h.entitlements(customer)[item.name]?.active == keeps, "\(customer)")
                    }
                    // Later than the refund: a word in the same millisecond would tie with it.
                    try await h.advance(days: 1 / 24)
                    try store.reverseRefund(transactionId: bought.transactionId)
                    try await h.settle()
                    if item.name == "coins" {
                        #expect(try await h.balances(customer)["coins"] == 100, "\(customer) reversed")
                    } else {
                        #expect(try await h.entitlements(customer)[item.name]?.active == true, "\(customer) reversed")
                    }
                }
            }
        }
    }

    @Test(arguments: StorageBackend.available)
    func refundingAnOlderRenewalDoesNotEndTheLaterPaidPeriod(_ backend: StorageBackend) async throws {
        try await ServerHarness.run(on: backend) { h in
            let token = try await h.createCustomer("kim")
            let bought = try h.simulator.appStore.purchase(
                customer: "kim", product: "pro.monthly", appAccountToken: token)
            try await h.settle()
            try await h.advance(days: 31)
            let renewed = try #require(h.simulator.appStore.subscription(bought.originalTransactionId))
            #expect(renewed.transactionIds.count == 2)
            let expiry = try await h.entitlementView("kim", "pro")?.expiresAt

            try h.simulator.appStore.refund(transactionId: bought.transactionId)
            try await h.settle()
            let after = try await h.entitlementView("kim", "pro")
            #expect(after?.active == true)
            #expect(after?.state == .active)
            #expect(after?.expiresAt == expiry)
            let first = try await h.storage.transaction {
                try await $0.transaction(store: .appStore, id: bought.transactionId)
            }
            #expect(first?.fact.revokedAt != nil)
            #expect(first?.fact.refundedFraction == 1)

            try await h.advance(days: 1)
            try h.simulator.appStore.reverseRefund(transactionId: bought.transactionId)
            try await h.settle()
            #expect(try await h.entitlementView("kim", "pro")?.expiresAt == expiry)
            let reversed = try await h.storage.transaction {
                try await $0.transaction(store: .appStore, id: bought.transactionId)
            }
            #expect(reversed?.fact.revokedAt == nil)
        }
    }

    @Test(arguments: StorageBackend.available)
    func aGoogleVoidOfOneOrderLeavesTheSubscriptionToItsState(_ backend: StorageBackend) async throws {
        try await ServerHarness.run(on: backend) { h in
            let play = h.simulator.googlePlay
            let token = try await h.googlePlaySubscription("lou")
            try await h.settle()
            try await h.advance(days: 32)
            let orders = try #require(play.subscription(token)?.orderIds)
            #expect(orders.count == 2)
            // Google refunds the first month without revoking: the paid second month goes on.
            try play.refund(orderId: orders[0], revoke: false)
            try await h.settle()
            let entitlement = try await h.entitlementView("lou", "pro")
            #expect(entitlement?.active == true)
            #expect(entitlement?.state == .active)
            let voided = try await h.storage.transaction { try await $0.transaction(store: .googlePlay, id: orders[0]) }
            #expect(voided?.fact.revokedAt != nil)
            #expect(voided?.fact.refundedFraction == 1)
            let latest = try await h.storage.transaction { try await $0.transaction(store: .googlePlay, id: orders[1]) }
            #expect(latest?.fact.revokedAt == nil)
            // The catch-up sweeping Google's voided list applies it again without changing anything.
            _ = try await h.recover()
            #expect(try await h.entitlementView("lou", "pro")?.active == true)
        }
    }

    // MARK: Bad input writes nothing

    @Test(arguments: StorageBackend.available)
    func badInputGetsASpecificErrorAndWritesNothing(_ backend: StorageBackend) async throws {
        try await ServerHarness.run(on: backend) { h in
            // Consent for an unknown customer: refused, and no customer is created.
            let unknown = try await h.request(.PUT, "/v1/customers/nobody", json: #"{"consumptionConsent": true}"#)
            #expect(unknown.status == 404)
            #expect(errorCode(unknown) == "customer-not-found")
            #expect(try await h.request(.GET, "/v1/customers/nobody").status == 404)
            let token = try await h.createCustomer("max")
            let other = try await h.createCustomer("ned")
            for body in [#"{"consumptionConsent": "yes"}"#, #"{"consumptionConsent": 1}"#, #"{"other": true}"#, "[1]"] {
                let malformed = try await h.request(.PUT, "/v1/customers/max", json: body)
                #expect(malformed.status == 400, "\(body)")
                #expect(errorCode(malformed) == "malformed-body", "\(body)")
            }
            #expect(try await h.request(.GET, "/v1/customers/max").body["consumptionConsent"] == nil)

            let unlock = try h.simulator.appStore.purchase(
                customer: "max", product: "lifetime.unlock", appAccountToken: token)
            let coins = try h.simulator.appStore.purchase(customer: "ned", product: "coins.100", appAccountToken: other)
            try await h.settle()
            let path = "/v1/customers/max/purchases/app-store/\(unlock.originalTransactionId)/usage"
            let cases: [(path: String, body: String, status: Int, code: String)] = [
                (path, #"{"consumedPercent": 100.5}"#, 400, "invalid-usage"),
                (path, #"{"consumedPercent": -1}"#, 400, "invalid-usage"),
                (path, #"{"consumedPercent": "half"}"#, 400, "malformed-body"),
                (path, #"{"consumedPercent": 10, "deliveryProblem": "LOST"}"#, 400, "invalid-usage"),
                (path, #"{"consumedPercent": 10, "deliveryProblem": "DELIVERED"}"#, 400, "invalid-usage"),
                (path, #"{}"#, 400, "invalid-usage"),
                (
                    "/v1/customers/max/purchases/app-store/\(coins.originalTransactionId)/usage",
                    #"{"consumedPercent": 10}"#, 409, "purchase-not-owned"
                ),
                (
                    "/v1/customers/ned/purchases/app-store/\(coins.originalTransactionId)/usage",
                    #"{"consumedPercent": 10}"#, 400, "invalid-usage"
                ),
                (
                    "/v1/customers/max/purchases/app-store/999999/usage", #"{"consumedPercent": 10}"#, 404,
                    "purchase-not-found"
                ),
                ("/v1/customers/max/purchases/nowhere/1/usage", #"{"consumedPercent": 10}"#, 400, "invalid-query"),
                (
                    "/v1/customers/nobody/purchases/app-store/1/usage", #"{"consumedPercent": 10}"#, 404,
                    "customer-not-found"
                ),
            ]
            for item in cases {
                let response = try await h.request(.PUT, item.path, json: item.body)
                #expect(response.status == item.status, "\(item.path) \(item.body)")
                #expect(errorCode(response) == item.code, "\(item.path) \(item.body)")
            }
            let stored = try await h.storage.transaction { transaction in
                try await [
                    transaction.purchaseUsage(.appStore(unlock.originalTransactionId)),
                    transaction.purchaseUsage(.appStore(coins.originalTransactionId)),
                ]
            }
            #expect(stored.allSatisfy { $0 == nil })
            #expect(try await h.request(.GET, "/v1/customers/nobody/refund-requests").status == 404)
        }
    }
}
