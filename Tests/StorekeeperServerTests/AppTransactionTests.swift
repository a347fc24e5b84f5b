import AppStoreServer
import Foundation
import NIOHTTP1
import StoreSimulator
import Storekeeper
import StorekeeperDemo
import StorekeeperServer
import StorekeeperStorage
import Testing

/// App transactions end to end (issue 15, item 1): the app's backend submits the app transaction
/// StoreKit gave the app; purchases that carry its `appTransactionId` but no account token — made
/// outside the app, or a family member's — reach the customer.
@Suite(.serialized) struct AppTransactionTests {
    func submit(_ h: ServerHarness, _ customer: String, _ jws: String) async throws -> (
        status: Int, body: [String: Any]
    ) {
        try await h.request(
            .POST, "/v1/customers/\(customer)/app-transactions", json: #"{"signedAppTransaction": "\#(jws)"}"#)
    }

    func errorCode(_ response: (status: Int, body: [String: Any])) -> String? {
        (response.body["error"] as? [String: Any])?["code"] as? String
    }

    @Test(arguments: StorageBackend.available)
    func purchasesWithoutATokenReachTheCustomerOfTheirAppTransaction(_ backend: StorageBackend) async throws {
        try await ServerHarness.run(on: backend) { h in
            let store = h.simulator.appStore
            _ = try await h.createCustomer("abe")
            let linked = try await submit(
                h, "abe", try store.signedAppTransaction(customer: "abe", bundleId: ServerHarness.bundleID))
            #expect(linked.status == 200)
            #expect(linked.body["customerId"] as? String == "abe")
            #expect(linked.body["environment"] as? String == "sandbox")
            // Bought in the app without an account token: credited to abe through the app transaction.
            let coins = try store.purchase(customer: "abe", product: "coins.100")
            try await h.settle()
            #expect(try await h.balances("abe")["coins"] == 100)
            let purchase = try await h.storage.transaction {
                try await $0.purchase(.appStore(coins.originalTransactionId))
            }
            #expect(purchase?.appTransactionID == linked.body["appTransactionId"] as? String)

            // Bought before the app transaction was submitted: linked when it is.
            _ = try await h.createCustomer("ben")
            _ = try store.purchase(customer: "ben", product: "coins.100")
            try await h.settle()
            #expect(try await h.balances("ben")["coins"] == nil)
            #expect(
                try await submit(
                    h, "ben", try store.signedAppTransaction(customer: "ben", bundleId: ServerHarness.bundleID)
                )
                .status == 200)
            #expect(try await h.balances("ben")["coins"] == 100)
            // Submitting it again changes nothing.
            #expect(
                try await submit(
                    h, "ben", try store.signedAppTransaction(customer: "ben", bundleId: ServerHarness.bundleID)
                )
                .status == 200)
            #expect(try await h.balances("ben")["coins"] == 100)
        }
    }

    @Test(arguments: StorageBackend.available)
    func aFamilyMembersPurchaseReachesTheMemberAndFamilyRevokeTakesItBack(_ backend: StorageBackend) async throws {
        try await ServerHarness.run(on: backend) { h in
            let store = h.simulator.appStore
            let parent = try await h.createCustomer("pam")
            _ = try store.purchase(customer: "pam", product: "pro.monthly", appAccountToken: parent)
            _ = try await h.createCustomer("kit")
            #expect(
                try await submit(
                    h, "kit", try store.signedAppTransaction(customer: "kit", bundleId: ServerHarness.bundleID)
                )
                .status == 200)
            // The family member's transaction: their own appTransactionId, no account token.
            let shared = try store.purchase(
                customer: "kit", product: "pro.monthly", appAccountToken: parent, ownership: .familyShared)
            let signed = try #require(store.transaction(shared.transactionId))
            #expect(signed.appAccountToken == nil)
            #expect(signed.inAppOwnershipType == .familyShared)
            try await h.settle()
            #expect(try await h.entitlements("kit")["pro"]?.active == true)
            #expect(try await h.entitlements("pam")["pro"]?.active == true)

            try store.revokeFamilySharing(transactionId: shared.transactionId)
            try await h.settle()
            #expect(try await h.entitlements("kit")["pro"]?.active == false)
            #expect(try await h.entitlements("kit")["pro"]?.state == "revoked")
            #expect(try await h.entitlements("pam")["pro"]?.active == true)
        }
    }

    @Test(arguments: StorageBackend.available)
    func aBadAppTransactionGetsASpecificErrorAndLinksNothing(_ backend: StorageBackend) async throws {
        try await ServerHarness.run(on: backend) { h in
            let store = h.simulator.appStore
            _ = try await h.createCustomer("cal")
            _ = try await h.createCustomer("dee")
            let valid = try store.signedAppTransaction(customer: "cal", bundleId: ServerHarness.bundleID)
            // Signed by another chain (a test root the configuration does not trust).
            let foreignChain = try TestCertificateChain(options: .init(now: ServerHarness.start, name: "Forger"))
            let payload = try #require(valid.split(separator: ".").dropFirst().first)
            var base64 = payload.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
            let forged = try AppStoreSigner(chain: foreignChain).sign(
                payloadJSON: try #require(Data(base64Encoded: base64)))
            // For an app this server is not configured for.
            store.addApp(SimulatedApp(bundleId: "com.example.unknown", appAppleId: 42, environment: .sandbox))
            let otherApp = try store.signedAppTransaction(customer: "cal", bundleId: "com.example.unknown")
            let cases: [(customer: String, jws: String, status: Int, code: String)] = [
                ("cal", forged, 400, "invalid-signed-data"),
                ("cal", otherApp, 422, "unknown-app"),
                ("cal", "not.a.jws", 400, "invalid-signed-data"),
                ("nobody", valid, 404, "customer-not-found"),
            ]
            for item in cases {
                let response = try await submit(h, item.customer, item.jws)
                #expect(response.status == item.status, "\(item.code)")
                #expect(errorCode(response) == item.code, "\(response.body)")
            }
            // Linked to cal, then refused to dee under the keep policy.
            #expect(try await submit(h, "cal", valid).status == 200)
            let taken = try await submit(h, "dee", valid)
            #expect(taken.status == 409)
            #expect(errorCode(taken) == "ownership-conflict")
            let id = try #require(try await submit(h, "cal", valid).body["appTransactionId"] as? String)
            let link = try await h.storage.transaction {
                try await $0.appTransactionLink(app: AppID(ServerHarness.bundleID), id: id)
            }
            #expect(link?.customerID == CustomerID("cal"))
        }
    }

    /// Under `transfer-if-no-active` an app transaction moves to another customer only once nothing
    /// bought with it grants its owner access.
    @Test(arguments: StorageBackend.available)
    func anAppTransactionMovesOnceItGrantsItsOwnerNothing(_ backend: StorageBackend) async throws {
        try await ServerHarness.run(on: backend, policy: .transferIfNoActive) { h in
            let store = h.simulator.appStore
            _ = try await h.createCustomer("fay")
            _ = try await h.createCustomer("gus")
            let jws = try store.signedAppTransaction(customer: "fay", bundleId: ServerHarness.bundleID)
            #expect(try await submit(h, "fay", jws).status == 200)
            // Bought in the app without an account token: fay's through the app transaction.
            let subscription = try store.purchase(customer: "fay", product: "pro.monthly")
            try await h.settle()
            #expect(try await h.entitlements("fay")["pro"]?.active == true)

            let refused = try await submit(h, "gus", jws)
            #expect(refused.status == 409)
            #expect(errorCode(refused) == "ownership-conflict")

            try store.setAutoRenew(subscription.originalTransactionId, on: false)
            try await h.advance(days: 40)
            try await h.settle()
            #expect(try await h.entitlements("fay")["pro"]?.active == false)
            let moved = try await submit(h, "gus", jws)
            #expect(moved.status == 200)
            #expect(moved.body["customerId"] as? String == "gus")
        }
    }

    @Test(arguments: StorageBackend.available)
    func aTransactionWithoutAppTransactionIdGetsItFromGetAppTransactionInfo(_ backend: StorageBackend) async throws {
        try await ServerHarness.run(on: backend) { h in
            let store = h.simulator.appStore
            let token = try await h.createCustomer("fin")
            // Bought outside the app, from before Apple carried appTransactionId.
            let old = try store.purchase(customer: "fin", product: "lifetime.unlock")
            try store.predateAppTransactionId(transactionId: old.transactionId)
            #expect(store.transaction(old.transactionId)?.appTransactionId == nil)
            let submitted = try await h.request(
                .POST, "/v1/customers/fin/purchases/app-store", json: #"{"transactionId": "\#(old.transactionId)"}"#)
            #expect(submitted.status == 200)
            let stored = try await h.storage.transaction { try await $0.purchase(.appStore(old.originalTransactionId)) }
            let expected = try await h.simulatorAppTransactionID(customer: "fin")
            #expect(stored?.appTransactionID == expected)
            #expect(stored?.customerID == CustomerID("fin"))
            _ = token
        }
    }
}

extension ServerHarness {
    /// The customer's appTransactionId as the simulated App Store knows it (read from their signed
    /// app transaction).
    func simulatorAppTransactionID(customer: String) async throws -> String? {
        let jws = try simulator.appStore.signedAppTransaction(customer: customer, bundleId: ServerHarness.bundleID)
        let payload = try #require(jws.split(separator: ".").dropFirst().first)
        var base64 = payload.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        let object = try JSONSerialization.jsonObject(with: try #require(Data(base64Encoded: base64)))
        return (object as? [String: Any])?["appTransactionId"] as? String
    }
}
