import Foundation
import Storekeeper
import Testing

@testable import StorekeeperStorage

/// What ``StorageTransaction/beginBatch(_:)`` promises on every backend: what it read ahead answers
/// as the database would, given the transaction's own writes; kept writes reach the database before
/// any other statement and before the commit; a write outside the batch drops what was read ahead;
/// a failed savepoint takes what it kept with it.
@Suite(.serialized) struct BatchConformanceTests {
    struct Refused: Error {}

    @Test(arguments: StorageBackend.available)
    func keptWritesAreSentBeforeOtherStatementsAndAtTheCommit(backend: StorageBackend) async throws {
        try await TestDatabase.withFresh(backend) { storage, _ async throws in
            let owner = makeCustomer("owner")
            let key = PurchaseKey.appStore("2000000001")
            try await storage.transaction { try await $0.insertCustomer(owner) }
            try await storage.transaction { transaction async throws in
                try await transaction.beginBatch(BatchReads(purchases: [key], accountTokens: [owner.appAccountToken]))
                #expect(try await transaction.purchase(key) == nil)
                #expect(try await transaction.customer(appAccountToken: owner.appAccountToken) == owner)
                try await transaction.savePurchase(fullPurchase(key, customer: owner.id))
                try await transaction.appendStateChange(
                    StateChange(
                        key: key, from: nil, to: .active, expiresAt: nil, observedAt: at(1),
                        cause: ChangeCause(source: .submission)))
                // Read back from memory, then by statements the batch does not answer.
                #expect(try await transaction.purchase(key) == fullPurchase(key, customer: owner.id))
                #expect(try await transaction.purchases(of: owner.id) == [fullPurchase(key, customer: owner.id)])
                #expect(try await transaction.stateChanges(of: key).map(\.to) == [.active])
                // Kept after a statement, sent at the commit.
                let entry = try await transaction.appendLedgerEntry(
                    LedgerEntry(
                        customerID: owner.id, balance: "coins", amount: 100, reason: .purchase, idempotencyKey: "k-1",
                        transactionID: "t-1", createdAt: at(2)))
                #expect(entry.amount == 100)
            }
            try await storage.transaction { transaction async throws in
                #expect(try await transaction.purchase(key) == fullPurchase(key, customer: owner.id))
                #expect(try await transaction.balances(of: owner.id) == ["coins": 100])
                #expect(try await transaction.ledgerEntries(of: owner.id).map(\.idempotencyKey) == ["k-1"])
            }
        }
    }

    /// A billing event saved under another purchase leaves the list of the one it was under, whether
    /// the batch read it by its key (and so knows where it was) or only in its purchase's list.
    @Test(arguments: StorageBackend.available, [true, false])
    func aBillingEventMovedToAnotherPurchaseLeavesTheOtherList(backend: StorageBackend, readByKey: Bool) async throws {
        try await TestDatabase.withFresh(backend) { storage, _ async throws in
            let (first, second) = (PurchaseKey.appStore("2000000004"), PurchaseKey.appStore("2000000005"))
            @Sendable func record(_ id: String, of key: PurchaseKey, at time: Int64) -> TransactionRecord {
                TransactionRecord(
                    purchaseKey: key,
                    fact: TransactionFact(id: id, productID: "coins.100", purchasedAt: at(time), observedAt: at(time)))
            }
            try await storage.transaction { transaction async throws in
                try await transaction.savePurchase(minimalPurchase(first))
                try await transaction.savePurchase(minimalPurchase(second))
                try await transaction.saveTransaction(record("t-1", of: first, at: 1))
                try await transaction.saveTransaction(record("t-2", of: second, at: 2))
            }
            let keys: Set<BatchReads.TransactionKey> =
                readByKey ? [.init(store: .appStore, id: "t-1"), .init(store: .appStore, id: "t-3")] : []
            let inBatch = try await storage.transaction { transaction async throws in
                try await transaction.beginBatch(BatchReads(purchases: [first, second], transactions: keys))
                try await transaction.saveTransaction(record("t-1", of: second, at: 3))
                try await transaction.saveTransaction(record("t-3", of: first, at: 4))
                return [try await transaction.transactions(of: first), try await transaction.transactions(of: second)]
            }
            let stored = try await storage.transaction { transaction async throws in
                [try await transaction.transactions(of: first), try await transaction.transactions(of: second)]
            }
            #expect(inBatch.map { $0.map(\.fact.id) } == [["t-3"], ["t-2", "t-1"]])
            #expect(inBatch == stored)
        }
    }

