import Foundation
import StoreSimulator
import Storekeeper
import StorekeeperServer
import StorekeeperStorage
import Testing

/// The overview's rollup end to end, on both backends: the simulator's purchases → processing →
/// events → ``OverviewRollup`` → the daily rows and the recount, counted once however often the
/// job runs.
@Suite(.serialized) struct OverviewRollupTests {
    /// The rollup's rows over a wide range, summed per kind (and currency for revenue).
    /// How many billing events `totals` counts as revenue, in every currency (and unpriced).
    static func billingEvents(in totals: [String: (count: Int, amount: Int64)]) -> Int {
        totals.filter { $0.key.hasPrefix("revenue") }.values.map(\.count).reduce(0, +)
    }

    static func totals(_ h: ServerHarness) async throws -> [String: (count: Int, amount: Int64)] {
        let range =
            ServerHarness.start.addingTimeInterval(
                -400 * 86_400)..<ServerHarness.start.addingTimeInterval(
                400 * 86_400)
        let rows = try await h.storage.transaction { try await $0.overviewActivity(in: range) }
        var totals: [String: (count: Int, amount: Int64)] = [:]
        for row in rows {
            let key = row.kind == .revenue ? "revenue \(row.currency?.rawValue ?? "unpriced")" : row.kind.rawValue
            let sum = totals[key] ?? (0, 0)
            totals[key] = (sum.count + row.count, sum.amount + row.amountMicros)
        }
        return totals
    }

    static func states(_ h: ServerHarness) async throws -> [OverviewState: Int] {
        let rows = try await h.storage.transaction { try await OverviewRollup.lastRecount(in: $0)?.counts ?? [] }
        return rows.reduce(into: [:]) { $0[$1.state, default: 0] += $1.count }
    }

    @Test(arguments: StorageBackend.available)
    func purchasesRenewalsRefundsAndTrialsAreFoldedOnce(_ backend: StorageBackend) async throws {
        try await ServerHarness.run(on: backend) { h in
            let store = h.simulator.appStore
            let rollup = h.application.rollup
            // A first round on the empty database: everything after is folded from events.
            try await rollup.run()
            let token = try await h.createCustomer("alice")
            let trial = SimulatedOffer.freeTrial("P1W")
            let bought = try store.purchase(
                customer: "alice", product: "pro.monthly", appAccountToken: token, offer: trial)
            try await h.settle()
            try await rollup.run(recount: true)
            var totals = try await Self.totals(h)
            #expect(totals["new"]?.count == 1)
            #expect(totals["renewed"] == nil)
            // The trial's billing event cost nothing, in the product's currency.
            #expect(totals["revenue USD"]?.count == 1 && totals["revenue USD"]?.amount == 0)
            #expect(try await Self.states(h) == [.trial: 1])

            try await h.advance(days: 8)  // the trial ends: renewed at the full price
            let coins = try store.purchase(customer: "alice", product: "coins.100", appAccountToken: token)
            try await h.settle()
            try store.refund(transactionId: coins.transactionId, revocationPercentage: 50_000)
            try await h.advance(days: 0.01)
            try await h.settle()
            try await rollup.run(recount: true)
            totals = try await Self.totals(h)
            #expect(totals["new"]?.count == 1)
            #expect(totals["renewed"]?.count == 1)
            #expect(totals["refunded"]?.count == 1)
            // 9.99 renewal + 0.99 coins − half of 0.99 refunded.
            let revenue = try #require(totals["revenue USD"])
            #expect(revenue.count == 3)
            let expectedAmount: Int64 = 9_990_000 + 990_000 - 495_000
            #expect(revenue.amount == expectedAmount)
            #expect(try await Self.states(h) == [.active: 1])

            // Running again changes nothing: the cursor moved with the counts.
            #expect(try await rollup.run() == 0)
            let again = try await Self.totals(h)
            #expect(again.mapValues { "\($0.count) \($0.amount)" } == totals.mapValues { "\($0.count) \($0.amount)" })

            // The subscription ends: churned once.
            try store.setAutoRenew(bought.originalTransactionId, on: false)
            try await h.advance(days: 0.01)
            try await h.advance(days: 31)
            try await h.settle()
            try await rollup.run(recount: true)
            totals = try await Self.totals(h)
            #expect(totals["churned"]?.count == 1)
            #expect(try await Self.states(h) == [:])
        }
    }

