public import AppStoreServer
public import Foundation
import GooglePlay
import StoreSimulator
public import Storekeeper

/// The scripted story `storekeeper demo` tells on a ``SimulatedDeployment``: per store, a customer
/// buys, renews (the store's notification of it is lost, and the server's catch-up finds what it
/// said), fails billing and recovers, upgrades, cancels and expires; a second account
/// presents the same store purchase (the ownership policy decides); a consumable is bought and
/// refunded. After each step it reports the store events the simulator sent and the customer's
/// entitlements as the server answers them.
public struct DemoStory: Sendable {
    /// One line of the story.
    public enum Line: Sendable, Hashable {
        /// A section title.
        case heading(String)
        /// A step, at its simulated date.
        case step(date: Date, String)
        /// A notification a store sent.
        case storeEvent(store: String, String)
        /// The customer view after a step.
        case customer(id: String, CustomerView)
        /// The server refused a request (status, code, message).
        case refusal(String)
        /// What the server's catch-up for missed notifications found.
        case catchUp(String)
        /// What the server answered a store's refund consumption request with.
        case consumptionAnswer(String)
        /// An event the server delivered to the demo's webhook receiver, and whether its signature
        /// verified there.
        case webhook(type: String, signatureValid: Bool)
    }

    public let deployment: SimulatedDeployment
    /// Whose products the story buys (the main app's customers are alice, alex, gina and george;
    /// another app's carry its name: `alice@second`).
    public let app: SimulatedDeployment.App
    /// The App Store environment of the story's purchases (nil: the simulated app's default, Sandbox).
    public let appStoreEnvironment: Environment?
    /// Whether the Google Play purchases are license testers' test purchases.
    public let googleTestPurchases: Bool
    /// The app backend's webhook receiver, if the deployment delivers events to it: after each
    /// step the story delivers what is due and reports what arrived.
    public let webhooks: DemoWebhookReceiver?
    let api: CustomerAPI
    let report: @Sendable (Line) -> Void

    public init(
        deployment: SimulatedDeployment, app: SimulatedDeployment.App = .main, appStoreEnvironment: Environment? = nil,
        googleTestPurchases: Bool = false, webhooks: DemoWebhookReceiver? = nil,
        report: @escaping @Sendable (Line) -> Void
    ) {
        self.webhooks = webhooks
        self.deployment = deployment
        self.app = app
        self.appStoreEnvironment = appStoreEnvironment
        self.googleTestPurchases = googleTestPurchases
        self.api = CustomerAPI(baseURL: deployment.baseURL, apiKey: deployment.options.secretAPIKey)
        self.report = report
    }

    /// The story's name for a customer of this app.
    public func customer(_ name: String) -> String {
        app == .main ? name : "\(name)@\(app.name)"
    }

    /// Tells both stories; throws if a store step or a request to the server fails.
    public func run() async throws {
        try await appStore()
        try await googlePlay()
    }

    // MARK: App Store

