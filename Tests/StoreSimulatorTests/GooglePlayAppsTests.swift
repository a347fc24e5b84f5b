import Foundation
import GooglePlay
import StoreSimulator
import Testing

/// Several Google Play apps at once, and license testers' purchases (Google's test environment)
/// made and read through the control API.
@Suite struct GooglePlayAppsTests {
    static let other = "com.example.other"

    @Test func severalAppsAndTestPurchasesThroughTheControlAPI() async throws {
        try await PlayHarness.run { h in
            let control = h.endpoints.controlURL + "/googleplay"
            // A second app with a product of the same id as the first app's.
            var answer = try await playRequest(.POST, control + "/apps", json: #"{"packageName": "\#(Self.other)"}"#)
            #expect(answer.status == 200)
            answer = try await playRequest(
                .POST, control + "/subscriptions",
                json:
                    #"{"packageName": "\#(Self.other)", "productId": "premium", "basePlans": [{"basePlanId": "weekly", "billingPeriod": "P1W"}]}"#
            )
            #expect(answer.status == 200)
            answer = try await playRequest(
                .POST, control + "/products", json: #"{"packageName": "\#(Self.other)", "productId": "coins"}"#)
            #expect(answer.status == 200)

            // A license tester subscribes to the other app; a customer subscribes to the first one.
            answer = try await playRequest(
                .POST, control + "/subscription-purchases",
                json: #"{"packageName": "\#(Self.other)", "productId": "premium", "options": {"testPurchase": true}}"#)
            #expect(answer.status == 200)
            let tester = try answer.decode(PlayPurchaseResult.self)
            answer = try await playRequest(
                .POST, control + "/subscription-purchases",
                json: #"{"packageName": "\#(PlayHarness.package)", "productId": "premium"}"#)
            let customer = try answer.decode(PlayPurchaseResult.self)

            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601  // the control API's dates
            let testerSnapshot = try decoder.decode(
                GooglePlaySimulation.SubscriptionSnapshot.self,
                from: try await playRequest(.GET, control + "/purchases/\(tester.purchaseToken)").body)
            #expect(testerSnapshot.packageName == Self.other)
            #expect(testerSnapshot.testPurchase)
            #expect(testerSnapshot.basePlanId == "weekly")
            let customerSnapshot = try #require(h.play.subscription(customer.purchaseToken))
            #expect(customerSnapshot.packageName == PlayHarness.package)
            #expect(!customerSnapshot.testPurchase)

            let base = h.endpoints.baseURL + "/androidpublisher/v3/applications/"
            let testerAnswer = try await playRequest(
                .GET, base + "\(Self.other)/purchases/subscriptionsv2/tokens/\(tester.purchaseToken)",
                bearer: try await h.bearer)
            #expect(testerAnswer.status == 200)
            #expect(try testerAnswer.decode(SubscriptionPurchaseV2.self).testPurchase != nil)
            #expect(try await h.subscriptionV2(customer.purchaseToken).testPurchase == nil)
            // Each app knows only its own purchases.
            let crossed = try await playRequest(
                .GET, base + "\(Self.other)/purchases/subscriptionsv2/tokens/\(customer.purchaseToken)",
                bearer: try await h.bearer)
            #expect(crossed.status == 400)

            // A license tester's one-time purchase: `purchaseType` 0, in the control API and the API.
            answer = try await playRequest(
                .POST, control + "/product-purchases",
                json: #"{"packageName": "\#(Self.other)", "productId": "coins", "options": {"testPurchase": true}}"#)
            #expect(answer.status == 200)
            let coins = try answer.decode(PlayPurchaseResult.self)
            let read = try await playRequest(.GET, control + "/product-purchases/\(coins.purchaseToken)")
            #expect(read.status == 200)
            #expect(try read.decode(ProductPurchase.self).purchaseType == .test)
            let fetched = try await playRequest(
                .GET, base + "\(Self.other)/purchases/products/coins/tokens/\(coins.purchaseToken)",
                bearer: try await h.bearer)
            #expect(try fetched.decode(ProductPurchase.self).purchaseType == .test)
            let bought = try h.play.purchaseProduct(packageName: PlayHarness.package, productId: "coins")
            #expect(h.play.productPurchase(bought.purchaseToken)?.purchaseType == nil)
            #expect(
                try await playRequest(.GET, control + "/product-purchases/\(customer.purchaseToken)").status == 404)
        }
    }
}