    /// A family member's access to a subscription the purchaser paid for is not a new
    /// subscription, a renewal or revenue of its own: only the purchaser's purchase counts.
    @Test(arguments: StorageBackend.available)
    func familySharedPurchasesAreNotCountedAgain(_ backend: StorageBackend) async throws {
        try await ServerHarness.run(on: backend) { h in
            let store = h.simulator.appStore
            let rollup = h.application.rollup
            try await rollup.run()
            let token = try await h.createCustomer("fay")
            _ = try store.purchase(customer: "fay", product: "pro.monthly", appAccountToken: token)
            _ = try store.purchase(customer: "fay-family", product: "pro.monthly", ownership: .familyShared)
            try await h.settle()
            try await h.advance(days: 31)  // both renewed
            try await h.settle()
            try await rollup.run()
            let totals = try await Self.totals(h)
            #expect(totals["new"]?.count == 1)
            #expect(totals["renewed"]?.count == 1)
            #expect(totals["revenue USD"]?.count == 2 && totals["revenue USD"]?.amount == 2 * 9_990_000)
        }
    }

    /// A change of product is neither a new subscription nor a renewal, on either store, whether
    /// the rollup folds it from events or, on its first round, from the tables: on the App Store
    /// it was counted a renewal (the same purchase billed again), on Google Play a new subscription
    /// (a new purchase replacing the old). Its billing event is revenue.
    @Test(arguments: StorageBackend.available, [true, false])
    func aProductChangeIsNeitherNewNorARenewal(_ backend: StorageBackend, fromEvents: Bool) async throws {
        try await ServerHarness.run(on: backend) { h in
            let rollup = h.application.rollup
            if fromEvents { try await rollup.run() }
            let (original, play) = try await h.subscribeOnBothStores()
            try h.simulator.appStore.upgrade(original, to: "max.monthly")
            try h.simulator.googlePlay.changeSubscription(play, toProductId: "premium.max")
            try await h.settle()
            try await h.advance(days: 0.01)
            try h.simulator.appStore.downgrade(original, to: "pro.monthly")
            try await h.advance(days: 0.01)
            try await h.advance(days: 31)  // the downgrade at Apple's renewal; Google's renewal
            try await h.settle()
            try await rollup.run(recount: true)
            let totals = try await Self.totals(h)
            #expect(totals["new"]?.count == 2)
            // Google's premium.max renewed; Apple's renewal was the downgrade.
            #expect(totals["renewed"]?.count == 1)
            #expect(totals["churned"] == nil)
            // Two purchases, two upgrades, the downgrade and Google's renewal: every billing event.
            #expect(Self.billingEvents(in: totals) == 6)
            #expect(try await Self.states(h) == [.active: 2])
        }
    }

    /// A prepaid plan's top-up (Google Play: a new purchase of the same product and base plan
    /// replacing the old) is a renewal, neither new nor a change of product, from events and from
    /// the tables alike.
    @Test(arguments: StorageBackend.available, [true, false])
    func aTopUpIsARenewal(_ backend: StorageBackend, fromEvents: Bool) async throws {
        try await ServerHarness.run(on: backend) { h in
            let rollup = h.application.rollup
            if fromEvents { try await rollup.run() }
            let prepaid = try await h.googlePlaySubscription("gina", basePlan: "prepaid")
            try await h.settle()
            try await h.advance(days: 10)
            try h.simulator.googlePlay.topUp(prepaid)
            try await h.settle()
            try await h.advance(days: 0.01)
            try await rollup.run(recount: true)
            let totals = try await Self.totals(h)
            #expect(totals["new"]?.count == 1)
            #expect(totals["renewed"]?.count == 1)
            #expect(totals["churned"] == nil)
            #expect(Self.billingEvents(in: totals) == 2)
            #expect(try await Self.states(h) == [.active: 1])
        }
    }

    /// A purchase waiting for its payment is counted when it is paid, as new, and never if its
    /// payment is canceled; from events and from the tables alike. It was new at once, then
    /// renewed when paid or churned when canceled.
    @Test(arguments: StorageBackend.available, [true, false])
    func aPendingPurchaseIsNewWhenPaidAndNeverIfCanceled(_ backend: StorageBackend, fromEvents: Bool) async throws {
        try await ServerHarness.run(on: backend) { h in
            let rollup = h.application.rollup
            if fromEvents { try await rollup.run() }
            let paid = try await h.pendingGooglePlaySubscription("pat")
            let canceled = try await h.pendingGooglePlaySubscription("paz")
            _ = try await h.pendingGooglePlaySubscription("pam", canceledBeforePresented: true)
            try await h.settle()
            try h.simulator.googlePlay.completePendingPurchase(paid)
            try h.simulator.googlePlay.cancelPendingPurchase(canceled)
            try await h.advance(days: 0.01)
            try await rollup.run(recount: true)
            let totals = try await Self.totals(h)
            #expect(totals["new"]?.count == 1)
            #expect(totals["renewed"] == nil)
            #expect(totals["churned"] == nil)
            #expect(Self.billingEvents(in: totals) == 1)
            #expect(try await Self.states(h) == [.active: 1])
        }
    }