    public func appStore() async throws {
        let store = deployment.simulator.appStore
        let alice = customer("alice")
        let alex = customer("alex")
        report(.heading("App Store — customer \(alice)"))
        var seen = store.notifications.count
        let token = try await api.createCustomer(alice)
        let bought = try await step(
            "alice buys pro.monthly in the app", customer: alice, store: .appStore, seen: &seen
        ) {
            try store.purchase(
                customer: alice, product: app.product("pro.monthly"), appAccountToken: token,
                environment: appStoreEnvironment)
        }
        try await step(
            "a month passes: the subscription renews, but Apple's notification never arrives", customer: alice,
            store: .appStore, seen: &seen, days: 31
        ) {
            store.injectDeliveryFaults([.drop])
        }
        try await catchUp(customer: alice)
        try await step(
            "her card is declined at the next renewal (3 days of grace)", customer: alice, store: .appStore,
            seen: &seen, days: daysPast(store.subscription(bought.originalTransactionId)?.expiresDate)
        ) {
            try store.failBilling(bought.originalTransactionId)
        }
        try await step("she updates her card: billing recovers", customer: alice, store: .appStore, seen: &seen) {
            try store.recoverBilling(bought.originalTransactionId)
        }
        try await step("she upgrades to max.monthly", customer: alice, store: .appStore, seen: &seen) {
            try store.upgrade(bought.originalTransactionId, to: app.product("max.monthly"))
        }
        let latest = try require(store.subscription(bought.originalTransactionId)?.transactionIds.last)
        _ = try await api.createCustomer(alex)
        try await presentElsewhere(alex) {
            try await api.submitAppStore(customer: alex, transactionId: latest, bundleID: app.bundleID)
        }
        try await step("alice turns auto-renew off", customer: alice, store: .appStore, seen: &seen) {
            try store.setAutoRenew(bought.originalTransactionId, on: false)
        }
        try await step("the paid period ends", customer: alice, store: .appStore, seen: &seen, days: 32) {}
        let coins = try await step("alice buys coins.100", customer: alice, store: .appStore, seen: &seen) {
            try store.purchase(
                customer: alice, product: app.product("coins.100"), appAccountToken: token,
                environment: appStoreEnvironment)
        }
        try await step("Apple refunds the coins", customer: alice, store: .appStore, seen: &seen) {
            try store.refund(transactionId: coins.transactionId)
        }
        try await refundDecisions(customer: alice, token: token, seen: &seen)
    }

    /// Refund requests Apple asks the server about (CONSUMPTION_REQUEST): the server answers from
    /// what it knows (the ledger's spent share, under the demo's policy: decline above 50 %
    /// consumed, else prefer a prorated refund), and the simulated App Store decides by it.
    func refundDecisions(customer alice: String, token: UUID, seen: inout Int) async throws {
        let store = deployment.simulator.appStore
        report(
            .step(date: deployment.simulator.clock.now(), "alice lets the app share her consumption data with Apple"))
        try await api.setConsumptionConsent(alice, true)
        func buyCoins(_ title: String, seen: inout Int) async throws -> AppStoreSimulation.PurchaseResult {
            try await step(title, customer: alice, store: .appStore, seen: &seen) {
                try store.purchase(
                    customer: alice, product: app.product("coins.100"), appAccountToken: token,
                    environment: appStoreEnvironment)
            }
        }
        let first = try await buyCoins("alice buys another coins.100", seen: &seen)
        try await spend(alice, 80, "she spends 80 coins")
        try await refundRequest(
            "she asks Apple to refund that coin pack", transactionId: first.transactionId, customer: alice,
            seen: &seen)
        let second = try await buyCoins("alice buys one more coins.100", seen: &seen)
        try await spend(alice, 40, "she spends 40 coins: the first pack's last 20, then 20 of this one")
        try await refundRequest(
            "she asks Apple to refund the new pack", transactionId: second.transactionId, customer: alice,
            seen: &seen)
    }

    /// The app spends some of the customer's coins through the server's API.
    func spend(_ customer: String, _ amount: Int, _ title: String) async throws {
        report(.step(date: deployment.simulator.clock.now(), title))
        let key = "demo-\(customer)-\(deployment.simulator.clock.now().timeIntervalSince1970)"
        try await api.debit(customer, balance: "coins", amount: amount, idempotencyKey: key)
        try await reportWebhooks()
        report(.customer(id: customer, try await api.customer(customer)))
    }

    /// The customer asks Apple for a refund: Apple's CONSUMPTION_REQUEST, the server's answer
    /// (sent by its refund-answers job, run now), and Apple's decision with what it refunded.
    func refundRequest(_ title: String, transactionId: String, customer: String, seen: inout Int) async throws {
        let store = deployment.simulator.appStore
        report(.step(date: deployment.simulator.clock.now(), title))
        try store.requestRefund(transactionId: transactionId, reason: .unsatisfiedWithPurchase)
        try await deployment.advance(days: 1.0 / 24)
        reportStoreEvents(.appStore, since: &seen)
        try await deployment.application.refundAnswers.answerDue()
        try await deployment.settle()
        if let request = try await api.refundRequests(customer).last(where: { $0.transactionId == transactionId }) {
            report(.consumptionAnswer(Self.describe(request)))
        }
        reportStoreEvents(.appStore, since: &seen)
        if let refunded = store.transaction(transactionId), let type = refunded.revocationType {
            let percentage = refunded.revocationPercentage.map { " \($0 / 1000)%" } ?? ""
            report(.storeEvent(store: "App Store", "  revocationType \(type.rawValue)\(percentage)"))
        }
        try await reportWebhooks()
        report(.customer(id: customer, try await api.customer(customer)))
    }

