import AppStoreServer
import Crypto
import Foundation
import StoreSimulator
import Storekeeper
import StorekeeperStorage
import Testing

/// Every App Store notification type (and the subtypes that change what a customer may use),
/// sent by the simulator, verified, stored and processed by the server, with the customer view
/// checked after each step; at the end no notification is left failed or pending.
@Suite(.serialized) struct AppStoreNotificationTypesTests {
    @Test(arguments: StorageBackend.available) func everyTypeIsProcessedAndMovesTheCustomerAsItShould(
        _ backend: StorageBackend
    ) async throws {
        try await ServerHarness.run(on: backend, appStoreGracePeriodDays: 3) { h in
            let store = h.simulator.appStore
            let token = try await h.createCustomer("ned")
            func pro() async throws -> String {
                guard let entitlement = try await h.entitlements("ned")["pro"] else { return "-" }
                return (entitlement.active ? "+" : "") + entitlement.state
            }
            // An hour between steps: two events at one instant would be indistinguishable by time.
            func step() async throws { try await h.advance(days: 1.0 / 24) }

            let bought = try store.purchase(customer: "ned", product: "pro.monthly", appAccountToken: token)
            let id = bought.originalTransactionId
            try await step()
            #expect(try await pro() == "+active")

            try store.requestPriceIncrease(product: "pro.monthly", newPrice: 12_990, requiresConsent: true)
            try await step()
            #expect(try await pro() == "+active")
            try store.acceptPriceIncrease(id)
            try await step()
            #expect(try await pro() == "+active")

            try store.redeemOffer(
                id, offer: .promotional("loyal", discountType: .payUpFront, price: 4_990, period: "P1M"))
            try await step()
            #expect(try await pro() == "+active")

            try store.upgrade(id, to: "max.monthly")
            try await step()
            #expect(try await h.entitlements("ned")["max"]?.active == true)
            try store.downgrade(id, to: "pro.monthly")
            try await step()
            #expect(try await h.entitlements("ned")["max"]?.active == true)  // until the next renewal

            try store.setAutoRenew(id, on: false)
            try await step()
            #expect(try await pro() == "+canceled")
            try store.setAutoRenew(id, on: true)
            try await step()
            #expect(try await pro() == "+active")

            // The App Store Server API's own notifications: a test, and a renewal date extension.
            let api = try Self.apiClient(h)
            _ = try await api.requestTestNotification()
            _ = try await api.extendSubscriptionRenewalDate(
                originalTransactionId: id,
                ExtendRenewalDateRequest(
                    extendByDays: 5, extendReasonCode: .customerSatisfaction, requestIdentifier: UUID().uuidString))
            try await step()
            #expect(try await pro() == "+active")

            // Billing fails: grace, then billing retry, then expiry.
            try store.failBilling(id)
            let renewal = try #require(store.subscription(id)?.expiresDate)
            try await h.advance(days: renewal.timeIntervalSince(h.simulator.clock.now()) / ServerHarness.day + 1)
            #expect(try await pro() == "+grace_period")
            try await h.advance(days: 3)
            #expect(try await pro() == "billing_retry")
            try await h.advance(days: 61)
            #expect(try await pro() == "expired")

            // Resubscribe; a refund asked for, declined, granted, then reversed.
            let again = try store.purchase(customer: "ned", product: "pro.monthly", appAccountToken: token)
            try await step()
            #expect(try await pro() == "+active")
            try store.requestRefund(transactionId: again.transactionId)
            try await step()
            try store.declineRefund(transactionId: again.transactionId)
            try await step()
            #expect(try await pro() == "+active")
            try store.refund(transactionId: again.transactionId)
            try await step()
            #expect(try await pro() == "revoked")
            try store.reverseRefund(transactionId: again.transactionId)
            try await step()
            #expect(try await pro() == "+active")

            // Family sharing: a family member's access, then its revocation.
            // Its transaction carries no account token: nora's app transaction links it to her.
            _ = try await h.createCustomer("nora")
            let appTransaction = try store.signedAppTransaction(customer: "nora", bundleId: ServerHarness.bundleID)
            let linked = try await h.request(
                .POST, "/v1/customers/nora/app-transactions", json: #"{"signedAppTransaction": "\#(appTransaction)"}"#)
            #expect(linked.status == 200)
            let shared = try store.purchase(customer: "nora", product: "pro.monthly", ownership: .familyShared)
            try await step()
            #expect(try await h.entitlements("nora")["pro"]?.active == true)
            try store.revokeFamilySharing(transactionId: shared.transactionId)
            try await step()
            #expect(try await h.entitlements("nora")["pro"]?.active == false)

            let sent = Set(store.notifications.compactMap { $0.payload.notificationType?.rawValue })
            for type in [
                "SUBSCRIBED", "PRICE_INCREASE", "OFFER_REDEEMED", "DID_CHANGE_RENEWAL_PREF",
                "DID_CHANGE_RENEWAL_STATUS", "TEST", "RENEWAL_EXTENDED", "DID_FAIL_TO_RENEW", "GRACE_PERIOD_EXPIRED",
                "EXPIRED", "CONSUMPTION_REQUEST", "REFUND_DECLINED", "REFUND", "REFUND_REVERSED", "REVOKE",
            ] {
                #expect(sent.contains(type), "the simulator sent no \(type)")
            }
            let counts = try await h.storage.transaction { try await $0.notificationCounts() }
            #expect(counts[.processed] == store.notifications.count)
            #expect((counts[.failed] ?? 0) + (counts[.pending] ?? 0) == 0)
        }
    }

    /// An App Store Server API client with a key the simulator knows.
    static func apiClient(_ h: ServerHarness) throws -> AppStoreServerAPIClient {
        let privateKey = P256.Signing.PrivateKey()
        let key = try AppStoreSigningKey(pemRepresentation: privateKey.pemRepresentation, keyId: "TYPESKEY01")
        h.simulator.appStore.registerAPIKey(keyId: "TYPESKEY01", publicKey: privateKey.publicKey)
        let tokens = try AppStoreServerAPITokenProvider(
            key: key, issuerId: "57246542-96fe-1a63-e053-0824d011072a", bundleId: ServerHarness.bundleID,
            clock: h.simulator.clock)
        let verifier = try SignedDataVerifier(
            configuration: .init(
                trustedRoots: try TrustedRoots(
                    appleRootFiles: [], allowedRootFiles: [h.simulator.endpoints?.rootCertificatePath ?? ""]),
                bundleId: ServerHarness.bundleID, environment: .sandbox),
            clock: h.simulator.clock)
        return AppStoreServerAPIClient(
            configuration: .init(baseURL: h.simulator.endpoints?.baseURL ?? ""), authorization: tokens,
            verifier: verifier)
    }
}
