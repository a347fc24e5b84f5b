import AppStoreServer
import Foundation
import NIOHTTP1
import StoreSimulator
import Storekeeper
import StorekeeperServer
import StorekeeperStorage
import Testing

/// Transfers done right (issue 15, item 2): when the ownership policy moves an App Store purchase,
/// the store-side account token follows, and a consumable's credits are credited once in all.
@Suite(.serialized) struct TransferTests {
    @Test(arguments: StorageBackend.available)
    func aTransferSetsTheStoreSideTokenAndLaterNotificationsLandOnTheNewOwner(_ backend: StorageBackend) async throws {
        try await ServerHarness.run(on: backend, policy: .transfer) { h in
            let store = h.simulator.appStore
            let first = try await h.createCustomer("ann")
            let bought = try store.purchase(customer: "ann", product: "pro.monthly", appAccountToken: first)
            try await h.settle()
            let second = try await h.createCustomer("bo")
            let moved = try await h.request(
                .POST, "/v1/customers/bo/purchases/app-store", json: #"{"transactionId": "\#(bought.transactionId)"}"#)
            #expect(moved.status == 200)
            // Apple now carries bo's token for the purchase.
            #expect(store.transaction(bought.transactionId)?.appAccountToken == second.uuidString.lowercased())
            let stored = try await h.storage.transaction {
                try await $0.purchase(.appStore(bought.originalTransactionId))
            }
            #expect(stored?.accountHint == second.uuidString.lowercased())
            #expect(stored?.customerID == CustomerID("bo"))
            // The renewal names bo.
            try await h.advance(days: 31)
            let renewal = try #require(store.subscription(bought.originalTransactionId)?.transactionIds.last)
            #expect(store.transaction(renewal)?.appAccountToken == second.uuidString.lowercased())
            #expect(try await h.entitlements("bo")["pro"]?.active == true)
            #expect(try await h.entitlements("ann")["pro"] == nil)
        }
    }

    @Test(arguments: StorageBackend.available)
    func aTransferredCoinPackIsCreditedOnceAndItsRefundTakesFromTheOwner(_ backend: StorageBackend) async throws {
        try await ServerHarness.run(on: backend, policy: .transfer) { h in
            let store = h.simulator.appStore
            let token = try await h.createCustomer("cy")
            let coins = try store.purchase(customer: "cy", product: "coins.100", appAccountToken: token)
            try await h.settle()
            let spend = #"{"amount": 30, "idempotencyKey": "cy-1"}"#
            #expect(try await h.request(.POST, "/v1/customers/cy/balances/coins/debits", json: spend).status == 200)
            _ = try await h.createCustomer("di")
            let moved = try await h.request(
                .POST, "/v1/customers/di/purchases/app-store", json: #"{"transactionId": "\#(coins.transactionId)"}"#)
            #expect(moved.status == 200)
            // The 70 unspent moved; the 30 spent stay spent: 100 credited in all.
            #expect(try await h.balances("cy")["coins"] == 0)
            #expect(try await h.balances("di")["coins"] == 70)
            // Presenting it again changes nothing.
            _ = try await h.request(
                .POST, "/v1/customers/di/purchases/app-store", json: #"{"transactionId": "\#(coins.transactionId)"}"#)
            #expect(try await h.balances("di")["coins"] == 70)

            // Half refunded: 50 taken back, all from the owner; what cy spent stays spent.
            try await h.advance(days: 1)
            try store.refund(transactionId: coins.transactionId, revocationPercentage: 50_000)
            try await h.settle()
            #expect(try await h.balances("cy")["coins"] == 0)
            #expect(try await h.balances("di")["coins"] == 20)
            // Reversed: given back to the owner.
            try await h.advance(days: 1)
            try store.reverseRefund(transactionId: coins.transactionId)
            try await h.settle()
            #expect(try await h.balances("di")["coins"] == 70)
            #expect(try await h.balances("cy")["coins"] == 0)
        }
    }

    /// A coin pack moved to another customer while its owner's debit of all of it is uncommitted:
    /// the transfer waits for the debit and moves nothing, as nothing is left unspent. (It once
    /// read the ledger without the debit's lock, moved all 100 to the new owner, and the old one
    /// ended at -100: the same coins spent and moved.)
    @Test(.enabled(if: StorageBackend.available.contains(.postgresql), "needs STOREKEEPER_TEST_POSTGRES_URL"))
    func aTransferWaitsForTheOwnersDebitInProgress() async throws {
        try await ServerHarness.run(on: .postgresql, policy: .transfer) { h in
            let store = h.simulator.appStore
            let token = try await h.createCustomer("cy")
            let coins = try store.purchase(customer: "cy", product: "coins.100", appAccountToken: token)
            try await h.settle()
            _ = try await h.createCustomer("di")
            let cy = CustomerID("cy")
            let (debited, debitedSignal) = AsyncStream.makeStream(of: Void.self)
            let debit = Task { [storage = h.storage] in
                // As CustomerService's debit does, held open.
                try await storage.transaction { transaction in
                    try await transaction.lockBalances(of: [cy])
                    _ = try await transaction.appendLedgerEntry(
                        LedgerEntry(
                            customerID: cy, balance: "coins", amount: -100, reason: .debit, idempotencyKey: "debit:all",
                            createdAt: Date()))
                    debitedSignal.yield()
                    try await Task.sleep(for: .milliseconds(500))
                }
            }
            for await _ in debited { break }
            let moved = try await h.request(
                .POST, "/v1/customers/di/purchases/app-store", json: #"{"transactionId": "\#(coins.transactionId)"}"#)
            #expect(moved.status == 200)
            try await debit.value
            #expect(try await h.balances("cy")["coins"] == 0)
            #expect(try await h.balances("di")["coins"] ?? 0 == 0)
        }
    }

    @Test func setAppAccountTokenRefusesFamilySharedTransactionsByName() async throws {
        try await ServerHarness.run(on: .sqlite) { h in
            let store = h.simulator.appStore
            let shared = try store.purchase(customer: "eli", product: "pro.monthly", ownership: .familyShared)
            let adapter = try #require(h.application.stores(.appStore) as? AppStoreAdapter)
            let client = try adapter.apps.client(AppID(ServerHarness.bundleID), .sandbox)
            do {
                try await client.setAppAccountToken(
                    originalTransactionId: shared.originalTransactionId, appAccountToken: UUID())
                Issue.record("Apple's refusal was not thrown")
            } catch let error as AppStoreServerAPIError {
                #expect(error.code == .familyTransactionNotSupported)
            }
            let own = try store.purchase(customer: "eli", product: "coins.100")
            await #expect(throws: AppStoreServerAPIError.self) {
                try await client.setAppAccountToken(originalTransactionId: "not-a-number", appAccountToken: UUID())
            }
            try await client.setAppAccountToken(
                originalTransactionId: own.originalTransactionId, appAccountToken: UUID())
            // Only the purchase it was called for changed.
            #expect(store.transaction(shared.transactionId)?.appAccountToken == nil)
            #expect(store.transaction(own.transactionId)?.appAccountToken != nil)
        }
    }
}