    /// The answer in Apple's field names, or why none was sent.
    static func describe(_ request: CustomerAPI.RefundRequestAnswer) -> String {
        guard let sent = request.sent else {
            return "CONSUMPTION_REQUEST not answered (\(request.status)\(request.skipReason.map { ": \($0)" } ?? ""))"
        }
        var parts = ["deliveryStatus \(sent.deliveryStatus)"]
        if let share = sent.consumptionPercentage {
            parts.append("consumptionPercentage \(share) (\(Double(share) / 1000)% consumed)")
        }
        parts.append("refundPreference \(sent.refundPreference ?? "none")")
        return "CONSUMPTION_REQUEST answered: " + parts.joined(separator: ", ")
    }

    // MARK: Google Play

    public func googlePlay() async throws {
        let play = deployment.simulator.googlePlay
        let package = app.packageName
        let gina = customer("gina")
        let george = customer("george")
        report(.heading("Google Play — customer \(gina)"))
        var seen = play.pushes.count
        let account = try await api.createCustomer(gina)
        let options = PlayPurchaseOptions(
            obfuscatedExternalAccountId: account.uuidString, testPurchase: googleTestPurchases)
        let bought = try await step(
            "gina subscribes to premium in the app", customer: gina, store: .googlePlay, seen: &seen
        ) {
            try play.purchaseSubscription(packageName: package, productId: app.product("premium"), options: options)
        }
        try await step(
            "a month passes: the subscription renews, but Google's push never arrives", customer: gina,
            store: .googlePlay, seen: &seen, days: 31
        ) {
            play.injectPushFaults([.drop])
        }
        try await catchUp(customer: gina)
        try await step(
            "her card is declined at the next renewal (3 days of grace)", customer: gina, store: .googlePlay,
            seen: &seen, days: daysPast(play.subscription(bought.purchaseToken)?.expiryTime)
        ) {
            try play.failBilling(bought.purchaseToken)
        }
        try await step("she fixes her payment method: recovered", customer: gina, store: .googlePlay, seen: &seen) {
            _ = try play.recoverBilling(bought.purchaseToken)
        }
        let upgraded = try await step(
            "she upgrades to premium.max (a new purchase token)", customer: gina, store: .googlePlay, seen: &seen
        ) {
            try play.changeSubscription(bought.purchaseToken, toProductId: app.product("premium.max"))
        }
        _ = try await api.createCustomer(george)
        try await presentElsewhere(george) {
            try await api.submitGooglePlay(
                customer: george, purchaseToken: upgraded.purchaseToken, packageName: package)
        }
        try await step("gina cancels", customer: gina, store: .googlePlay, seen: &seen) {
            try play.cancelSubscription(upgraded.purchaseToken)
        }
        try await step("the paid period ends", customer: gina, store: .googlePlay, seen: &seen, days: 32) {}
        let gems = try await step("gina buys 3 gems", customer: gina, store: .googlePlay, seen: &seen) {
            try play.purchaseProduct(
                packageName: package, productId: app.product("gems"), quantity: 3, options: options)
        }
        try await step("Google refunds one of the gems", customer: gina, store: .googlePlay, seen: &seen) {
            try play.refund(orderId: try require(gems.orderId), quantity: 1)
        }
    }

    // MARK: Steps

