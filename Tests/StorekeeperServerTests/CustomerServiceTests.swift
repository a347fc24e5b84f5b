import Foundation
import Storekeeper
import StorekeeperStorage
import Testing

@testable import StorekeeperServer

/// `CustomerService` as `StorekeeperApplication` builds it (no apps configured) over SQLite:
/// customers and their tokens, debits, and the ownership policies.
@Suite struct CustomerServiceTests {
    static let day: TimeInterval = 86_400
    static let catalog = Catalog([
        CatalogProduct(id: "premium.monthly", store: .googlePlay, kind: .subscription, entitlements: ["premium"]),
        CatalogProduct(id: "coins.100", store: .googlePlay, kind: .consumable, balance: "coins", credits: 100),
    ])
    static let cause = ChangeCause(source: .submission, event: "google_play")

    func withService(
        policy: OwnershipPolicy = .keep, _ body: (CustomerService, any Storage) async throws -> Void
    ) async throws {
        try await TemporaryStorage.withSQLiteFile { storage, path in
            let configuration = StorekeeperConfiguration(
                storageURL: path, policies: Policies(ownershipConflict: policy), apiKeys: [], apps: [],
                catalog: Self.catalog)
            let application = try StorekeeperApplication(
                configuration: configuration, storage: storage, logger: TemporaryStorage.quietLogger)
            try await body(application.customers, storage)
        }
    }

    static func subscription(_ token: String = "sub-1", active: Bool = true) -> PurchaseFact {
        let now = Date()
        return PurchaseFact(
            key: .googlePlay(token), app: AppID("com.example.app"), productID: "premium.monthly", kind: .subscription,
            environment: .production, state: active ? .active : .expired,
            expiresAt: now.addingTimeInterval(active ? 30 * day : -day), autoRenew: active, observedAt: now)
    }

    /// Credits `coins` to the customer through a consumable purchase naming its token.
    func credit(_ coins: Int, to customer: Customer, _ service: CustomerService) async throws {
        let now = Date()
        let fact = PurchaseFact(
            key: .googlePlay("coins-\(UUID())"), app: AppID("com.example.app"), productID: "coins.100",
            kind: .consumable, environment: .production, state: .active, quantity: coins / 100,
            accountHint: customer.appAccountToken.uuidString.lowercased(), observedAt: now,
            transactions: [
                TransactionFact(
                    id: "GPA.\(UUID())", productID: "coins.100", purchasedAt: now, quantity: coins / 100,
                    observedAt: now)
            ])
        let recorder = service.recorder
        _ = try await service.storage.transaction { try await recorder.record(fact, cause: Self.cause, in: $0) }
    }

    func ledger(_ id: CustomerID, _ storage: any Storage) async throws -> [LedgerEntry] {
        try await storage.transaction { try await $0.ledgerEntries(of: id) }
    }

    // MARK: Customers

    @Test func createOrFetchIssuesOneTokenPerCustomer() async throws {
        try await withService { service, _ in
            let first = try await service.createOrFetch(CustomerID("alice"))
            let again = try await service.createOrFetch(CustomerID("alice"))
            let other = try await service.createOrFetch(CustomerID("bob"))
            #expect(first.created)
            #expect(!again.created)
            #expect(again.customer.id == first.customer.id)
            #expect(again.customer.appAccountToken == first.customer.appAccountToken)
            #expect(other.customer.appAccountToken != first.customer.appAccountToken)
        }
    }

    @Test func aPurchaseNamingTheIssuedTokenIsTheCustomers() async throws {
        try await withService { service, storage in
            let (alice, _) = try await service.createOrFetch(CustomerID("alice"))
            var fact = Self.subscription()
            fact.accountHint = alice.appAccountToken.uuidString.lowercased()
            let recorder = service.recorder
            _ = try await storage.transaction { [fact] in
                try await recorder.record(fact, cause: Self.cause, in: $0)
            }
            let view = try #require(try await service.view(of: alice.id))
            #expect(view.customerID == alice.id)
            let purchases = try await storage.transaction { try await $0.purchases(of: alice.id) }
            #expect(purchases.map(\.key) == [.googlePlay("sub-1")])
        }
    }

    @Test func theViewOfAnUnknownCustomerIsNil() async throws {
        try await withService { service, _ in
            let view = try await service.view(of: CustomerID("nobody"))
            #expect(view == nil)
        }
    }

    // MARK: Debits