    /// A batch answers lists from memory in the order its queries give, text compared byte-wise;
    /// so must the database, whatever collation a deployment's database gives its text columns (a
    /// database created under `en_US.UTF-8` sorts `a_1` before `A`, bytes the other way round).
    @Test(arguments: StorageBackend.available)
    func readAheadListsKeepTheDatabasesOrderUnderALinguisticCollation(backend: StorageBackend) async throws {
        try await TestDatabase.withFresh(backend) { storage, _ async throws in
            if backend == .postgresql {
                try await storage.transaction { transaction async throws in
                    let database = try #require(transaction as? SQLStorageTransaction).database
                    for (table, column) in [("purchases", "id"), ("transactions", "id")] {
                        try await database.raw(
                            "ALTER TABLE \(ident: table) ALTER COLUMN \(ident: column) TYPE TEXT COLLATE \"en-x-icu\""
                        ).run()
                    }
                }
            }
            let owner = makeCustomer("owner")
            let keys = ["b", "B-2", "a_1", "A"].map(PurchaseKey.googlePlay)
            let added = PurchaseKey.googlePlay("a-0")
            @Sendable func record(_ id: String, at time: Int64) -> TransactionRecord {
                TransactionRecord(
                    purchaseKey: keys[0],
                    fact: TransactionFact(id: id, productID: "pro.monthly", purchasedAt: at(time), observedAt: at(time))
                )
            }
            try await storage.transaction { transaction async throws in
                try await transaction.insertCustomer(owner)
                for key in keys { try await transaction.savePurchase(fullPurchase(key, customer: owner.id)) }
                for id in ["t-b", "t-B", "t-a_1"] { try await transaction.saveTransaction(record(id, at: 1)) }
            }
            let inBatch = try await storage.transaction { transaction async throws in
                try await transaction.beginBatch(
                    BatchReads(purchases: [keys[0], added], transactions: [.init(store: .googlePlay, id: "t-A")]))
                try await transaction.savePurchase(fullPurchase(added, customer: owner.id))
                try await transaction.saveTransaction(record("t-A", at: 1))
                return (
                    try await transaction.entitlementPurchases(of: owner.id).map(\.key.id),
                    try await transaction.transactions(of: keys[0]).map(\.fact.id)
                )
            }
            let stored = try await storage.transaction { transaction async throws in
                (
                    try await transaction.entitlementPurchases(of: owner.id).map(\.key.id),
                    try await transaction.transactions(of: keys[0]).map(\.fact.id)
                )
            }
            #expect(inBatch.0 == ["A", "B-2", "a-0", "a_1", "b"])
            #expect(inBatch.1 == ["t-A", "t-B", "t-a_1", "t-b"])
            #expect(stored.0 == inBatch.0)
            #expect(stored.1 == inBatch.1)
        }
    }

    @Test(arguments: StorageBackend.available)
    func aWriteOutsideTheBatchDropsWhatWasReadAhead(backend: StorageBackend) async throws {
        try await TestDatabase.withFresh(backend) { storage, _ async throws in
            let key = PurchaseKey.googlePlay("token-1")
            try await storage.transaction { try await $0.savePurchase(minimalPurchase(key)) }
            try await storage.transaction { transaction async throws in
                try await transaction.beginBatch(BatchReads(purchases: [key]))
                #expect(try await transaction.purchase(key)?.app == nil)
                // Changes the row behind what was read ahead.
                #expect(try await transaction.assignApp(AppID("com.example.app"), toPurchasesOf: .googlePlay) == 1)
                #expect(try await transaction.purchase(key)?.app == AppID("com.example.app"))
            }
        }
    }

    @Test(arguments: StorageBackend.available)
    func aFailedSavepointTakesWhatItKeptWithIt(backend: StorageBackend) async throws {
        try await TestDatabase.withFresh(backend) { storage, _ async throws in
            let kept = PurchaseKey.appStore("2000000002")
            let undone = PurchaseKey.appStore("2000000003")
            try await storage.transaction { transaction async throws in
                try await transaction.beginBatch(BatchReads(purchases: [kept, undone]))
                try await transaction.savePurchase(minimalPurchase(kept))
                await #expect(throws: Refused.self) {
                    try await transaction.savepoint {
                        try await transaction.savePurchase(minimalPurchase(undone))
                        throw Refused()
                    }
                }
                #expect(try await transaction.purchase(undone) == nil)
                #expect(try await transaction.purchase(kept) == minimalPurchase(kept))
            }
            try await storage.transaction { transaction async throws in
                #expect(try await transaction.purchase(kept) == minimalPurchase(kept))
                #expect(try await transaction.purchase(undone) == nil)
            }
        }
    }
}
