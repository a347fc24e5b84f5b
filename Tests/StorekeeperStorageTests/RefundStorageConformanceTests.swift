import Foundation
import Storekeeper
import Testing

@testable import StorekeeperStorage

/// Consent, reported usage and the refund request outbox (migration 8) on each backend.
@Suite(.serialized) struct RefundStorageConformanceTests {
    func request(_ id: String, _ key: PurchaseKey, requestedAt: Date, due: Date?) -> RefundRequest {
        RefundRequest(
            id: id, purchaseKey: key, transactionID: "t-\(id)", app: AppID("com.example.app"), environment: .sandbox,
            reason: "UNINTENDED_PURCHASE", requestedAt: requestedAt,
            deadline: requestedAt.addingTimeInterval(RefundRequest.answerWindow), nextAttemptAt: due,
            updatedAt: requestedAt)
    }

    @Test(arguments: StorageBackend.available)
    func consentAndUsageRoundTripAndAreForgotten(backend: StorageBackend) async throws {
        try await TestDatabase.withFresh(backend) { storage, _ async throws in
            let alice = makeCustomer("alice")
            let key = PurchaseKey.appStore("1000")
            try await storage.transaction { transaction async throws in
                try await transaction.insertCustomer(alice)
                #expect(try await transaction.consumptionConsent(of: alice.id) == nil)
                try await transaction.saveConsumptionConsent(
                    ConsumptionConsent(consented: false, decidedAt: at(1)), of: alice.id)
                try await transaction.saveConsumptionConsent(
                    ConsumptionConsent(consented: true, decidedAt: at(2)), of: alice.id)
                #expect(try await transaction.purchaseUsage(key) == nil)
                try await transaction.savePurchaseUsage(
                    PurchaseUsage(key: key, customerID: alice.id, consumedMilliPercent: 12_345, reportedAt: at(3)))
                try await transaction.savePurchaseUsage(
                    PurchaseUsage(
                        key: key, customerID: alice.id, consumedMilliPercent: 0,
                        deliveryProblem: .undeliveredWrongItem, reportedAt: at(4)))
            }
            try await storage.transaction { transaction async throws in
                #expect(
                    try await transaction.consumptionConsent(of: alice.id)
                        == ConsumptionConsent(consented: true, decidedAt: at(2)))
                #expect(
                    try await transaction.purchaseUsage(key)
                        == PurchaseUsage(
                            key: key, customerID: alice.id, consumedMilliPercent: 0,
                            deliveryProblem: .undeliveredWrongItem, reportedAt: at(4)))
                try await transaction.saveConsumptionConsent(nil, of: alice.id)
                #expect(try await transaction.consumptionConsent(of: alice.id) == nil)
            }
        }
    }

    @Test(arguments: StorageBackend.available)
    func refundRequestsAreStoredOnceClaimedWhenDueAndListedPerCustomer(backend: StorageBackend) async throws {
        try await TestDatabase.withFresh(backend) { storage, _ async throws in
            let alice = makeCustomer("alice")
            let key = PurchaseKey.appStore("1000")
            let first = request("n1", key, requestedAt: at(0), due: at(0))
            let later = request("n2", key, requestedAt: at(10), due: at(5_000))
            try await storage.transaction { transaction async throws in
                try await transaction.insertCustomer(alice)
                try await transaction.savePurchase(fullPurchase(key, customer: alice.id))
                #expect(try await transaction.insertRefundRequest(first))
                #expect(try await transaction.insertRefundRequest(later))
                // A redelivered request is the same row.
                #expect(!(try await transaction.insertRefundRequest(first)))
            }
            let claimed = try await storage.transaction {
                try await $0.claimDueRefundRequests(now: at(100), limit: 10, lease: 60)
            }
            #expect(claimed.map(\.id) == ["n1"])
            #expect(claimed.first?.nextAttemptAt == at(60_100))
            // Leased: not due to another sender meanwhile.
            #expect(
                try await storage.transaction {
                    try await $0.claimDueRefundRequests(now: at(200), limit: 10, lease: 60)
                }.isEmpty)

            var sent = try #require(claimed.first)
            sent.status = .sent
            sent.attempts = 1
            sent.nextAttemptAt = nil
            sent.answer = ConsumptionAnswer(
                consumptionMilliPercent: 40_000, deliveryStatus: .delivered, refundPreference: .grantProrated,
                sampleContentProvided: true)
            sent.customerID = alice.id
            sent.updatedAt = at(300)
            try await storage.transaction { [sent] in try await $0.updateRefundRequest(sent) }
            var skipped = later
            skipped.status = .skipped
            skipped.skipReason = .noConsent
            skipped.storeErrorCode = 4_000_035
            skipped.lastError = "not sent"
            skipped.nextAttemptAt = nil
            try await storage.transaction { [skipped] in try await $0.updateRefundRequest(skipped) }

            let listed = try await storage.transaction { try await $0.refundRequests(of: alice.id) }
            #expect(listed == [sent, skipped])
            #expect(try await storage.transaction { try await $0.refundRequests(of: CustomerID("bob")) }.isEmpty)
            // Settled requests are never due again.
            #expect(
                try await storage.transaction {
                    try await $0.claimDueRefundRequests(now: at(100_000_000), limit: 10, lease: 60)
                }.isEmpty)
        }
    }
}