    /// History recorded before the rollup existed is folded once by its first round, and the
    /// events of those same changes are not counted again.
    @Test(arguments: StorageBackend.available)
    func historyBeforeTheRollupIsFoldedOnceNotTwice(_ backend: StorageBackend) async throws {
        try await ServerHarness.run(on: backend) { h in
            let store = h.simulator.appStore
            let token = try await h.createCustomer("bob")
            _ = try store.purchase(customer: "bob", product: "pro.monthly", appAccountToken: token)
            // A family member's access to it: not counted again.
            _ = try store.purchase(customer: "bob-family", product: "pro.monthly", ownership: .familyShared)
            try await h.settle()
            try await h.advance(days: 31)  // renewed
            try await h.settle()
            // The first round: the history (one new, one renewal, two priced billing events) is
            // read from the tables, and every event written so far is behind the cursor.
            #expect(try await h.application.rollup.run(recount: true) == 0)
            let totals = try await Self.totals(h)
            #expect(totals["new"]?.count == 1)
            #expect(totals["renewed"]?.count == 1)
            #expect(totals["revenue USD"]?.count == 2 && totals["revenue USD"]?.amount == 2 * 9_990_000)
            // The states count access: the family member's among it.
            #expect(try await Self.states(h) == [.active: 2])
        }
    }
}

extension OverviewRollupTests {
    /// The recount reads every subscription in a counted state, so it counts aside: a write and a
    /// read (the reader that serves customer views) held open meanwhile do not hold it up. Counted
    /// in a write transaction, as before, or on that reader, it waited for them; here they give up
    /// holding after 30 s and say so (rather than waiting for it for ever).
    @Test func theRecountCountsBesideAWriteAndAReadHeldOpen() async throws {
        try await ServerHarness.run(on: .sqlite) { h in
            let token = try await h.createCustomer("alice")
            _ = try h.simulator.appStore.purchase(customer: "alice", product: "pro.monthly", appAccountToken: token)
            try await h.settle()
            let storage = h.storage
            let write = HeldOpen { hold in
                try await storage.transaction { transaction in
                    try await transaction.setCursor("test.held-open", to: "1")
                    return await hold()
                }
            }
            let read = HeldOpen { hold in
                try await storage.read { transaction in
                    _ = try await transaction.customer(CustomerID("alice"))
                    return await hold()
                }
            }
            await write.waitUntilHeld()
            await read.waitUntilHeld()
            let counts = try await h.application.rollup.countStates(at: Date())
            #expect(try await write.release(), "the count waited for the write held open")
            #expect(try await read.release(), "the count waited for the read held open")
            #expect(counts.map(\.state) == [.active] && counts.map(\.count) == [1])
        }
    }
}

/// A transaction held open until released, or for 30 s at most: ``release()`` says whether it was
/// released (true) or gave up (false: whatever was to run beside it waited for it).
final class HeldOpen: Sendable {
    private let task: Task<Bool, any Error>
    private let held: AsyncStream<Void>
    private let releasing: AsyncStream<Void>.Continuation

    init(_ open: @escaping @Sendable (_ hold: @escaping @Sendable () async -> Bool) async throws -> Bool) {
        let (held, holding) = AsyncStream<Void>.makeStream()
        let (released, release) = AsyncStream<Void>.makeStream()
        self.held = held
        releasing = release
        task = Task {
            try await open {
                holding.yield()
                return await withTaskGroup(of: Bool.self) { group in
                    group.addTask {
                        for await _ in released { return true }
                        return false
                    }
                    group.addTask {
                        try? await Task.sleep(for: .seconds(30))
                        return false
                    }
                    let first = await group.next() ?? false
                    group.cancelAll()
                    return first
                }
            }
        }
    }

    func waitUntilHeld() async {
        for await _ in held { break }
    }

    func release() async throws -> Bool {
        releasing.yield()
        return try await task.value
    }
}
