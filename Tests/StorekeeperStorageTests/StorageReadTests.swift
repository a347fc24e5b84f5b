import Foundation
import Storekeeper
import TestSupport
import Testing

@testable import StorekeeperStorage

/// `Storage.read`: committed data only, and no waiting behind a write in progress.
@Suite struct StorageReadTests {
    // A read that waited for the writer would wait forever here: the write ends only after it. The
    // deadline starts at the read; a fresh database under the whole suite's load may take a while.
    @Test(arguments: StorageBackend.available)
    func aReadSeesTheLastCommitAndDoesNotWaitForAWriteInProgress(_ backend: StorageBackend) async throws {
        try await TestDatabase.withFresh(backend) { storage, _ in
            let committed = Customer(id: CustomerID("committed"), appAccountToken: UUID(), createdAt: Date())
            try await storage.transaction { try await $0.insertCustomer(committed) }
            let pending = Customer(id: CustomerID("pending"), appAccountToken: UUID(), createdAt: Date())
            let (inserted, insertedSignal) = AsyncStream.makeStream(of: Void.self)
            let (release, releaseSignal) = AsyncStream.makeStream(of: Void.self)
            // A write that holds its transaction open (on SQLite, the one writer) until released.
            let writer = Task {
                try await storage.transaction { transaction in
                    try await transaction.insertCustomer(pending)
                    insertedSignal.yield()
                    for await _ in release { break }
                }
            }
            for await _ in inserted { break }
            let reading = Task {
                try await storage.read { transaction in
                    (try await transaction.customer(committed.id), try await transaction.customer(pending.id))
                }
            }
            guard let outcome = await reading.result(within: .seconds(60)) else {
                reading.cancel()
                releaseSignal.yield()
                Issue.record("the read waited for the write in progress")
                _ = try? await writer.value
                return
            }
            let seen = try outcome.get()
            #expect(seen.0?.id == committed.id)
            #expect(seen.1 == nil, "a read sees no uncommitted write")
            releaseSignal.yield()
            try await writer.value
            let after = try await storage.read { try await $0.customer(pending.id) }
            #expect(after?.id == pending.id, "a read after the commit sees it")
        }
    }