    /// Runs `action` at the simulated now, lets `days` pass, waits until the server has processed
    /// what the stores sent, and reports it with the customer view.
    @discardableResult
    func step<Result>(
        _ title: String, customer: String, store: Store, seen: inout Int, days: Double = 0,
        _ action: () throws -> Result
    ) async throws -> Result {
        report(.step(date: deployment.simulator.clock.now(), title))
        let result = try action()
        if days > 0 {
            report(
                .step(
                    date: deployment.simulator.clock.now().addingTimeInterval(days * 86_400), "…\(Int(days)) days later"
                ))
        }
        // An hour passes after every step, as it would: two store events at the same instant
        // would be indistinguishable by time.
        try await deployment.advance(days: days + 1.0 / 24)
        reportStoreEvents(store, since: &seen)
        try await reportWebhooks()
        report(.customer(id: customer, try await api.customer(customer)))
        return result
    }

    /// Delivers the events due to the demo's receiver and reports each one it received.
    func reportWebhooks() async throws {
        guard let webhooks else { return }
        let before = webhooks.deliveries.count
        try await deployment.application.webhooks.run()
        for delivery in webhooks.deliveries.dropFirst(before) {
            report(.webhook(type: delivery.type, signatureValid: delivery.signatureValid))
        }
    }

    /// The server's catch-up for missed notifications runs (hourly in a real deployment; now, here)
    /// and the customer view after it is reported.
    func catchUp(customer: String) async throws {
        report(
            .step(
                date: deployment.simulator.clock.now(),
                "the server's catch-up asks the stores what it missed"))
        let found = await deployment.application.recovery.run()
        try await deployment.settle()
        func counted(_ count: Int, _ one: String, _ many: String, _ rest: String) -> String? {
            count > 0 ? "\(count) \(count == 1 ? one : many) \(rest)" : nil
        }
        let parts = [
            counted(found[.history], "notification", "notifications", "from Apple's notification history"),
            counted(found[.voided], "void", "voids", "from Google's voided purchases list"),
            counted(found[.refreshed], "overdue subscription", "overdue subscriptions", "asked of its store"),
        ].compactMap { $0 }
        report(.catchUp(parts.isEmpty ? "nothing missed" : parts.joined(separator: "; ")))
        try await reportWebhooks()
        report(.customer(id: customer, try await api.customer(customer)))
    }

    /// A second account presents a purchase someone else owns; the ownership policy decides.
    func presentElsewhere(_ customer: String, _ submit: () async throws -> CustomerView) async throws {
        let policy = deployment.options.policies.ownershipConflict.rawValue
        report(
            .step(
                date: deployment.simulator.clock.now(),
                "\(customer), another account on the same device, presents the same store purchase (policy \(policy))"
            ))
        do {
            let view = try await submit()
            // Under `transfer` the purchase moves, with its events.
            try await reportWebhooks()
            report(.customer(id: customer, view))
        } catch let refusal as CustomerAPI.Refusal {
            report(.refusal(refusal.description))
            report(.customer(id: customer, try await api.customer(customer)))
        }
    }

    /// How a store event the simulator lost on the way is marked.
    public static let lost = " (lost on the way: never delivered)"

    /// Reports the store's notifications after the first `seen`, and counts them as seen.
    func reportStoreEvents(_ store: Store, since seen: inout Int) {
        let events: [String]
        switch store {
        case .appStore:
            events = deployment.simulator.appStore.notifications.map {
                [$0.payload.notificationType?.rawValue, $0.payload.subtype?.rawValue].compactMap { $0 }
                    .joined(separator: " ") + ($0.status == .dropped ? Self.lost : "")
            }
        case .googlePlay:
            events = deployment.simulator.googlePlay.pushes.map {
                $0.notification.eventName + ($0.status == .dropped ? Self.lost : "")
            }
        }
        for event in events.dropFirst(seen) {
            report(.storeEvent(store: store == .appStore ? "App Store" : "Google Play", event))
        }
        seen = events.count
    }

    /// Whole days from now until a day after `date` (the next renewal): inside a 3-day grace period.
    func daysPast(_ date: Date?) -> Double {
        let seconds = (date ?? deployment.simulator.clock.now()).timeIntervalSince(deployment.simulator.clock.now())
        return (max(seconds, 0) / SimulatedDeployment.day).rounded(.up) + 1
    }

    func require<Value>(_ value: Value?) throws -> Value {
        guard let value else { throw DeploymentError(description: "the simulator lost a purchase") }
        return value
    }
}
