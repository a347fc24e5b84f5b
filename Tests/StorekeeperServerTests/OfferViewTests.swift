import AppStoreServer
import Foundation
import StoreSimulator
import Storekeeper
import StorekeeperStorage
import Testing

/// The customer view shows, per App Store subscription, the offer its current period was bought
/// with and the win-back offers its renewal info says the customer may redeem (issue 15, item 5).
@Suite(.serialized) struct OfferViewTests {
    func offers(_ h: ServerHarness, _ customer: String) async throws -> [String: Any]? {
        let (_, body) = try await h.request(.GET, "/v1/customers/\(customer)")
        return (body["subscriptions"] as? [[String: Any]])?.first?["offers"] as? [String: Any]
    }

    @Test(arguments: StorageBackend.available)
    func theCurrentOfferAndEligibleWinBackOffersAreShown(_ backend: StorageBackend) async throws {
        try await ServerHarness.run(on: backend) { h in
            let store = h.simulator.appStore
            let token = try await h.createCustomer("gil")
            let trial = SimulatedOffer(type: .introductory, discountType: .freeTrial, price: 0, period: "P1W")
            let bought = try store.purchase(
                customer: "gil", product: "pro.monthly", appAccountToken: token, offer: trial)
            try await h.settle()
            let current = try #require(try await offers(h, "gil")?["current"] as? [String: Any])
            #expect(current["kind"] as? String == "introductory")
            #expect(current["id"] == nil)

            try store.setAutoRenew(bought.originalTransactionId, on: false)
            try store.offerWinBack(bought.originalTransactionId, offerIds: ["comeback.50", "comeback.free"])
            try await h.advance(days: 10)
            let ended = try #require(try await offers(h, "gil"))
            #expect(ended["eligibleWinBackOfferIDs"] as? [String] == ["comeback.50", "comeback.free"])
            #expect(try await h.entitlements("gil")["pro"]?.active == false)
        }
    }
}
