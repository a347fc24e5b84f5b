import Foundation
import Storekeeper
import StorekeeperStorage
import Testing

/// The operators' console's queries (``ConsoleQueries``) on each backend: lookups by a store id
/// alone, the inbox newest first, the action log, and the overview's counts.
@Suite(.serialized) struct ConsoleQueriesTests {
    static let day: Int64 = 86_400_000
    /// The UTC midnight at or before `baseTime`, plus `days`.
    static func dayStart(_ days: Int64) -> Date {
        date(milliseconds: (1_750_000_000_123 / day + days) * day)
    }

    @Test(arguments: StorageBackend.available)
    func lookupsByAStoreIdAlone(backend: StorageBackend) async throws {
        try await TestDatabase.withFresh(backend) { storage, _ async throws in
            let apple = minimalPurchase(.appStore("same-id"))
            let google = minimalPurchase(.googlePlay("same-id"))
            let other = minimalPurchase(.googlePlay("other"))
            let order = TransactionRecord(
                purchaseKey: .googlePlay("other"),
                fact: TransactionFact(id: "GPA.1234", productID: "coins.100", purchasedAt: at(0), observedAt: at(0)))
            try await storage.transaction { transaction async throws in
                for purchase in [apple, google, other] { try await transaction.savePurchase(purchase) }
                try await transaction.saveTransaction(order)
            }
            try await storage.transaction { transaction async throws in
                #expect(try await transaction.purchases(storeID: "same-id") == [apple, google])
                #expect(try await transaction.purchases(storeID: "other") == [other])
                #expect(try await transaction.purchases(storeID: "missing") == [])
                #expect(try await transaction.transactions(storeID: "GPA.1234") == [order])
                #expect(try await transaction.transactions(storeID: "GPA.9") == [])
            }
        }
    }

    @Test(arguments: StorageBackend.available)
    func recentNotificationsAreNewestFirstAndPaged(backend: StorageBackend) async throws {
        try await TestDatabase.withFresh(backend) { storage, _ async throws in
            try await storage.transaction { transaction async throws in
                for offset in Int64(1)...4 {
                    var notification = makeNotification("n\(offset)", receivedAt: at(offset * 1_000))
                    notification.status = offset == 3 ? .failed : .processed
                    _ = try await transaction.insertNotification(notification)
                }
                // Three that arrived together (one group commit), on both stores.
                for (key, store) in [("t-a", Store.appStore), ("t-b", .appStore), ("t-c", .googlePlay)] {
                    var notification = makeNotification(key, store: store, receivedAt: at(5_000))
                    notification.status = .processed
                    _ = try await transaction.insertNotification(notification)
                }
            }
            try await storage.transaction { transaction async throws in
                let all = try await transaction.recentNotifications(status: .processed, after: nil, limit: 10)
                #expect(all.map(\.dedupeKey) == ["t-c", "t-b", "t-a", "n4", "n2", "n1"])
                var pages: [[String]] = []
                var last: InboxPosition?
                repeat {
                    let page = try await transaction.recentNotifications(status: .processed, after: last, limit: 2)
                    pages.append(page.map(\.dedupeKey))
                    last = page.last.map {
                        InboxPosition(receivedAt: $0.receivedAt, store: $0.store, dedupeKey: $0.dedupeKey)
                    }
                } while last != nil
                #expect(pages == [["t-c", "t-b"], ["t-a", "n4"], ["n2", "n1"], []])
                let failed = try await transaction.recentNotifications(status: .failed, after: nil, limit: 10)
                #expect(failed.map(\.dedupeKey) == ["n3"])
            }
        }
    }

    @Test(arguments: StorageBackend.available)
    func theActionLogKeepsWhoDidWhat(backend: StorageBackend) async throws {
        try await TestDatabase.withFresh(backend) { storage, _ async throws in
            let first = ConsoleAction(
                operatorName: "olga", action: "extend-renewal-date", target: "purchase:app_store:1",
                detail: "5 day(s)", outcome: "extended", at: at(1))
            let second = ConsoleAction(
                operatorName: "rita", action: "retry-notification", target: "notification:google_play:m",
                detail: "", outcome: "scheduled", at: at(2))
            let third = ConsoleAction(
                operatorName: "olga", action: "refresh-purchase", target: "purchase:app_store:1", detail: "",
                outcome: "unchanged", at: at(3))
            try await storage.transaction { transaction async throws in
                for action in [first, second, third] { try await transaction.appendConsoleAction(action) }
            }
            try await storage.transaction { transaction async throws in
                #expect(try await transaction.consoleActions(target: "purchase:app_store:1") == [first, third])
                #expect(try await transaction.consoleActions(target: "nothing") == [])
                #expect(try await transaction.recentConsoleActions(limit: 2) == [third, second])
            }
        }
    }

