import AppStoreServer
import Foundation
import StoreSimulator
import Storekeeper
import StorekeeperDemo
import StorekeeperServer
import StorekeeperStorage
import Synchronization
import Testing

/// A deployment of two App Store apps and two Google Play apps, each in Sandbox and Production:
/// every path uses the purchase's own app and environment, never "the first configured app".
@Suite(.serialized) struct MultiAppTests {
    static let apps: [SimulatedDeployment.App] = [.main, .second]
    static let second = SimulatedDeployment.App.second

    /// The demo's whole story for the second app of each store, with the first app configured
    /// before it: as `DemoStoryTests` expects it for the only app.
    func tell(
        on backend: StorageBackend, appStoreEnvironment: Environment, googleTestPurchases: Bool,
        _ check: @Sendable (ServerHarness) async throws -> Void
    ) async throws -> [DemoStory.Line] {
        let lines = Mutex<[DemoStory.Line]>([])
        try await ServerHarness.run(on: backend, appStoreGracePeriodDays: 3, apps: Self.apps) { h in
            let story = DemoStory(
                deployment: h.deployment, app: Self.second, appStoreEnvironment: appStoreEnvironment,
                googleTestPurchases: googleTestPurchases
            ) { line in lines.withLock { $0.append(line) } }
            try await story.run()
            try await check(h)
        }
        return lines.withLock { $0 }
    }