    @Test func aRepeatedDebitReturnsTheSameEntryAndBalance() async throws {
        try await withService { service, storage in
            let (alice, _) = try await service.createOrFetch(CustomerID("alice"))
            try await credit(100, to: alice, service)
            let first = try await service.debit(alice.id, balance: "coins", amount: 30, idempotencyKey: "k1")
            let again = try await service.debit(alice.id, balance: "coins", amount: 30, idempotencyKey: "k1")
            #expect(first.balance == 70)
            #expect(again.balance == 70)
            #expect(again.entry.idempotencyKey == first.entry.idempotencyKey)
            #expect(again.entry.amount == -30)
            #expect(first.entry.amount == -30)
            #expect(again.entry.reason == .debit)
            // Storage keeps whole milliseconds; the first answer carries the clock's own reading.
            #expect(abs(again.entry.createdAt.timeIntervalSince(first.entry.createdAt)) < 0.001)
            #expect(try await ledger(alice.id, storage).filter { $0.reason == .debit }.count == 1)
        }
    }

    @Test func aKeyReusedForAnotherAmountIsRefused() async throws {
        try await withService { service, storage in
            let (alice, _) = try await service.createOrFetch(CustomerID("alice"))
            try await credit(100, to: alice, service)
            _ = try await service.debit(alice.id, balance: "coins", amount: 30, idempotencyKey: "k1")
            let error = await #expect(throws: ServerError.self) {
                try await service.debit(alice.id, balance: "coins", amount: 40, idempotencyKey: "k1")
            }
            #expect(error?.code == .idempotencyKeyReused)
            #expect(try await storage.transaction { try await $0.balances(of: alice.id) }["coins"] == 70)
        }
    }

    @Test func aDebitBeyondTheBalanceIsRefusedAndWritesNothing() async throws {
        try await withService { service, storage in
            let (alice, _) = try await service.createOrFetch(CustomerID("alice"))
            try await credit(100, to: alice, service)
            let before = try await ledger(alice.id, storage)
            let error = await #expect(throws: ServerError.self) {
                try await service.debit(alice.id, balance: "coins", amount: 101, idempotencyKey: "k1")
            }
            #expect(error?.code == .insufficientBalance)
            #expect(try await ledger(alice.id, storage) == before)
            // Nothing was kept under the key: it can still debit what the balance holds.
            let debited = try await service.debit(alice.id, balance: "coins", amount: 100, idempotencyKey: "k1")
            #expect(debited.balance == 0)
        }
    }

    @Test func aDebitOfABalanceNeverCreditedIsRefused() async throws {
        try await withService { service, storage in
            let (alice, _) = try await service.createOrFetch(CustomerID("alice"))
            let error = await #expect(throws: ServerError.self) {
                try await service.debit(alice.id, balance: "gems", amount: 1, idempotencyKey: "k1")
            }
            #expect(error?.code == .insufficientBalance)
            #expect(try await ledger(alice.id, storage).isEmpty)
        }
    }

    @Test func debitingAnUnknownCustomerIsRefused() async throws {
        try await withService { service, _ in
            let error = await #expect(throws: ServerError.self) {
                try await service.debit(CustomerID("nobody"), balance: "coins", amount: 1, idempotencyKey: "k1")
            }
            #expect(error?.code == .customerNotFound)
        }
    }

    // MARK: Ownership

    func transfers(_ key: PurchaseKey, _ storage: any Storage) async throws -> [OwnershipTransfer] {
        try await storage.transaction { try await $0.transfers(of: key) }
    }

    func owner(_ key: PurchaseKey, _ storage: any Storage) async throws -> CustomerID? {
        try await storage.transaction { try await $0.purchase(key) }?.customerID
    }

    @Test func anUnlinkedSubmittedPurchaseIsLinkedToThePresenter() async throws {
        try await withService { service, storage in
            let (alice, _) = try await service.createOrFetch(CustomerID("alice"))
            let (view, purchase) = try await service.submit(
                .purchase(Self.subscription()), cause: Self.cause, for: alice.id)
            #expect(purchase.customerID == alice.id)
            #expect(view.customerID == alice.id)
            #expect(try await owner(.googlePlay("sub-1"), storage) == alice.id)
            #expect(try await transfers(.googlePlay("sub-1"), storage).isEmpty)
        }
    }

    @Test func submittingForAnUnknownCustomerIsRefused() async throws {
        try await withService { service, storage in
            let error = await #expect(throws: ServerError.self) {
                try await service.submit(.purchase(Self.subscription()), cause: Self.cause, for: CustomerID("nobody"))
            }
            #expect(error?.code == .customerNotFound)
            let stored = try await storage.transaction { try await $0.purchase(.googlePlay("sub-1")) }
            #expect(stored == nil)
        }
    }

    @Test func keepRefusesAnotherCustomersPurchase() async throws {
        try await withService(policy: .keep) { service, storage in
            let (alice, _) = try await service.createOrFetch(CustomerID("alice"))
            let (bob, _) = try await service.createOrFetch(CustomerID("bob"))
            _ = try await service.submit(.purchase(Self.subscription()), cause: Self.cause, for: alice.id)
            let error = await #expect(throws: ServerError.self) {
                try await service.submit(.purchase(Self.subscription()), cause: Self.cause, for: bob.id)
            }
            #expect(error?.code == .ownershipConflict)
            #expect(try await owner(.googlePlay("sub-1"), storage) == alice.id)
            #expect(try await transfers(.googlePlay("sub-1"), storage).isEmpty)
        }
    }

    @Test func transferMovesThePurchaseAndRecordsIt() async throws {
        try await withService(policy: .transfer) { service, storage in
            let (alice, _) = try await service.createOrFetch(CustomerID("alice"))
            let (bob, _) = try await service.createOrFetch(CustomerID("bob"))
            _ = try await service.submit(.purchase(Self.subscription()), cause: Self.cause, for: alice.id)
            let (_, moved) = try await service.submit(.purchase(Self.subscription()), cause: Self.cause, for: bob.id)
            #expect(moved.customerID == bob.id)
            #expect(try await owner(.googlePlay("sub-1"), storage) == bob.id)
            let recorded = try await transfers(.googlePlay("sub-1"), storage)
            #expect(recorded.count == 1)
            #expect(recorded.first?.from == alice.id)
            #expect(recorded.first?.to == bob.id)
            #expect(recorded.first?.policy == .transfer)
        }
    }

    @Test func presentingOnesOwnPurchaseAgainRecordsNoTransfer() async throws {
        try await withService(policy: .transfer) { service, storage in
            let (alice, _) = try await service.createOrFetch(CustomerID("alice"))
            _ = try await service.submit(.purchase(Self.subscription()), cause: Self.cause, for: alice.id)
            _ = try await service.submit(.purchase(Self.subscription()), cause: Self.cause, for: alice.id)
            #expect(try await transfers(.googlePlay("sub-1"), storage).isEmpty)
        }
    }

    @Test func transferIfNoActiveKeepsAPurchaseThatStillGrantsAccess() async throws {
        try await withService(policy: .transferIfNoActive) { service, storage in
            let (alice, _) = try await service.createOrFetch(CustomerID("alice"))
            let (bob, _) = try await service.createOrFetch(CustomerID("bob"))
            _ = try await service.submit(.purchase(Self.subscription()), cause: Self.cause, for: alice.id)
            let error = await #expect(throws: ServerError.self) {
                try await service.submit(.purchase(Self.subscription()), cause: Self.cause, for: bob.id)
            }
            #expect(error?.code == .ownershipConflict)
            #expect(try await owner(.googlePlay("sub-1"), storage) == alice.id)
        }
    }

    @Test func transferIfNoActiveMovesALapsedPurchase() async throws {
        try await withService(policy: .transferIfNoActive) { service, storage in
            let (alice, _) = try await service.createOrFetch(CustomerID("alice"))
            let (bob, _) = try await service.createOrFetch(CustomerID("bob"))
            let lapsed = Self.subscription(active: false)
            _ = try await service.submit(.purchase(lapsed), cause: Self.cause, for: alice.id)
            _ = try await service.submit(.purchase(lapsed), cause: Self.cause, for: bob.id)
            #expect(try await owner(.googlePlay("sub-1"), storage) == bob.id)
            let recorded = try await transfers(.googlePlay("sub-1"), storage)
            #expect(recorded.map(\.from) == [alice.id])
            #expect(recorded.map(\.policy) == [.transferIfNoActive])
        }
    }

    @Test func aBillingEventAloneIsNotASubmission() async throws {
        try await withService { service, _ in
            let (alice, _) = try await service.createOrFetch(CustomerID("alice"))
            let event = TransactionFact(
                id: "1001", productID: "premium.monthly", purchasedAt: Date(), observedAt: Date())
            let error = await #expect(throws: ServerError.self) {
                try await service.submit(.billingEvent(event, of: .appStore("1000")), cause: Self.cause, for: alice.id)
            }
            #expect(error?.code == .malformedSubmission)
        }
    }
}
