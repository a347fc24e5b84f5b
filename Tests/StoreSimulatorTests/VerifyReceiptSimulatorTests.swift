import AppStoreServer
import AsyncHTTPClient
import Foundation
import NIOCore
import StoreSimulator
import Testing

@Suite struct VerifyReceiptSimulatorTests {
    func client(_ h: Harness, secret: String? = nil, excludeOld: Bool? = nil) -> VerifyReceiptClient {
        VerifyReceiptClient(
            configuration: .init(
                productionURL: h.endpoints.baseURL + "/verifyReceipt",
                sandboxURL: h.endpoints.baseURL + "/sandbox/verifyReceipt",
                sharedSecret: secret.map(VerifyReceiptSharedSecret.init), excludeOldTransactions: excludeOld,
                retryPolicy: VerifyReceiptRetryPolicy()))
    }

    func post(_ url: String, _ json: String) async throws -> HTTPResult {
        try await loopbackRequest(.POST, url, json: json)
    }

    @Test func sandboxReceiptIsRedirectedFromProductionAndVerified() async throws {
        try await Harness.run { h in
            let token = UUID()
            let subscription = try h.appStore.purchase(
                customer: "rita", product: "pro.monthly", appAccountToken: token, offer: .freeTrial("P1W"))
            let coins = try h.appStore.purchase(customer: "rita", product: "coins.100")
            try h.appStore.advance(by: 8 * Harness.day)
            try h.appStore.setSharedSecret("s3cret", bundleId: Harness.bundleId)

            // The trial has renewed: the receipt holds purchase, coins and renewal, oldest first.
            let renewal = try #require(h.appStore.subscription(subscription.originalTransactionId)?.transactionIds.last)
            let ids = [subscription.transactionId, coins.transactionId, renewal]
            let receipt = try h.appStore.makeAppReceipt(customer: "rita", bundleId: Harness.bundleId)
            let parsed = try AppReceipt(bytes: Array(receipt))
            #expect(parsed.bundleId == Harness.bundleId)
            #expect(parsed.receiptType == "ProductionSandbox")
            #expect(parsed.inAppPurchases.map(\.transactionId) == ids)
            #expect(parsed.inAppPurchases.map(\.productId) == ["pro.monthly", "coins.100", "pro.monthly"])
            #expect(parsed.inAppPurchases.first?.originalTransactionId == subscription.originalTransactionId)
            #expect(parsed.inAppPurchases.first?.purchaseDate == Harness.start)
            #expect(parsed.inAppPurchases.first?.quantity == 1)

            let base64 = receipt.base64EncodedString()
            // Production alone answers 21007 for a sandbox receipt.
            let direct = try await post(
                h.endpoints.baseURL + "/verifyReceipt", #"{"receipt-data": "\#(base64)", "password": "s3cret"}"#)
            #expect(direct.status == 200 && direct.body["status"] as? Int == 21007)

            // The real client follows 21007 to the sandbox and gets the receipt.
            let response = try await client(h, secret: "s3cret").verify(receiptData: base64)
            #expect(response.status == .valid)
            #expect(response.environment == .sandbox)
            #expect(response.receipt?.bundleId == Harness.bundleId)
            let inApp = try #require(response.receipt?.inApp)
            #expect(inApp.map(\.transactionId) == ids)
            #expect(inApp.first?.isTrialPeriod == "true")
            #expect(inApp.first?.appAccountToken == token.uuidString.lowercased())
            // The renewal after the trial is in latest_receipt_info, with the pending renewal.
            let latest = try #require(response.latestReceiptInfo)
            #expect(latest.count == 2)
            #expect(latest.last?.originalTransactionId == subscription.originalTransactionId)
            #expect(latest.last?.isTrialPeriod == "false")
            #expect(response.pendingRenewalInfo?.first?.autoRenewStatus == "1")
            #expect(response.pendingRenewalInfo?.first?.autoRenewProductId == "pro.monthly")
            let refreshed = try AppReceipt(base64: try #require(response.latestReceipt))
            #expect(refreshed.inAppPurchases.count == 3)

            // exclude-old-transactions keeps the latest renewal only.
            let recent = try await client(h, secret: "s3cret", excludeOld: true).verify(receiptData: base64)
            #expect(recent.latestReceiptInfo?.map(\.transactionId) == [latest.last?.transactionId])
        }
    }

    @Test func wrongSecretGarbageAndProductionReceiptsAreRefused() async throws {
        try await Harness.run { h in
            try h.appStore.purchase(customer: "sam", product: "pro.monthly")
            try h.appStore.setSharedSecret("right", bundleId: Harness.bundleId)
            let base64 = try h.appStore.makeAppReceipt(customer: "sam", bundleId: Harness.bundleId)
                .base64EncodedString()

            #expect(try await client(h, secret: "wrong").verify(receiptData: base64).status == .sharedSecretMismatch)
            #expect(try await client(h).verify(receiptData: base64).status == .sharedSecretMismatch)
            #expect(try await client(h).verify(receiptData: "bm90IGEgcmVjZWlwdA==").status == .malformedReceiptData)
            #expect(try await client(h).verify(receiptData: "%%%").status == .malformedReceiptData)

            // A production app's receipt sent to the sandbox: 21008.
            h.appStore.addApp(SimulatedApp(bundleId: "com.example.live", appAppleId: 99, environment: .production))
            try h.appStore.addProduct(
                .oneTime("live.coins", bundleId: "com.example.live", kind: .consumable, price: 990))
            try h.appStore.purchase(customer: "sam", product: "live.coins")
            let live = try h.appStore.makeAppReceipt(customer: "sam", bundleId: "com.example.live")
            #expect(try AppReceipt(bytes: Array(live)).receiptType == "Production")
            let toSandbox = try await post(
                h.endpoints.baseURL + "/sandbox/verifyReceipt", #"{"receipt-data": "\#(live.base64EncodedString())"}"#)
            #expect(toSandbox.body["status"] as? Int == 21008)
            let production = try await client(h).verify(receiptData: live.base64EncodedString())
            #expect(production.status == .valid && production.environment == .production)
            #expect(production.receipt?.inApp?.first?.productId == "live.coins")
            #expect(production.latestReceiptInfo == nil)

            let unreadable = try await post(h.endpoints.baseURL + "/verifyReceipt", "not json")
            #expect(unreadable.body["status"] as? Int == 21000)
        }
    }

    @Test func offersPriceIncreasesAndReceiptsOverControlRoutes() async throws {
        try await Harness.run { h in
            let base = h.endpoints.controlURL + "/appstore"
            let code = try await post(
                base + "/offer-codes",
                #"{"customerId": "tom", "productId": "pro.monthly", "offer": {"type": 3, "identifier": "FALL", "#
                    + #""discountType": "FREE_TRIAL", "price": 0, "period": "P1M"}}"#)
            #expect(code.status == 200)
            let id = try #require(code.body["originalTransactionId"] as? String)
            #expect(h.appStore.transaction(id)?.appAccountToken == nil)
            #expect(h.appStore.transaction(id)?.offerIdentifier == "FALL")
            let promo = try await post(
                base + "/subscriptions/\(id)/redeem-offer",
                #"{"offer": {"type": 2, "identifier": "p1", "discountType": "PAY_AS_YOU_GO", "price": 4990, "#
                    + #""period": "P1M"}}"#)
            #expect(promo.status == 200)
            let increase = try await post(
                base + "/products/pro.monthly/price-increase", #"{"price": 12990, "requiresConsent": true}"#)
            #expect(increase.body["originalTransactionIds"] as? [String] == [id])
            #expect(try await post(base + "/subscriptions/\(id)/accept-price-increase", "{}").status == 200)
            #expect(try await post(base + "/subscriptions/\(id)/accept-price-increase", "{}").status == 400)
            #expect(
                try await post(base + "/apps/\(Harness.bundleId)/shared-secret", #"{"sharedSecret": "x"}"#).status
                    == 200)
            let receipt = try await post(
                base + "/receipts", #"{"customerId": "tom", "bundleId": "\#(Harness.bundleId)"}"#)
            let data = try #require(receipt.body["receiptData"] as? String)
            #expect(try AppReceipt(base64: data).inAppPurchases.first?.transactionId == id)
            let types = try await h.received(from: 0).map(\.payload.notificationType)
            #expect(types == [.subscribed, .offerRedeemed, .priceIncrease, .priceIncrease])
        }
    }
}
