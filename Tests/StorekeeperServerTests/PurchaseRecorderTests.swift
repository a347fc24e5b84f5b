import Foundation
import Storekeeper
import StorekeeperServer
import StorekeeperStorage
import Testing

/// `PurchaseRecorder` over a real SQLite storage: ordering, history, linking, supersession,
/// billing events, consumable credits and settlements.
@Suite struct PurchaseRecorderTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    static let day: TimeInterval = 86_400
    static let app = AppID("com.example.app")
    static let cause = ChangeCause(source: .notification, event: "TEST", reference: "n-1")
    static let catalog = Catalog([
        CatalogProduct(id: "premium.monthly", store: .googlePlay, kind: .subscription, entitlements: ["premium"]),
        CatalogProduct(id: "coins.100", store: .googlePlay, kind: .consumable, balance: "coins", credits: 100),
    ])
    let recorder = PurchaseRecorder(catalog: Self.catalog, access: EnvironmentAccess(deployment: .production))

    static func subscription(
        _ state: SubscriptionState = .active, token: String = "sub-1", at offset: TimeInterval = 0,
        expires: TimeInterval = 30 * day, hint: String? = nil, replaces: PurchaseKey? = nil,
        autoRenew: Bool = true, needsAcknowledgement: Bool = false
    ) -> PurchaseFact {
        PurchaseFact(
            key: .googlePlay(token), app: app, productID: "premium.monthly", kind: .subscription,
            environment: .production, state: state, expiresAt: t0.addingTimeInterval(expires), autoRenew: autoRenew,
            accountHint: hint, replaces: replaces, observedAt: t0.addingTimeInterval(offset),
            needsAcknowledgement: needsAcknowledgement)
    }

    static func coins(
        _ token: String = "coins-1", at offset: TimeInterval = 0, quantity: Int = 2, refunded: Double = 0,
        environment: PurchaseEnvironment = .production, hint: String?
    ) -> PurchaseFact {
        let observed = t0.addingTimeInterval(offset)
        return PurchaseFact(
            key: .googlePlay(token), app: app, productID: "coins.100", kind: .consumable, environment: environment,
            state: refunded == 1 ? .revoked : .active, quantity: quantity, accountHint: hint, observedAt: observed,
            transactions: [
                TransactionFact(
                    id: "GPA.\(token)", productID: "coins.100", purchasedAt: t0, quantity: quantity,
                    revokedAt: refunded > 0 ? observed : nil, refundedFraction: refunded, observedAt: observed)
            ])
    }

    @discardableResult
    func record(
        _ fact: PurchaseFact, _ storage: any Storage, recorder: PurchaseRecorder? = nil
    ) async throws -> PurchaseRecorder.Outcome {
        let recorder = recorder ?? self.recorder
        return try await storage.transaction { try await recorder.record(fact, cause: Self.cause, in: $0) }
    }

    func purchase(_ key: PurchaseKey, _ storage: any Storage) async throws -> Purchase? {
        try await storage.transaction { try await $0.purchase(key) }
    }

    func history(_ key: PurchaseKey, _ storage: any Storage) async throws -> [StateChange] {
        try await storage.transaction { try await $0.stateChanges(of: key) }
    }

    func customer(_ id: String, _ storage: any Storage) async throws -> Customer {
        let customer = Customer(id: CustomerID(id), appAccountToken: UUID(), createdAt: Self.t0)
        try await storage.transaction { try await $0.insertCustomer(customer) }
        return customer
    }

    static func hint(of customer: Customer) -> String { customer.appAccountToken.uuidString.lowercased() }

    // MARK: Ordering

    @Test func aStaleFactChangesNothing() async throws {
        try await TemporaryStorage.withSQLite { storage in
            try await record(Self.subscription(at: 100), storage)
            let outcome = try await record(Self.subscription(.expired, at: 50, expires: -Self.day), storage)
            #expect(!outcome.applied)
            let stored = try #require(try await purchase(.googlePlay("sub-1"), storage))
            #expect(stored.state == .active)
            #expect(stored.expiresAt == Self.t0.addingTimeInterval(30 * Self.day))
            #expect(stored.observedAt == Self.t0.addingTimeInterval(100))
            #expect(try await history(.googlePlay("sub-1"), storage).count == 1)
        }
    }

    @Test func aNewerFactReplacesTheState() async throws {
        try await TemporaryStorage.withSQLite { storage in
            try await record(Self.subscription(at: 50), storage)
            let outcome = try await record(Self.subscription(.expired, at: 100, expires: -Self.day), storage)
            #expect(outcome.applied)
            #expect(try await purchase(.googlePlay("sub-1"), storage)?.state == .expired)
        }
    }

    @Test func aStaleFactStillFillsAMissingApp() async throws {
        try await TemporaryStorage.withSQLite { storage in
            var legacy = Purchase(fact: Self.subscription(at: 100))
            legacy.app = nil
            try await storage.transaction { [legacy] in try await $0.savePurchase(legacy) }
            let outcome = try await record(Self.subscription(.expired, at: 50), storage)
            #expect(!outcome.applied)
            let stored = try #require(try await purchase(.googlePlay("sub-1"), storage))
            #expect(stored.app == Self.app)
            #expect(stored.state == .active)
            #expect(try await history(.googlePlay("sub-1"), storage).isEmpty)
        }
    }

    // MARK: History

    @Test func historyIsAppendedOnlyWhenStateOrExpiryChange() async throws {
        try await TemporaryStorage.withSQLite { storage in
            let key = PurchaseKey.googlePlay("sub-1")
            try await record(Self.subscription(at: 0), storage)
            #expect(try await history(key, storage).count == 1)
            // Newer, but only auto-renew changed.
            try await record(Self.subscription(at: 10, autoRenew: false), storage)
            #expect(try await history(key, storage).count == 1)
            // Renewed: a new expiry.
            try await record(Self.subscription(at: 20, expires: 60 * Self.day), storage)
            #expect(try await history(key, storage).count == 2)
            try await record(Self.subscription(.canceled, at: 30, expires: 60 * Self.day), storage)
            let changes = try await history(key, storage)
            #expect(changes.count == 3)
            #expect(changes.first?.from == nil)
            #expect(changes.first?.to == .active)
            #expect(changes.last?.from == .active)
            #expect(changes.last?.to == .canceled)
            #expect(changes.last?.cause == Self.cause)
            #expect(changes.last?.observedAt == Self.t0.addingTimeInterval(30))
        }
    }

    @Test func aRepeatedFactAppendsNoHistory() async throws {
        try await TemporaryStorage.withSQLite { storage in
            try await record(Self.subscription(at: 0), storage)
            try await record(Self.subscription(at: 0), storage)
            try await record(Self.subscription(at: 0), storage)
            #expect(try await history(.googlePlay("sub-1"), storage).count == 1)
        }
    }

    // MARK: Linking

    @Test func aPurchaseIsLinkedThroughItsAccountHint() async throws {
        try await TemporaryStorage.withSQLite { storage in
            let owner = try await customer("alice", storage)
            let outcome = try await record(Self.subscription(hint: Self.hint(of: owner)), storage)
            #expect(outcome.purchase.customerID == owner.id)
            #expect(try await purchase(.googlePlay("sub-1"), storage)?.customerID == owner.id)
        }
    }

    @Test func aHintNamingNoCustomerLeavesThePurchaseUnlinked() async throws {
        try await TemporaryStorage.withSQLite { storage in
            _ = try await customer("alice", storage)
            try await record(Self.subscription(hint: UUID().uuidString.lowercased()), storage)
            #expect(try await purchase(.googlePlay("sub-1"), storage)?.customerID == nil)
        }
    }

    @Test func claimingLinksPurchasesThatNamedTheCustomersToken() async throws {
        try await TemporaryStorage.withSQLite { storage in
            let token = UUID()
            try await record(Self.subscription(hint: token.uuidString.lowercased()), storage)
            let owner = Customer(id: CustomerID("late"), appAccountToken: token, createdAt: Self.t0)
            let recorder = self.recorder
            try await storage.transaction { transaction in
                try await transaction.insertCustomer(owner)
                try await recorder.claimUnlinked(for: owner, in: transaction, at: Self.t0)
            }
            #expect(try await purchase(.googlePlay("sub-1"), storage)?.customerID == owner.id)
        }
    }

    // MARK: Supersession

    @Test func anUnknownReplacedPurchaseIsStoredAsASupersededPlaceholder() async throws {
        try await TemporaryStorage.withSQLite { storage in
            try await record(Self.subscription(token: "new", at: 10, replaces: .googlePlay("old")), storage)
            let old = try #require(try await purchase(.googlePlay("old"), storage))
            #expect(old.state == .superseded)
            #expect(old.app == Self.app)
            #expect(old.productID == "premium.monthly")
            let changes = try await history(.googlePlay("old"), storage)
            #expect(changes.map(\.to) == [.superseded])
            #expect(changes.first?.from == nil)
            #expect(changes.first?.cause.event == "REPLACED_BY new")
        }
    }

    @Test func aKnownReplacedPurchaseIsSuperseded() async throws {
        try await TemporaryStorage.withSQLite { storage in
            try await record(Self.subscription(token: "old", at: 0), storage)
            try await record(Self.subscription(token: "new", at: 10, replaces: .googlePlay("old")), storage)
            let old = try #require(try await purchase(.googlePlay("old"), storage))
            #expect(old.state == .superseded)
            #expect(old.autoRenew == false)
            #expect(try await history(.googlePlay("old"), storage).map(\.to) == [.active, .superseded])
        }
    }

    @Test func supersessionIsSticky() async throws {
        try await TemporaryStorage.withSQLite { storage in
            try await record(Self.subscription(token: "new", at: 10, replaces: .googlePlay("old")), storage)
            // The old token's own, later word (Google reports it expired, or even active).
            try await record(Self.subscription(.expired, token: "old", at: 20, expires: -Self.day), storage)
            #expect(try await purchase(.googlePlay("old"), storage)?.state == .superseded)
            try await record(Self.subscription(.active, token: "old", at: 30), storage)
            #expect(try await purchase(.googlePlay("old"), storage)?.state == .superseded)
        }
    }

    @Test func theReplacingPurchaseInheritsTheReplacedOnesCustomer() async throws {
        try await TemporaryStorage.withSQLite { storage in
            let owner = try await customer("alice", storage)
            try await record(Self.subscription(token: "old", at: 0, hint: Self.hint(of: owner)), storage)
            try await record(Self.subscription(token: "new", at: 10, replaces: .googlePlay("old")), storage)
            #expect(try await purchase(.googlePlay("new"), storage)?.customerID == owner.id)
        }
    }

    @Test func anObservationSupersedesTheOlderChainItNames() async throws {
        try await TemporaryStorage.withSQLite { storage in
            let recorder = self.recorder
            let observation = PurchaseObservation.purchase(
                Self.subscription(token: "third", at: 10, replaces: .googlePlay("second")),
                supersedes: [.googlePlay("first")])
            _ = try await storage.transaction { try await recorder.record(observation, cause: Self.cause, in: $0) }
            #expect(try await purchase(.googlePlay("second"), storage)?.state == .superseded)
            #expect(try await purchase(.googlePlay("first"), storage)?.state == .superseded)
            #expect(try await purchase(.googlePlay("third"), storage)?.state == .active)
        }
    }

    // MARK: Billing events

    @Test func aBillingEventRecordsOnlyTheTransaction() async throws {
        try await TemporaryStorage.withSQLite { storage in
            let key = PurchaseKey.appStore("1000")
            let event = TransactionFact(
                id: "1001", productID: "premium.monthly", purchasedAt: Self.t0, observedAt: Self.t0)
            let recorder = self.recorder
            let outcome = try await storage.transaction {
                try await recorder.record(.billingEvent(event, of: key), cause: Self.cause, in: $0)
            }
            #expect(outcome == nil)
            #expect(try await purchase(key, storage) == nil)
            #expect(try await history(key, storage).isEmpty)
            let stored = try await storage.transaction { try await $0.transaction(store: .appStore, id: "1001") }
            #expect(stored == TransactionRecord(purchaseKey: key, fact: event))
        }
    }

    @Test func aBillingEventLeavesAKnownPurchaseAsItWas() async throws {
        try await TemporaryStorage.withSQLite { storage in
            try await record(Self.subscription(at: 0), storage)
            let before = try await purchase(.googlePlay("sub-1"), storage)
            let event = TransactionFact(
                id: "GPA.upgrade", productID: "premium.monthly", purchasedAt: Self.t0,
                observedAt: Self.t0.addingTimeInterval(100))
            let recorder = self.recorder
            _ = try await storage.transaction {
                try await recorder.record(.billingEvent(event, of: .googlePlay("sub-1")), cause: Self.cause, in: $0)
            }
            #expect(try await purchase(.googlePlay("sub-1"), storage) == before)
            #expect(try await history(.googlePlay("sub-1"), storage).count == 1)
            let events = try await storage.transaction { try await $0.transactions(of: .googlePlay("sub-1")) }
            #expect(events.map(\.fact.id) == ["GPA.upgrade"])
        }
    }

    // MARK: Consumable credits

    func ledger(_ customer: Customer, _ storage: any Storage) async throws -> [LedgerEntry] {
        try await storage.transaction { try await $0.ledgerEntries(of: customer.id) }
    }

    func coinBalance(_ customer: Customer, _ storage: any Storage) async throws -> Int? {
        try await storage.transaction { try await $0.balances(of: customer.id) }["coins"]
    }

    @Test func consumableCreditsArePostedOnce() async throws {
        try await TemporaryStorage.withSQLite { storage in
            let owner = try await customer("alice", storage)
            try await record(Self.coins(hint: Self.hint(of: owner)), storage)
            try await record(Self.coins(hint: Self.hint(of: owner)), storage)
            try await record(Self.coins(at: 60, hint: Self.hint(of: owner)), storage)
            #expect(try await coinBalance(owner, storage) == 200)
            let entries = try await ledger(owner, storage)
            #expect(entries.map(\.amount) == [200])
            #expect(entries.map(\.reason) == [.purchase])
            #expect(entries.first?.transactionID == "GPA.coins-1")
        }
    }

    @Test func creditsWaitForAnOwner() async throws {
        try await TemporaryStorage.withSQLite { storage in
            try await record(Self.coins(hint: nil), storage)
            let owner = try await customer("alice", storage)
            let recorder = self.recorder
            try await storage.transaction { transaction in
                let unlinked = try #require(try await transaction.purchase(.googlePlay("coins-1")))
                _ = try await recorder.link(unlinked, to: owner.id, in: transaction, at: Self.t0)
            }
            #expect(try await coinBalance(owner, storage) == 200)
        }
    }

    @Test func refundsPostAdjustmentsAndAReversalRestoresThem() async throws {
        try await TemporaryStorage.withSQLite { storage in
            let owner = try await customer("alice", storage)
            let hint = Self.hint(of: owner)
            try await record(Self.coins(hint: hint), storage)
            try await record(Self.coins(at: 10, refunded: 0.25, hint: hint), storage)
            #expect(try await coinBalance(owner, storage) == 150)
            try await record(Self.coins(at: 20, refunded: 1, hint: hint), storage)
            #expect(try await coinBalance(owner, storage) == 0)
            try await record(Self.coins(at: 30, hint: hint), storage)
            #expect(try await coinBalance(owner, storage) == 200)
            let entries = try await ledger(owner, storage)
            #expect(entries.map(\.amount) == [200, -50, -150, 200])
            #expect(entries.map(\.reason).prefix(3) == [.purchase, .refundAdjustment, .refundAdjustment])
        }
    }

    @Test func aReversalAfterAFullRefundIsARefundAdjustment() async throws {
        try await TemporaryStorage.withSQLite { storage in
            let owner = try await customer("alice", storage)
            let hint = Self.hint(of: owner)
            try await record(Self.coins(hint: hint), storage)
            try await record(Self.coins(at: 10, refunded: 1, hint: hint), storage)
            try await record(Self.coins(at: 20, hint: hint), storage)
            let entries = try await ledger(owner, storage)
            #expect(entries.map(\.amount) == [200, -200, 200])
            // After a full refund the posted total is 0 again: the reversal is still an adjustment,
            // not a second purchase of the same transaction.
            #expect(entries.map(\.reason) == [.purchase, .refundAdjustment, .refundAdjustment])
        }
    }

    @Test func aSandboxPurchaseCreditsNothingWhereSandboxMayNotGrantAccess() async throws {
        try await TemporaryStorage.withSQLite { storage in
            let owner = try await customer("alice", storage)
            try await record(Self.coins(environment: .sandbox, hint: Self.hint(of: owner)), storage)
            #expect(try await coinBalance(owner, storage) == nil)
            #expect(try await ledger(owner, storage).isEmpty)
            // The purchase itself is tracked like any other.
            #expect(try await purchase(.googlePlay("coins-1"), storage)?.customerID == owner.id)
        }
    }

    @Test func aSandboxPurchaseCreditsWhereItsAppLetsSandboxGrantAccess() async throws {
        try await TemporaryStorage.withSQLite { storage in
            let owner = try await customer("alice", storage)
            let admitting = PurchaseRecorder(
                catalog: Self.catalog,
                access: EnvironmentAccess(
                    deployment: .production, sandboxGrantingApps: [StoreApp(.googlePlay, Self.app)]))
            try await record(
                Self.coins(environment: .sandbox, hint: Self.hint(of: owner)), storage, recorder: admitting)
            #expect(try await coinBalance(owner, storage) == 200)
        }
    }

    // MARK: Settlements

    @Test func anAcknowledgementClearsNeedsAcknowledgement() async throws {
        try await TemporaryStorage.withSQLite { storage in
            try await record(Self.subscription(needsAcknowledgement: true), storage)
            #expect(try await purchase(.googlePlay("sub-1"), storage)?.needsAcknowledgement == true)
            let recorder = self.recorder
            try await storage.transaction { try await recorder.record(.acknowledged, of: .googlePlay("sub-1"), in: $0) }
            #expect(try await purchase(.googlePlay("sub-1"), storage)?.needsAcknowledgement == false)
        }
    }

    @Test func aSetAccountTokenBecomesTheAccountHint() async throws {
        try await TemporaryStorage.withSQLite { storage in
            try await record(Self.subscription(), storage)
            let token = UUID().uuidString.lowercased()
            let recorder = self.recorder
            try await storage.transaction {
                try await recorder.record(.accountTokenSet(token), of: .googlePlay("sub-1"), in: $0)
            }
            #expect(try await purchase(.googlePlay("sub-1"), storage)?.accountHint == token)
        }
    }

    @Test func settlingAnUnknownPurchaseStoresNothing() async throws {
        try await TemporaryStorage.withSQLite { storage in
            let recorder = self.recorder
            try await storage.transaction { try await recorder.record(.acknowledged, of: .googlePlay("none"), in: $0) }
            #expect(try await purchase(.googlePlay("none"), storage) == nil)
        }
    }
}