    func expectTheStory(_ lines: [DemoStory.Line]) {
        let demo = DemoStoryTests()
        let alice = demo.views(lines, of: "alice@second")
        #expect(demo.states(alice, "pro") == DemoStoryTests.alicePro)
        #expect(alice.map { $0.balances["coins"] ?? 0 } == DemoStoryTests.aliceCoins)
        let gina = demo.views(lines, of: "gina@second")
        #expect(demo.states(gina, "pro") == DemoStoryTests.ginaPro)
        #expect(gina.map { $0.balances["coins"] ?? 0 } == DemoStoryTests.ginaCoins)
        let refusals = lines.compactMap { line -> String? in
            guard case .refusal(let text) = line else { return nil }
            return text
        }
        #expect(refusals.count == 2 && refusals.allSatisfy { $0.hasPrefix("409 ownership-conflict") })
        let caughtUp = lines.compactMap { line -> String? in
            guard case .catchUp(let text) = line else { return nil }
            return text
        }
        #expect(
            caughtUp == [
                "1 notification from Apple's notification history", "1 overdue subscription asked of its store",
            ])
    }

    /// Every purchase of the customer records the second app and `environment`.
    static func expectPurchases(
        of customer: String, in h: ServerHarness, environment: PurchaseEnvironment, store: Store
    ) async throws {
        let purchases = try await h.storage.transaction { try await $0.purchases(of: CustomerID(customer)) }
        #expect(!purchases.isEmpty)
        let app = AppID(store == .appStore ? second.bundleID : second.packageName)
        for purchase in purchases {
            #expect(purchase.app == app, "\(purchase.key)")
            #expect(purchase.environment == environment, "\(purchase.key)")
        }
    }

    @Test(arguments: StorageBackend.available) func theSecondAppsStoryInProduction(_ backend: StorageBackend)
        async throws
    {
        let lines = try await tell(on: backend, appStoreEnvironment: .production, googleTestPurchases: false) { h in
            try await Self.expectPurchases(of: "alice@second", in: h, environment: .production, store: .appStore)
            try await Self.expectPurchases(of: "gina@second", in: h, environment: .production, store: .googlePlay)
            // Every notification went to the second app's production URL and was processed.
            let sent = h.simulator.appStore.notifications
            #expect(!sent.isEmpty && sent.allSatisfy { $0.bundleId == Self.second.bundleID })
            #expect(sent.allSatisfy { $0.environment == .production })
        }
        expectTheStory(lines)
    }

    @Test(arguments: StorageBackend.available) func theSecondAppsStoryInSandbox(_ backend: StorageBackend)
        async throws
    {
        let lines = try await tell(on: backend, appStoreEnvironment: .sandbox, googleTestPurchases: true) { h in
            try await Self.expectPurchases(of: "alice@second", in: h, environment: .sandbox, store: .appStore)
            try await Self.expectPurchases(of: "gina@second", in: h, environment: .sandbox, store: .googlePlay)
        }
        expectTheStory(lines)
    }

    /// The sweeper settles a purchase with its own app: the second Google app's purchase whose
    /// first acknowledgement failed is acknowledged before Google's three days run out.
    @Test(arguments: StorageBackend.available) func theSecondGoogleAppsFailedAcknowledgementIsSwept(
        _ backend: StorageBackend
    ) async throws {
        try await MissedNotificationTests.aFailedAcknowledgementIsSwept(on: backend, app: Self.second, among: Self.apps)
    }

    /// A single and a mass renewal-date extension of the second App Store app in Sandbox: each
    /// RENEWAL_EXTENDED moves the expiry (`subscription.renewal_extended`, not a renewal), and the mass extension's SUMMARY (which carries no `data`)
    /// is routed to that app's sandbox verifier and processed.
    @Test(arguments: StorageBackend.available) func renewalExtensionsOfTheSecondAppInSandbox(_ backend: StorageBackend)
        async throws
    {
        try await ServerHarness.run(on: backend, apps: Self.apps) { h in
            let store = h.simulator.appStore
            let token = try await h.createCustomer("sam")
            let product = Self.second.product("pro.monthly")
            let bought = try store.purchase(
                customer: "sam", product: product, appAccountToken: token, environment: .sandbox)
            try await h.settle()
            let before = try #require(try await h.entitlementView("sam", "pro")?.expiresAt)
            let adapter = try #require(h.application.stores(.appStore) as? AppStoreAdapter)
            let client = try adapter.apps.client(AppID(Self.second.bundleID), .sandbox)

            _ = try await client.extendSubscriptionRenewalDate(
                originalTransactionId: bought.originalTransactionId,
                ExtendRenewalDateRequest(
                    extendByDays: 5, extendReasonCode: .customerSatisfaction, requestIdentifier: "one"))
            try await h.settle()
            let once = try #require(try await h.entitlementView("sam", "pro")?.expiresAt)
            #expect(once == before.addingTimeInterval(5 * 86_400))
            // Extended without a payment: its event says so, and nothing reads as a renewal.
            let types = try await EventTests.feed(h).map { $0.1["type"] as? String ?? "" }
            #expect(types.contains("subscription.renewal_extended"), "\(types)")
            #expect(!types.contains("subscription.renewed"), "\(types)")

            _ = try await client.extendRenewalDateForAllActiveSubscribers(
                MassExtendRenewalDateRequest(
                    extendByDays: 3, extendReasonCode: .serviceIssueOrOutage, requestIdentifier: "mass",
                    productId: product))
            try await h.settle()
            let twice = try #require(try await h.entitlementView("sam", "pro")?.expiresAt)
            #expect(twice == once.addingTimeInterval(3 * 86_400))
            let summary = try #require(store.notifications.first { $0.payload.notificationType == .renewalExtension })
            #expect(summary.payload.summary != nil && summary.payload.data == nil)
            #expect(summary.environment == .sandbox && summary.bundleId == Self.second.bundleID)
            #expect(summary.status == .delivered)
            let stored = try await h.storage.transaction {
                try await $0.notification(store: .appStore, dedupeKey: summary.notificationUUID)
            }
            #expect(stored?.status == .processed)
        }
    }

    /// In a production deployment, a Sandbox purchase is tracked but grants nothing, and presenting
    /// it is refused with a specific error; an app's switch lets its sandbox purchases grant.
    @Test(arguments: StorageBackend.available) func sandboxPurchasesInAProductionDeployment(_ backend: StorageBackend)
        async throws
    {
        try await ServerHarness.run(on: backend, apps: Self.apps, environment: .production) { h in
            let store = h.simulator.appStore
            let play = h.simulator.googlePlay
            let token = try await h.createCustomer("tess")
            let sandbox = try store.purchase(
                customer: "tess", product: Self.second.product("pro.monthly"), appAccountToken: token,
                environment: .sandbox)
            let tester = try play.purchaseSubscription(
                packageName: Self.second.packageName, productId: Self.second.product("premium"),
                options: PlayPurchaseOptions(obfuscatedExternalAccountId: token.uuidString, testPurchase: true))
            try await h.settle()
            // Tracked (the notifications named her), never granting.
            #expect(try await h.entitlements("tess").isEmpty)
            let view = try await h.request(.GET, "/v1/customers/tess").body
            let subscriptions = view["subscriptions"] as? [[String: Any]] ?? []
            #expect(subscriptions.count == 2)
            #expect(subscriptions.allSatisfy { $0["environmentGrantsAccess"] as? Bool == false })
            #expect(subscriptions.allSatisfy { $0["active"] as? Bool == false })
            #expect(subscriptions.allSatisfy { $0["environment"] as? String == "sandbox" })

            // Presented by another customer: refused before anything is recorded.
            _ = try await h.createCustomer("tom")
            let apple = try await h.request(
                .POST, "/v1/customers/tom/purchases/app-store",
                json: #"{"transactionId": "\#(sandbox.transactionId)", "bundleId": "\#(Self.second.bundleID)"}"#)
            #expect(apple.status == 422)
            #expect((apple.body["error"] as? [String: Any])?["code"] as? String == "sandbox-purchase-in-production")
            let google = try await h.request(
                .POST, "/v1/customers/tom/purchases/google-play",
                json: #"{"purchaseToken": "\#(tester.purchaseToken)", "packageName": "\#(Self.second.packageName)"}"#)
            #expect(google.status == 422)
            #expect((google.body["error"] as? [String: Any])?["code"] as? String == "sandbox-purchase-in-production")
            let toms = try await h.storage.transaction { try await $0.purchases(of: CustomerID("tom")) }
            #expect(toms.isEmpty)
            let owner = try await h.storage.transaction {
                try await $0.purchase(.appStore(sandbox.originalTransactionId))?.customerID
            }
            #expect(owner == CustomerID("tess"))

            // Without a bundle id, a transaction id is ambiguous with two App Store apps.
            let ambiguous = try await h.request(
                .POST, "/v1/customers/tom/purchases/app-store", json: #"{"transactionId": "\#(sandbox.transactionId)"}"#
            )
            #expect(ambiguous.status == 422)
            #expect((ambiguous.body["error"] as? [String: Any])?["code"] as? String == "app-required")
        }
    }

    /// Production payloads are checked for the app's Apple id; Sandbox ones carry none to check.
    /// With the second app configured under another Apple id, its Production notification is
    /// refused (400, nothing stored) while its Sandbox one is processed.
    @Test func productionPayloadsAreCheckedForTheAppAppleID() async throws {
        let anotherAppleID: @Sendable (StoreSimulator, inout StorekeeperConfiguration) -> Void = { _, configuration in
            for index in configuration.apps.indices where configuration.apps[index].name == Self.second.name {
                configuration.apps[index].appStore?.appAppleID = 999_999
            }
        }
        try await ServerHarness.run(apps: Self.apps, customize: anotherAppleID) { h in
            let store = h.simulator.appStore
            let token = try await h.createCustomer("vera")
            let product = Self.second.product("pro.monthly")
            try store.purchase(customer: "vera", product: product, appAccountToken: token, environment: .production)
            try await store.deliveriesSettled()
            let refused = try #require(store.notifications.last)
            #expect(refused.environment == .production)
            #expect(refused.attempts.first?.httpStatus == 400)
            let stored = try await h.storage.transaction { try await $0.notificationCounts() }
            #expect(stored.values.reduce(0, +) == 0)

            try store.purchase(customer: "vera", product: product, appAccountToken: token, environment: .sandbox)
            try await h.settle()
            #expect(store.notifications.last?.status == .delivered)
            #expect(try await h.entitlements("vera")["pro"]?.active == true)
        }
    }

    /// The per-app switches: the second app's sandbox and test purchases grant in production; the
    /// first app's still don't.
    @Test func theAppsSwitchLetsItsSandboxPurchasesGrant() async throws {
        let switchOnForTheSecondApp: @Sendable (StoreSimulator, inout StorekeeperConfiguration) -> Void = {
            _, configuration in
            for index in configuration.apps.indices where configuration.apps[index].name == Self.second.name {
                configuration.apps[index].appStore?.sandboxGrantsAccess = true
                configuration.apps[index].googlePlay?.testPurchasesGrantAccess = true
            }
        }
        try await ServerHarness.run(apps: Self.apps, environment: .production, customize: switchOnForTheSecondApp) {
            h in
            let store = h.simulator.appStore
            let token = try await h.createCustomer("uma")
            try store.purchase(
                customer: "uma", product: Self.second.product("pro.monthly"), appAccountToken: token,
                environment: .sandbox)
            try store.purchase(
                customer: "uma", product: SimulatedDeployment.App.main.product("max.monthly"), appAccountToken: token,
                environment: .sandbox)
            try await h.settle()
            let entitlements = try await h.entitlements("uma")
            #expect(entitlements["pro"]?.active == true)
            #expect(entitlements["max"] == nil)
        }
    }
}
