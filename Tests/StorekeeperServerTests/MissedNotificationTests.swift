import Foundation
import StoreSimulator
import Storekeeper
import StorekeeperDemo
import StorekeeperServer
import StorekeeperStorage
import Testing

/// Notifications the stores never deliver (DESIGN.md, "Missed notifications"): the simulator
/// drops them, and the server's catch-up finds what they said through the stores' APIs.
@Suite(.serialized) struct MissedNotificationTests {
    static let package = ServerHarness.packageName

    /// `customer` subscribes to pro.monthly in the app; a month and a half later, the renewal's
    /// notification was never delivered.
    static func subscribeThenLoseTheRenewal(_ customer: String, _ h: ServerHarness) async throws {
        let token = try await h.createCustomer(customer)
        _ = try h.simulator.appStore.purchase(customer: customer, product: "pro.monthly", appAccountToken: token)
        try await h.settle()
        h.simulator.appStore.injectDeliveryFaults([.drop])
        try await h.advance(days: 31.5)
    }

    @Test(arguments: StorageBackend.available) func aDroppedAppStoreRenewalIsFoundInTheNotificationHistory(
        _ backend: StorageBackend
    ) async throws {
        try await ServerHarness.run(on: backend) { h in
            let appStore = h.simulator.appStore
            try await Self.subscribeThenLoseTheRenewal("mia", h)
            #expect(appStore.notifications.last?.status == .dropped)
            // Without the renewal, access ended with the first period.
            #expect(try await h.entitlements("mia")["pro"]?.active == false)

            let report = try await h.recover()
            #expect(report[.history] == 1)
            #expect(report[.failures] == 0)
            let pro = try #require(try await h.entitlementView("mia", "pro"))
            #expect(pro.active)
            #expect(pro.expiresAt.map { $0 > ServerHarness.start.addingTimeInterval(58 * ServerHarness.day) } == true)

            // The history is read again from where the last read ended: nothing is stored twice.
            let again = try await h.recover()
            #expect(again[.history] == 0)
            let counts = try await h.storage.transaction { try await $0.notificationCounts() }
            #expect(counts[.processed] == appStore.notifications.count)
        }
    }

