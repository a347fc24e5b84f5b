import Foundation
import NIOHTTP1
import StoreSimulator
import Storekeeper
import StorekeeperStorage
import TestSupport
import Testing

/// DESIGN.md's ordering rule through the whole server: for random App Store lifecycles (seeded),
/// delivering every notification 1–3 times in shuffled order gives exactly the customer view that
/// in-order single delivery gives.
@Suite(.serialized) struct DeliveryOrderTests {
    /// What the customer looks like after a delivery plan; two runs with the same lifecycle seed
    /// make the same notifications (the simulator is seeded too), so their views can be compared.
    func customerAfter(
        lifecycle seed: UInt64, on backend: StorageBackend, deliver: ([String], inout SplitMix64) -> [String]
    ) async throws -> (entitlements: [EntitlementView], subscriptions: [PurchaseView], events: Int) {
        var result: ([EntitlementView], [PurchaseView], Int) = ([], [], 0)
        try await ServerHarness.run(on: backend, appStoreGracePeriodDays: 3) { h in
            let store = h.simulator.appStore
            try store.setNotificationURL(nil, bundleId: ServerHarness.bundleID)  // kept, not sent
            let token = try await h.createCustomer("olga")
            var random = SplitMix64(state: seed)
            let bought = try store.purchase(customer: "olga", product: "pro.monthly", appAccountToken: token)
            let id = bought.originalTransactionId
            for _ in 0..<12 {
                // Steps the simulator refuses in the current state are skipped.
                switch Int.random(in: 0..<12, using: &random) {
                case 0, 1, 7, 8, 9, 10:
                    try store.advance(by: Double(Int.random(in: 1...40, using: &random)) * ServerHarness.day)
                case 2: try? store.failBilling(id)
                case 3: try? store.recoverBilling(id)
                case 4: try? store.setAutoRenew(id, on: Bool.random(using: &random))
                case 5: try? store.upgrade(id, to: "max.monthly")
                case 6: try? store.downgrade(id, to: "pro.monthly")
                default:
                    // Rare: a refund ends the lifecycle.
                    if let last = store.subscription(id)?.transactionIds.last {
                        try? store.refund(transactionId: last)
                    }
                }
                try store.advance(by: 3600)
            }
            let payloads = store.notifications.map(\.signedPayload)
            var order = SplitMix64(state: seed ^ 0x5DEE_CE66)
            for payload in deliver(payloads, &order) {
                let (status, _) = try await h.request(
                    .POST, "/v1/notifications/app-store", json: #"{"signedPayload": "\#(payload)"}"#, key: nil)
                #expect(status == 200)
            }
            try await h.settle()
            let view = try await CustomerAPIView.fetch("olga", from: h)
            result = (view.entitlements, view.subscriptions, payloads.count)
        }
        return result
    }

    @Test(arguments: StorageBackend.available) func shuffledDuplicatedDeliveryGivesTheInOrderView(
        _ backend: StorageBackend
    ) async throws {
        let seeds: [UInt64] = backend == .sqlite ? [1, 2, 3, 4, 5, 6] : [7, 8, 9]
        for seed in seeds {
            let inOrder = try await customerAfter(lifecycle: seed, on: backend) { payloads, _ in payloads }
            let shuffled = try await customerAfter(lifecycle: seed, on: backend) { payloads, random in
                payloads.flatMap { Array(repeating: $0, count: Int.random(in: 1...3, using: &random)) }
                    .shuffled(using: &random)
            }
            #expect(inOrder.events > 1, "seed \(seed)")
            #expect(shuffled.entitlements == inOrder.entitlements, "seed \(seed)")
            #expect(shuffled.subscriptions == inOrder.subscriptions, "seed \(seed)")
        }
    }
}

/// The customer view as the server answers it.
enum CustomerAPIView {
    static func fetch(_ id: String, from h: ServerHarness) async throws -> CustomerView {
        let (status, body) = try await h.request(.GET, "/v1/customers/\(id)")
        #expect(status == 200)
        let data = try JSONSerialization.data(withJSONObject: body)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(CustomerView.self, from: data)
    }
}
