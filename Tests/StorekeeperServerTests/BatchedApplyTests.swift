import Foundation
import Logging
import StoreCore
import Storekeeper
import StorekeeperServer
import StorekeeperStorage
import Testing

/// Facts recorded in one transaction that read ahead (``StorageTransaction/beginBatch(_:)``) leave
/// exactly what recording each in a transaction of its own leaves — purchases, billing events,
/// history, ledger, balances and events — on both backends; and a batch whose kept writes turn out
/// to conflict fails whole, changing nothing.
@Suite struct BatchedApplyTests {
    typealias Facts = PurchaseRecorderTests

    struct FixedClock: WallClock {
        func now() -> Date { Facts.t0.addingTimeInterval(100 * Facts.day) }
    }

    static let catalog = Catalog([
        CatalogProduct(id: "premium.monthly", store: .googlePlay, kind: .subscription, entitlements: ["premium"]),
        CatalogProduct(id: "premium.yearly", store: .googlePlay, kind: .subscription, entitlements: ["premium"]),
        CatalogProduct(id: "coins.100", store: .googlePlay, kind: .consumable, balance: "coins", credits: 100),
    ])
    let recorder = PurchaseRecorder(
        catalog: Self.catalog, access: EnvironmentAccess(deployment: .production), clock: FixedClock())

    /// A story in which later facts depend on what earlier ones wrote: linking, renewals, a stale
    /// fact, a repeated one, credits, a prorated refund and its reversal, an upgrade, a chain,
    /// billing events alone, and a purchase for a customer who does not exist.
    static func story(alice: Customer, bob: Customer) -> [PurchaseObservation] {
        let (a, b) = (Facts.hint(of: alice), Facts.hint(of: bob))
        var yearly = Facts.subscription(
            token: "sub-2", at: 50, expires: 365 * Facts.day, hint: a, replaces: .googlePlay("sub-1"))
        yearly.productID = "premium.yearly"
        var chained = Facts.subscription(token: "sub-4", at: 70, hint: b, replaces: .googlePlay("sub-3"))
        chained.productID = "premium.yearly"
        return [
            .purchase(Facts.subscription(token: "sub-1", at: 0, hint: a)),
            .purchase(Facts.coins("coins-1", at: 10, hint: a)),
            .purchase(Facts.coins("coins-2", at: 20, hint: b)),
            .purchase(Facts.subscription(token: "sub-1", at: 30, expires: 60 * Facts.day, hint: a)),
            .purchase(Facts.subscription(.expired, token: "sub-1", at: 5, expires: -Facts.day, hint: a)),
            .purchase(Facts.coins("coins-1", at: 40, refunded: 0.5, hint: a)),
            .purchase(Facts.coins("coins-1", at: 40, refunded: 0.5, hint: a)),
            .purchase(yearly),
            .billingEvent(
                TransactionFact(
                    id: "GPA.sub-2..0", productID: "premium.yearly", purchasedAt: Facts.t0.addingTimeInterval(50.0004),
                    observedAt: Facts.t0.addingTimeInterval(50)), of: .googlePlay("sub-2")),
            .purchase(Facts.coins("coins-3", at: 55, hint: UUID().uuidString.lowercased())),
            .purchase(Facts.coins("coins-1", at: 60, refunded: 0, hint: a)),
            .purchase(chained, supersedes: [.googlePlay("sub-0")]),
            .purchase(Facts.coins("coins-2", at: 80, quantity: 3, hint: b)),
        ]
    }

    @Test(arguments: StorageBackend.available) func aBatchLeavesWhatOneByOneLeaves(_ backend: StorageBackend)
        async throws
    {
        let alice = Customer(id: CustomerID("alice"), appAccountToken: UUID(), createdAt: Facts.t0)
        let bob = Customer(id: CustomerID("bob"), appAccountToken: UUID(), createdAt: Facts.t0)
        let story = Self.story(alice: alice, bob: bob)
        let recorder = self.recorder
        let oneByOne = try await Self.withStorage(backend) { storage in
            try await storage.transaction { [alice, bob] in
                try await $0.insertCustomer(alice)
                try await $0.insertCustomer(bob)
            }
            for observation in story {
                try await storage.transaction { _ = try await recorder.record(observation, cause: Facts.cause, in: $0) }
            }
            return try await Self.snapshot(storage, customers: [alice.id, bob.id])
        }
        // All in one batch, and in two batches (the second reading ahead what the first wrote).
        for split in [story.count, 6] {
            let batched = try await Self.withStorage(backend) { storage in
                try await storage.transaction { [alice, bob] in
                    try await $0.insertCustomer(alice)
                    try await $0.insertCustomer(bob)
                }
                for part in [Array(story.prefix(split)), Array(story.dropFirst(split))] where !part.isEmpty {
                    try await storage.transaction { transaction in
                        try await transaction.beginBatch(recorder.reads(of: part))
                        for observation in part {
                            _ = try await recorder.record(observation, cause: Facts.cause, in: transaction)
                        }
                    }
                }
                return try await Self.snapshot(storage, customers: [alice.id, bob.id])
            }
            #expect(batched.purchases == oneByOne.purchases, "split after \(split)")
            #expect(batched.transactions == oneByOne.transactions, "split after \(split)")
            #expect(batched.history == oneByOne.history, "split after \(split)")
            #expect(batched.ledger == oneByOne.ledger, "split after \(split)")
            #expect(batched.balances == oneByOne.balances, "split after \(split)")
            #expect(batched.events == oneByOne.events, "split after \(split)")
        }
        // The story is not trivial: it credits, refunds, links and supersedes.
        #expect(oneByOne.balances[alice.id]?["coins"] == 200)
        #expect(oneByOne.balances[bob.id]?["coins"] == 300)
        #expect(oneByOne.purchases.first { $0.key == .googlePlay("sub-1") }?.state == .superseded)
        #expect(oneByOne.purchases.first { $0.key == .googlePlay("sub-0") }?.state == .superseded)
        #expect(oneByOne.events.count > 10)
    }