    @Test func theCatchUpServiceRunsInTheBackground() async throws {
        var processing = ServerHarness.processing
        processing.catchUp = CatchUpSettings(enabled: true, interval: 0.1)
        try await ServerHarness.run(processing: processing) { h in
            try await Self.subscribeThenLoseTheRenewal("max", h)
            // Whichever step got there first (the history, or the overdue subscription's refresh).
            func counted(_ metrics: String) -> Bool {
                metrics.contains(#"storekeeper_catch_up_total{kind="history"} 1"#)
                    || metrics.contains(#"storekeeper_catch_up_total{kind="refreshed"} 1"#)
            }
            // The run applies what it found before it reports: wait for both.
            let deadline = ContinuousClock.now.advanced(by: .seconds(60))
            while ContinuousClock.now < deadline {
                let active = try await h.entitlements("max")["pro"]?.active == true
                let metrics = try await h.text("/metrics")
                if active && counted(metrics) { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(try await h.entitlements("max")["pro"]?.active == true)
            let metrics = try await h.text("/metrics")
            #expect(counted(metrics), "\(metrics)")
            #expect(metrics.contains(#"storekeeper_refresh_due{kind="awaiting_news"} 0"#), "\(metrics)")
        }
    }

    @Test(arguments: StorageBackend.available) func overdueSubscriptionsAreAskedOfTheirStoreOneByOne(
        _ backend: StorageBackend
    ) async throws {
        try await ServerHarness.run(on: backend) { h in try await Self.loseRenewalsThenRefresh(h) }
    }

    /// With another app configured first, each overdue subscription is still asked of the app whose
    /// store knows it.
    @Test func overdueSubscriptionsAreAskedOfTheAppThatKnowsThem() async throws {
        let addAnotherAppFirst: @Sendable (StoreSimulator, inout StorekeeperConfiguration) throws -> Void = {
            simulator, configuration in
            guard var other = configuration.apps.first else { return }
            other.name = "other"
            other.appStore?.bundleID = "com.example.other"
            other.googlePlay?.packageName = "com.example.other.android"
            simulator.appStore.addApp(
                SimulatedApp(bundleId: "com.example.other", appAppleId: 987_654_321, environment: .sandbox))
            simulator.googlePlay.addApp(SimulatedPlayApp(packageName: "com.example.other.android"))
            configuration.apps.insert(other, at: 0)
        }
        try await ServerHarness.run(customize: addAnotherAppFirst) { h in
            #expect(h.application.configuration.apps.map(\.name) == ["other", "demo"])
            try await Self.loseRenewalsThenRefresh(h)
        }
    }

    /// An App Store and a Google Play subscription whose renewals' notifications are lost are
    /// refreshed from their stores; a third one, renewed normally, is not asked about.
    static func loseRenewalsThenRefresh(_ h: ServerHarness) async throws {
        let appStore = h.simulator.appStore
        let play = h.simulator.googlePlay
        let appleToken = try await h.createCustomer("olga")
        let buyer = try await h.googlePlayBuyer("oscar")
        let apple = try appStore.purchase(customer: "olga", product: "pro.monthly", appAccountToken: appleToken)
        let google = try play.purchaseSubscription(
            packageName: Self.package, productId: "premium",
            options: buyer
        ).purchaseToken
        // A third subscription renews with its notifications delivered: not overdue, not asked.
        let paulaToken = try await h.createCustomer("paula")
        _ = try appStore.purchase(customer: "paula", product: "max.monthly", appAccountToken: paulaToken)
        try await h.settle()
        // Both renewals are lost; paula's renewal is the third App Store notification due.
        appStore.injectDeliveryFaults([.drop])
        play.injectPushFaults([.drop])
        try await h.advance(days: 31.5)
        #expect(try await h.entitlements("olga")["pro"]?.active == false)
        #expect(try await h.entitlements("oscar")["pro"]?.active == false)

        var report = CatchUpReport()
        try await h.application.recovery.refreshOverdueSubscriptions(&report)
        #expect(report[.refreshed] == 2)
        #expect(report[.failures] == 0)
        #expect(try await h.entitlements("olga")["pro"]?.active == true)
        #expect(try await h.entitlements("oscar")["pro"]?.active == true)
        let appleHistory = try await h.storage.transaction {
            try await $0.stateChanges(of: .appStore(apple.originalTransactionId))
        }
        #expect(appleHistory.last?.cause.source == .refresh)
        let googleHistory = try await h.storage.transaction { try await $0.stateChanges(of: .googlePlay(google)) }
        #expect(googleHistory.last?.cause.source == .refresh)

        // Their access now runs to the next period: nothing is overdue any more.
        var second = CatchUpReport()
        try await h.application.recovery.refreshOverdueSubscriptions(&second)
        #expect(second[.refreshed] == 0)
    }

    /// Two subscriptions the store never answers for stay overdue after each refresh; with a batch
    /// of 2, one awaiting news (billing recovered, its notification lost) still gets its turn in the
    /// first run: overdue first alone gave the whole batch to the two that never change.
    @Test func subscriptionsAwaitingNewsGetPartOfABatchThatStuckOverdueOnesWouldFill() async throws {
        var processing = ServerHarness.processing
        processing.catchUp.refreshBatch = 2
        try await ServerHarness.run(on: .sqlite, processing: processing) { h in
            let appStore = h.simulator.appStore
            let token = try await h.createCustomer("rita")
            let retrying = try appStore.purchase(customer: "rita", product: "pro.monthly", appAccountToken: token)
            try await h.settle()
            try appStore.failBilling(retrying.originalTransactionId)
            try await h.advance(days: 34)
            #expect(try await h.entitlements("rita")["pro"]?.state == "billing_retry")
            appStore.injectDeliveryFaults([.drop])
            try appStore.recoverBilling(retrying.originalTransactionId)
            try await h.advance(days: 0.01)
            #expect(try await h.entitlements("rita")["pro"]?.active == false)

            // Three subscriptions of the app the simulated App Store has never heard of, past their
            // expiry: asked about, the store answers that it does not know them.
            let now = h.simulator.clock.now()
            try await h.storage.transaction { transaction in
                for id in ["unknown-1", "unknown-2", "unknown-3"] {
                    try await transaction.savePurchase(
                        Purchase(
                            key: .appStore(id), app: AppID(SimulatedDeployment.bundleID), productID: "pro.monthly",
                            kind: .subscription, environment: .sandbox, state: .active,
                            expiresAt: now - 2 * ServerHarness.day, observedAt: now - 32 * ServerHarness.day))
                }
            }
            var report = CatchUpReport()
            try await h.application.recovery.refreshOverdueSubscriptions(&report)
            #expect(report[.refreshed] == 1)
            #expect(report[.failures] == 1)
            #expect(try await h.entitlements("rita")["pro"]?.active == true)
            // All that were due are counted, past the batch's page of them.
            #expect(report.dueForRefresh == [.overdue: 3, .awaitingNews: 1])
        }
    }

    /// Subscriptions without access that wait on news: an App Store one in billing retry and a
    /// Google one on hold both recover, and a paused Google one is resumed, with each notification
    /// lost. Each is asked of its store once it has been silent for the refresh interval, and its
    /// access comes back; asked about, it is not asked again within the interval.
    @Test(arguments: StorageBackend.available) func silentSubscriptionsWaitingOnNewsAreAskedOfTheirStore(
        _ backend: StorageBackend
    ) async throws {
        try await ServerHarness.run(on: backend) { h in
            let appStore = h.simulator.appStore
            let play = h.simulator.googlePlay
            let retryingToken = try await h.createCustomer("rita")
            let retrying = try appStore.purchase(
                customer: "rita", product: "pro.monthly", appAccountToken: retryingToken)
            let held = try await h.googlePlaySubscription("hugo")
            let paused = try await h.googlePlaySubscription("pia")
            try await h.settle()
            try appStore.failBilling(retrying.originalTransactionId)
            try play.failBilling(held)
            try play.pauseSubscription(paused)
            try await h.advance(days: 34)
            for (customer, state) in [("rita", "billing_retry"), ("hugo", "billing_retry"), ("pia", "paused")] {
                #expect(try await h.entitlements(customer)["pro"]?.state == state, "\(customer)")
            }

            // Each comes back with its notification lost.
            appStore.injectDeliveryFaults([.drop])
            play.injectPushFaults([.drop, .drop])
            try appStore.recoverBilling(retrying.originalTransactionId)
            _ = try play.recoverBilling(held)
            try play.resumeSubscription(paused)
            try await h.advance(days: 0.01)
            for customer in ["rita", "hugo", "pia"] {
                #expect(try await h.entitlements(customer)["pro"]?.active == false, "\(customer)")
            }

            // Google's last news is when its API was last read about each (the pushes of the hold
            // and the pause were read at the end of the advance): not yet silent for the 6-hour
            // refresh interval. The App Store's is its failed renewal, days ago.
            var report = CatchUpReport()
            try await h.application.recovery.refreshOverdueSubscriptions(&report)
            #expect(report[.refreshed] == 1)
            #expect(report[.failures] == 0)
            #expect(try await h.entitlements("rita")["pro"]?.active == true)
            #expect(try await h.entitlements("hugo")["pro"]?.active == false)

            try await h.advance(days: 0.3)
            report = CatchUpReport()
            try await h.application.recovery.refreshOverdueSubscriptions(&report)
            #expect(report[.refreshed] == 2)
            for customer in ["rita", "hugo", "pia"] {
                #expect(try await h.entitlements(customer)["pro"]?.active == true, "\(customer)")
            }
            let history = try await h.storage.transaction { try await $0.stateChanges(of: .googlePlay(held)) }
            #expect(history.last?.cause == ChangeCause(source: .refresh, event: "awaiting news", reference: held))

            // Now active with their access ahead: nothing is asked about again.
            var second = CatchUpReport()
            try await h.application.recovery.refreshOverdueSubscriptions(&second)
            #expect(second[.refreshed] == 0)
        }
    }

    @Test(arguments: StorageBackend.available) func voidsWhosePushWasLostAreFoundInTheVoidedPurchasesList(
        _ backend: StorageBackend
    ) async throws {
        try await ServerHarness.run(on: backend) { h in
            let play = h.simulator.googlePlay
            let options = try await h.googlePlayBuyer("vera")
            let lifetime = try play.purchaseProduct(packageName: Self.package, productId: "lifetime", options: options)
            let gems = try play.purchaseProduct(
                packageName: Self.package, productId: "gems", quantity: 3, options: options)
            try await h.settle()
            #expect(try await h.entitlements("vera")["lifetime"]?.active == true)
            #expect(try await h.balances("vera")["coins"] == 30)

            // Google refunds the lifetime purchase and one of the three gem packs; both pushes are lost.
            play.injectPushFaults([.drop, .drop])
            try play.refund(orderId: try #require(lifetime.orderId))
            try play.refund(orderId: try #require(gems.orderId), quantity: 1)
            try await h.advance(days: 0.1)
            #expect(play.pushes.suffix(2).allSatisfy { $0.status == .dropped })
            #expect(try await h.entitlements("vera")["lifetime"]?.active == true)

            let report = try await h.recover()
            #expect(report[.voided] == 2)
            #expect(report[.failures] == 0)
            let entitlements = try await h.entitlements("vera")
            #expect(entitlements["lifetime"]?.active == false)
            #expect(entitlements["lifetime"]?.state == "revoked")
            #expect(try await h.balances("vera")["coins"] == 20)

            // The same window read again changes nothing.
            let again = try await h.recover()
            #expect(again[.voided] == 0)
            #expect(try await h.balances("vera")["coins"] == 20)
        }
    }

    /// A lost void whose purchase Google's API would not answer for during the catch-up (503s) is
    /// looked for again at the next run, a day later, and applied: the voided purchases list is
    /// read again from where it was before. (The cursor once moved on past it: the void was never
    /// applied, and the refunded purchase kept granting access.)
    @Test(arguments: StorageBackend.available) func aVoidTheStoreWouldNotAnswerForIsLookedForAgain(
        _ backend: StorageBackend
    ) async throws {
        try await ServerHarness.run(on: backend) { h in
            let play = h.simulator.googlePlay
            let options = try await h.googlePlayBuyer("wes")
            let lifetime = try play.purchaseProduct(packageName: Self.package, productId: "lifetime", options: options)
            try await h.settle()
            play.injectPushFaults([.drop])
            try play.refund(orderId: try #require(lifetime.orderId))
            try await h.advance(days: 0.1)
            #expect(try await h.entitlements("wes")["lifetime"]?.active == true)

            h.simulator.faults.add([
                APIFault(
                    pathPrefix: "/androidpublisher/v3/applications/\(Self.package)/purchases/products/", status: 503,
                    times: 100)
            ])
            let first = try await h.recover()
            #expect(first[.voided] == 0)
            #expect(first[.failures] == 1)
            #expect(try await h.entitlements("wes")["lifetime"]?.active == true)

            h.simulator.faults.clear()
            try await h.advance(days: 1)
            let second = try await h.recover()
            #expect(second[.voided] == 1)
            #expect(try await h.entitlements("wes")["lifetime"]?.state == "revoked")
        }
    }

    @Test(arguments: StorageBackend.available) func aFailedAcknowledgementIsRetriedBeforeGoogleRefunds(
        _ backend: StorageBackend
    ) async throws {
        try await Self.aFailedAcknowledgementIsSwept(on: backend, app: .main, among: [.main])
    }

    /// The first acknowledgement of `app`'s purchase is refused; the sweeper acknowledges it with
    /// the purchase's own app long before Google's three days, and the subscription stays active.
    static func aFailedAcknowledgementIsSwept(
        on backend: StorageBackend, app: SimulatedDeployment.App, among apps: [SimulatedDeployment.App]
    ) async throws {
        var processing = ServerHarness.processing
        processing.acknowledgementSweepInterval = 0.1
        try await ServerHarness.run(on: backend, processing: processing, apps: apps) { h in
            let play = h.simulator.googlePlay
            let product = app.product("premium")
            let buyer = try await h.googlePlayBuyer("ada")
            // The server's first acknowledgement is refused with a 400 (not retried by the client).
            h.simulator.faults.add([
                APIFault(
                    pathPrefix:
                        "/androidpublisher/v3/applications/\(app.packageName)/purchases/subscriptions/\(product)/",
                    status: 400)
            ])
            let token = try play.purchaseSubscription(
                packageName: app.packageName, productId: product,
                options: buyer
            ).purchaseToken
            try await h.settle()
            #expect(h.simulator.faults.injectedCount == 1)
            // The sweeper acknowledges it within its interval, long before Google's three days.
            let deadline = ContinuousClock.now.advanced(by: .seconds(60))
            while play.subscription(token)?.acknowledged != true, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(play.subscription(token)?.acknowledged == true)
            // The sweeper records the acknowledgement just after Google answered it.
            func waiting() async throws -> [Purchase] {
                try await h.storage.transaction {
                    try await $0.purchasesNeedingAcknowledgement(store: .googlePlay, after: nil, limit: 10)
                }
            }
            while try await !waiting().isEmpty, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(try await waiting().isEmpty)
            try await h.advance(days: 4)
            #expect(play.subscription(token)?.subscriptionState == "SUBSCRIPTION_STATE_ACTIVE")
            #expect(try await h.entitlements("ada")["pro"]?.active == true)
            #expect(try await waiting().isEmpty)
        }
    }
}