    @Test func aWriteInAReadFailsOnSQLiteAndWritesNothing() async throws {
        try await TestDatabase.withFresh(.sqlite) { storage, _ in
            let customer = Customer(id: CustomerID("written"), appAccountToken: UUID(), createdAt: Date())
            await #expect(throws: StorageError.self) {
                try await storage.read { try await $0.insertCustomer(customer) }
            }
            let stored = try await storage.transaction { try await $0.customer(customer.id) }
            #expect(stored == nil)
        }
    }

    /// The reader reads the file through a memory map (`PRAGMA mmap_size`); the writer does not.
    @Test func theReaderMapsTheFileAndTheWriterDoesNot() async throws {
        @Sendable func mappedBytes(_ transaction: any StorageTransaction) async throws -> Int? {
            let database = try #require(transaction as? SQLStorageTransaction).database
            return try await database.raw("PRAGMA mmap_size").first()?.decode(column: "mmap_size", as: Int.self)
        }
        try await TestDatabase.withFresh(.sqlite) { storage, _ in
            let reader = try await storage.read { try await mappedBytes($0) }
            let writer = try await storage.transaction { try await mappedBytes($0) }
            #expect(reader == 2_147_418_112)
            #expect(writer == 0)
        }
    }

    /// The writer keeps statement journals and transient tables in memory, and a page cache small
    /// enough that the walk SQLite makes of it after some commits stays cheap (docs/storage.md).
    @Test func theWritersTemporaryDataIsInMemoryAndItsCacheIs16MiB() async throws {
        @Sendable func pragma(_ name: String, _ transaction: any StorageTransaction) async throws -> Int? {
            let database = try #require(transaction as? SQLStorageTransaction).database
            return try await database.raw("PRAGMA \(unsafeRaw: name)").first()?.decode(column: name, as: Int.self)
        }
        try await TestDatabase.withFresh(.sqlite) { storage, _ in
            let temporaryStore = try await storage.transaction { try await pragma("temp_store", $0) }
            let cacheSize = try await storage.transaction { try await pragma("cache_size", $0) }
            #expect(temporaryStore == 2, "2 is MEMORY")
            #expect(cacheSize == -16384, "negative: in KiB")
        }
    }

    /// What the customer view reads, together (on PostgreSQL one statement joining four tables):
    /// the same answers as reading each part alone.
    @Test(arguments: StorageBackend.available)
    func aCustomersSnapshotHoldsTheCustomerItsConsentPurchasesAndBalances(_ backend: StorageBackend)
        async throws
    {
        try await TestDatabase.withFresh(backend) { storage, _ in
            let customer = makeCustomer("consenting")
            let other = makeCustomer("other")
            try await storage.transaction { transaction in
                try await transaction.insertCustomer(customer)
                try await transaction.insertCustomer(other)
            }
            let bare = try await storage.read { try await $0.customerSnapshot(customer.id) }
            #expect(
                bare
                    == CustomerSnapshot(customer: customer, consent: nil, entitlementPurchases: [], balances: [:]))

            // Keys whose byte order ("Z" before "a") differs from a locale's, a consumable (left
            // out), a subscription on the other store, another customer's purchase, two balances.
            @Sendable func purchase(_ key: PurchaseKey, _ kind: ProductKind, of owner: Customer) -> Purchase {
                var purchase = fullPurchase(key, customer: owner.id)
                purchase.kind = kind
                return purchase
            }
            let held = [
                purchase(.appStore("alpha"), .subscription, of: customer),
                purchase(.appStore("Zeta"), .nonConsumable, of: customer),
                purchase(.googlePlay("token"), .subscription, of: customer),
            ]
            let consent = ConsumptionConsent(consented: false, decidedAt: at(2000))
            try await storage.transaction { transaction in
                for purchase in held { try await transaction.savePurchase(purchase) }
                try await transaction.savePurchase(purchase(.appStore("coins"), .consumable, of: customer))
                try await transaction.savePurchase(purchase(.appStore("others"), .subscription, of: other))
                try await transaction.saveConsumptionConsent(consent, of: customer.id)
                for (balance, amount, key) in [("coins", 100, "c1"), ("gems", 5, "g1"), ("coins", -30, "c2")] {
                    _ = try await transaction.appendLedgerEntry(
                        LedgerEntry(
                            customerID: customer.id, balance: balance, amount: amount, reason: .purchase,
                            idempotencyKey: key, createdAt: at(3000)))
                }
            }
            let full = try await storage.read { try await $0.customerSnapshot(customer.id) }
            #expect(full?.customer == customer)
            #expect(full?.consent == consent)
            #expect(
                full?.entitlementPurchases.map(\.key)
                    == [.appStore("Zeta"), .appStore("alpha"), .googlePlay("token")], "by store, then id, in bytes")
            #expect(full?.entitlementPurchases == [held[1], held[0], held[2]], "every column read back")
            #expect(full?.balances == ["coins": 70, "gems": 5])
            let apart = try await storage.read { transaction in
                (
                    try await transaction.entitlementPurchases(of: customer.id),
                    try await transaction.balances(of: customer.id)
                )
            }
            #expect(full?.entitlementPurchases == apart.0)
            #expect(full?.balances == apart.1)
            // Inside a write transaction, after its writes.
            let afterWrite = try await storage.transaction { transaction in
                try await transaction.saveConsumptionConsent(nil, of: customer.id)
                return try await transaction.customerSnapshot(customer.id)
            }
            #expect(afterWrite?.consent == nil)
            #expect(afterWrite?.entitlementPurchases.count == 3)

            let nobody = try await storage.read { try await $0.customerSnapshot(CustomerID("nobody")) }
            #expect(nobody == nil)
        }
    }
}