    @Test(arguments: StorageBackend.available) func aBatchWhoseLedgerKeyIsTakenFailsWholeAndChangesNothing(
        _ backend: StorageBackend
    ) async throws {
        let alice = Customer(id: CustomerID("alice"), appAccountToken: UUID(), createdAt: Facts.t0)
        let fact = Facts.coins("coins-9", at: 10, hint: Facts.hint(of: alice))
        let recorder = self.recorder
        try await Self.withStorage(backend) { storage in
            // An entry already holds the key the credit would post under (not under its
            // transaction, so the batch cannot know it is there).
            let millis = Int64((fact.observedAt.timeIntervalSince1970 * 1000).rounded())
            try await storage.transaction { [alice] in
                try await $0.insertCustomer(alice)
                _ = try await $0.appendLedgerEntry(
                    LedgerEntry(
                        customerID: alice.id, balance: "coins", amount: 7, reason: .purchase,
                        idempotencyKey: "google_play:GPA.coins-9:\(millis):200", createdAt: Facts.t0))
            }
            let before = try await Self.snapshot(storage, customers: [alice.id])
            await #expect {
                try await storage.transaction { transaction in
                    try await transaction.beginBatch(recorder.reads(of: [.purchase(fact)]))
                    _ = try await recorder.record(.purchase(fact), cause: Facts.cause, in: transaction)
                }
            } throws: { ($0 as? StorageError)?.reason == .conflict }
            #expect(try await Self.snapshot(storage, customers: [alice.id]) == before)
            // Without reading ahead, the standing entry is found and the purchase recorded.
            try await storage.transaction { _ = try await recorder.record(.purchase(fact), cause: Facts.cause, in: $0) }
            let after = try await Self.snapshot(storage, customers: [alice.id])
            #expect(after.purchases.map(\.key) == [fact.key])
            #expect(after.balances[alice.id]?["coins"] == 7)
        }
    }

    // MARK: Helpers

    struct Snapshot: Equatable {
        var purchases: [Purchase] = []
        var transactions: [TransactionRecord] = []
        var history: [StateChange] = []
        var ledger: [LedgerEntry] = []
        var balances: [CustomerID: [String: Int]] = [:]
        /// The events without their ids (random), in order.
        var events: [Event] = []
    }

    static let zeroID = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))

    static let keys: [PurchaseKey] = [
        "sub-0", "sub-1", "sub-2", "sub-3", "sub-4", "coins-1", "coins-2", "coins-3", "coins-9",
    ]
    .map(PurchaseKey.googlePlay)

    static func snapshot(_ storage: any Storage, customers: [CustomerID]) async throws -> Snapshot {
        try await storage.transaction { transaction in
            var snapshot = Snapshot()
            for key in keys {
                if let purchase = try await transaction.purchase(key) { snapshot.purchases.append(purchase) }
                snapshot.transactions += try await transaction.transactions(of: key)
                snapshot.history += try await transaction.stateChanges(of: key)
            }
            for customer in customers {
                snapshot.ledger += try await transaction.ledgerEntries(of: customer)
                snapshot.balances[customer] = try await transaction.balances(of: customer)
            }
            _ = try await transaction.sequenceEvents(limit: 10_000)
            for stored in try await transaction.events(
                after: 0, customer: nil, types: Set(EventType.all), limit: 10_000)
            {
                var event = try EventWriter.decoder.decode(Event.self, from: stored.body)
                event.id = Self.zeroID
                snapshot.events.append(event)
            }
            return snapshot
        }
    }

    static func withStorage<Result: Sendable>(
        _ backend: StorageBackend, _ body: (any Storage) async throws -> Result
    ) async throws -> Result {
        try await backend.withFreshDatabase { try await withStorage(at: $0, body) }
    }

    static func withStorage<Result: Sendable>(at url: String, _ body: (any Storage) async throws -> Result)
        async throws -> Result
    {
        let storage = try await StorageFactory.open(url, logger: TemporaryStorage.quietLogger)
        do {
            try await storage.migrate()
            let result = try await body(storage)
            try await storage.close()
            return result
        } catch {
            try? await storage.close()
            throw error
        }
    }
}