    /// The backfill folds history (state changes, billing events with their prices, refunds) into
    /// the daily rollup; the recount of states names free trials apart; deltas add up.
    @Test(arguments: StorageBackend.available)
    func theRollupFoldsHistoryAndRecountsStates(backend: StorageBackend) async throws {
        try await TestDatabase.withFresh(backend) { storage, _ async throws in
            func subscription(
                _ key: PurchaseKey, app: String, _ environment: PurchaseEnvironment, _ state: SubscriptionState
            )
                -> Purchase
            {
                var purchase = minimalPurchase(key)
                purchase.kind = .subscription
                purchase.app = AppID(app)
                purchase.environment = environment
                purchase.state = state
                return purchase
            }
            let renewing = subscription(.appStore("A"), app: "com.x", .sandbox, .active)
            let churned = subscription(.googlePlay("B"), app: "com.y", .production, .expired)
            let refunded = subscription(.appStore("C"), app: "com.x", .sandbox, .canceled)
            let retrying = subscription(.appStore("E"), app: "com.x", .production, .billingRetry)
            let trial = subscription(.appStore("F"), app: "com.x", .sandbox, .active)
            var consumable = minimalPurchase(.appStore("D"))
            consumable.app = AppID("com.x")
            func change(_ key: PurchaseKey, _ from: SubscriptionState?, _ to: SubscriptionState, day: Int64)
                -> StateChange
            {
                StateChange(
                    key: key, from: from, to: to, expiresAt: nil, observedAt: Self.dayStart(day).addingTimeInterval(60),
                    cause: ChangeCause(source: .notification))
            }
            func billing(
                _ key: PurchaseKey, _ id: String, day: Int64, revokedDay: Int64? = nil, price: Price? = nil,
                offer: BillingOffer? = nil
            ) -> TransactionRecord {
                TransactionRecord(
                    purchaseKey: key,
                    fact: TransactionFact(
                        id: id, productID: "pro", purchasedAt: Self.dayStart(day).addingTimeInterval(120),
                        revokedAt: revokedDay.map { Self.dayStart($0).addingTimeInterval(180) },
                        refundedFraction: revokedDay == nil ? 0 : 1, observedAt: Self.dayStart(day), price: price,
                        offer: offer))
            }
            let usd = { (micros: Int64) in Price(micros: micros, currency: CurrencyCode("USD")) }
            let changes = [
                change(renewing.key, nil, .active, day: 0), change(churned.key, nil, .active, day: 0),
                change(churned.key, .active, .expired, day: 2), change(consumable.key, nil, .pending, day: 0),
                change(retrying.key, nil, .active, day: -40), change(trial.key, nil, .active, day: 1),
            ]
            let records = [
                billing(renewing.key, "a1", day: 0, price: usd(0), offer: .freeTrial),
                billing(renewing.key, "a2", day: 1, price: usd(9_990_000)),
                billing(
                    refunded.key, "c1", day: 0, revokedDay: 3,
                    price: Price(micros: 4_990_000, currency: CurrencyCode("EUR"))),
                billing(consumable.key, "d1", day: 1, revokedDay: 3),
                billing(retrying.key, "e1", day: -40), billing(retrying.key, "e2", day: 9),
                billing(trial.key, "f1", day: 1, price: usd(0), offer: .freeTrial),
            ]
            let purchases = [renewing, churned, refunded, retrying, consumable, trial]
            try await storage.transaction { transaction async throws in
                for purchase in purchases { try await transaction.savePurchase(purchase) }
                for change in changes { try await transaction.appendStateChange(change) }
                for record in records { try await transaction.saveTransaction(record) }
            }
            // Prices and offers are kept with the billing event.
            let stored = try await storage.transaction { try await $0.transaction(store: .appStore, id: "c1") }
            #expect(stored?.fact.price == Price(micros: 4_990_000, currency: CurrencyCode("EUR")))
            #expect(
                try await storage.transaction { try await $0.transaction(store: .appStore, id: "f1") }?.fact.offer
                    == .freeTrial)

            let covered = try await storage.transaction { try await $0.backfillOverviewRollup() }
            #expect(covered == 0)
            let sandboxX = OverviewSlice(store: .appStore, app: AppID("com.x"), environment: .sandbox)
            let productionX = OverviewSlice(store: .appStore, app: AppID("com.x"), environment: .production)
            let productionY = OverviewSlice(store: .googlePlay, app: AppID("com.y"), environment: .production)
            func row(
                _ slice: OverviewSlice, _ day: Int64, _ kind: OverviewActivity.Kind, _ count: Int,
                currency: String? = nil, amount: Int64 = 0
            ) -> OverviewActivity {
                OverviewActivity(
                    slice: slice, day: Self.dayStart(day), kind: kind, currency: currency.map(CurrencyCode.init),
                    count: count, amountMicros: amount)
            }
            let expected: Set<OverviewActivity> = [
                row(sandboxX, 0, .new, 1), row(sandboxX, 1, .new, 1), row(productionY, 0, .new, 1),
                row(sandboxX, 1, .renewed, 1), row(productionY, 2, .churned, 1),
                // The refunded subscription's and the consumable's billing events.
                row(sandboxX, 3, .refunded, 1), row(productionX, 3, .refunded, 1),
                row(sandboxX, 0, .revenue, 1, currency: "USD", amount: 0),
                row(sandboxX, 1, .revenue, 2, currency: "USD", amount: 9_990_000),
                row(sandboxX, 0, .revenue, 1, currency: "EUR", amount: 4_990_000),
                row(sandboxX, 3, .revenue, 0, currency: "EUR", amount: -4_990_000),
                // No price reported for the consumable.
                row(productionX, 1, .revenue, 1),
            ]
            let range = Self.dayStart(0)..<Self.dayStart(4)
            let folded = try await storage.transaction { try await $0.overviewActivity(in: range) }
            #expect(Set(folded) == expected)

            // Deltas add to what is there, several for one row in one call.
            let deltas = [
                row(sandboxX, 1, .renewed, 1), row(sandboxX, 1, .renewed, 2),
                row(sandboxX, 2, .revenue, 1, currency: "USD", amount: 1_000_000),
            ]
            try await storage.transaction { try await $0.addOverviewActivity(deltas) }
            let added = try await storage.transaction { try await $0.overviewActivity(in: range) }
            #expect(
                Set(added)
                    == expected.subtracting([row(sandboxX, 1, .renewed, 1)]).union([
                        row(sandboxX, 1, .renewed, 4),
                        row(sandboxX, 2, .revenue, 1, currency: "USD", amount: 1_000_000),
                    ]))

            // Counted in a read (beside the writer), then kept as the day's rows, replacing a
            // count kept before.
            let counted = try await storage.read { try await $0.countOverviewStates(day: Self.dayStart(5)) }
            try await storage.transaction {
                try await $0.replaceOverviewStates(
                    [OverviewStateCount(slice: productionX, state: .paused, count: 9, day: Self.dayStart(5))],
                    day: Self.dayStart(5))
            }
            try await storage.transaction { try await $0.replaceOverviewStates(counted, day: Self.dayStart(5)) }
            let states = try await storage.transaction { try await $0.overviewStates(day: Self.dayStart(5)) }
            #expect(Set(counted) == Set(states))
            #expect(
                Set(states) == [
                    OverviewStateCount(slice: sandboxX, state: .active, count: 1, day: Self.dayStart(5)),
                    OverviewStateCount(slice: sandboxX, state: .trial, count: 1, day: Self.dayStart(5)),
                    OverviewStateCount(slice: sandboxX, state: .canceled, count: 1, day: Self.dayStart(5)),
                    OverviewStateCount(slice: productionX, state: .billingRetry, count: 1, day: Self.dayStart(5)),
                ])
        }
    }
}
