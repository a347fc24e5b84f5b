import AppStoreServer
import Crypto
import Foundation
import NIOHTTP1
import StoreSimulator
import Storekeeper
import StorekeeperDemo
import StorekeeperServer
import StorekeeperStorage
import Testing

/// The signing endpoints (issue 15, item 3) and the `app_gateway` key scope (item 4), end to end:
/// each output checked with the public key by code independent of the server's signers (the V1
/// message joined here, the JWS split and verified here).
@Suite(.serialized) struct SignatureEndpointTests {
    static let gatewayKey = "gw_test_0123456789abcdef0123"

    static func withGateway(acrossStores: Bool = false)
        -> @Sendable (StoreSimulator, inout StorekeeperConfiguration)
        throws -> Void
    {
        { _, configuration in
            configuration.apiKeys.append(ConfiguredAPIKey(name: "gateway", scope: .appGateway, secret: gatewayKey))
            configuration.policies.introductoryOffersAcrossStores = acrossStores
        }
    }

    /// The app's public key, read from the key file the configuration names.
    func publicKey(_ h: ServerHarness) throws -> (keyID: String, key: P256.Signing.PublicKey) {
        let settings = try #require(h.application.configuration.apps.first?.appStore)
        let pem = try String(contentsOfFile: try #require(settings.privateKeyPath), encoding: .utf8)
        return (try #require(settings.keyID), try P256.Signing.PrivateKey(pemRepresentation: pem).publicKey)
    }

    func base64URL(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }

    /// The JWS's header and claims, after checking its ES256 signature with `key`.
    func verifiedJWS(_ jws: String, _ key: P256.Signing.PublicKey) throws -> (
        header: [String: Any], claims: [String: Any]
    ) {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 3)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: try #require(base64URL(parts[2])))
        #expect(key.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8)))
        let headerData = try #require(base64URL(parts[0]))
        let claimsData = try #require(base64URL(parts[1]))
        let header = try #require(try JSONSerialization.jsonObject(with: headerData) as? [String: Any])
        let claims = try #require(try JSONSerialization.jsonObject(with: claimsData) as? [String: Any])
        return (header, claims)
    }

    func expectBaseClaims(_ jws: (header: [String: Any], claims: [String: Any]), keyID: String, audience: String) {
        #expect(jws.header["alg"] as? String == "ES256")
        #expect(jws.header["kid"] as? String == keyID)
        #expect(jws.header["typ"] as? String == "JWT")
        #expect(jws.claims["aud"] as? String == audience)
        #expect(jws.claims["bid"] as? String == ServerHarness.bundleID)
        #expect(jws.claims["iss"] as? String == "57246542-96fe-1a63-e053-0824d011072a")
        #expect((jws.claims["iat"] as? NSNumber)?.int64Value == Int64(ServerHarness.start.timeIntervalSince1970))
        #expect(UUID(uuidString: jws.claims["nonce"] as? String ?? "") != nil)
        #expect((jws.claims["nonce"] as? String) == (jws.claims["nonce"] as? String)?.lowercased())
    }

    func errorCode(_ response: (status: Int, body: [String: Any])) -> String? {
        (response.body["error"] as? [String: Any])?["code"] as? String
    }

    @Test(arguments: StorageBackend.available)
    func promotionalOffersAreSignedForSubscribersOfTheGroup(_ backend: StorageBackend) async throws {
        try await ServerHarness.run(on: backend) { h in
            let (keyID, key) = try publicKey(h)
            let token = try await h.createCustomer("pia")
            let bought = try h.simulator.appStore.purchase(
                customer: "pia", product: "pro.monthly", appAccountToken: token)
            try await h.settle()
            let path = "/v1/customers/pia/signatures/promotional-offer"

            let v1 = try await h.request(
                .POST, path, json: #"{"productId": "pro.monthly", "offerId": "comeback.3months", "format": "v1"}"#)
            #expect(v1.status == 200)
            let username = try #require(v1.body["applicationUsername"] as? String)
            #expect(username == token.uuidString.lowercased())
            let nonce = try #require(v1.body["nonce"] as? String)
            let timestamp = try #require((v1.body["timestamp"] as? NSNumber)?.int64Value)
            #expect(v1.body["keyId"] as? String == keyID)
            let message = [
                ServerHarness.bundleID, keyID, "pro.monthly", "comeback.3months", username, nonce, String(timestamp),
            ]
            .joined(separator: "\u{2063}")
            let der = try #require(Data(base64Encoded: v1.body["signature"] as? String ?? ""))
            #expect(
                key.isValidSignature(try P256.Signing.ECDSASignature(derRepresentation: der), for: Data(message.utf8)))

            let jws = try await h.request(
                .POST, path, json: #"{"productId": "pro.monthly", "offerId": "comeback.3months", "format": "jws"}"#)
            #expect(jws.status == 200)
            let verified = try verifiedJWS(try #require(jws.body["signature"] as? String), key)
            expectBaseClaims(verified, keyID: keyID, audience: "promotional-offer")
            #expect(verified.claims["productId"] as? String == "pro.monthly")
            #expect(verified.claims["offerIdentifier"] as? String == "comeback.3months")
            #expect(verified.claims["transactionId"] as? String == bought.originalTransactionId)
            #expect(
                Set(verified.claims.keys) == [
                    "iss", "iat", "aud", "bid", "nonce", "productId", "offerIdentifier", "transactionId",
                ])

            // Refused, each with its own error.
            _ = try await h.createCustomer("quin")
            let cases: [(customer: String, body: String, status: Int, code: String)] = [
                (
                    "quin", #"{"productId": "pro.monthly", "offerId": "comeback.3months", "format": "v1"}"#, 409,
                    "not-eligible"
                ),
                (
                    "pia", #"{"productId": "pro.monthly", "offerId": "free.forever", "format": "v1"}"#, 404,
                    "unknown-offer"
                ),
                (
                    "pia", #"{"productId": "pro.yearly", "offerId": "comeback.3months", "format": "v1"}"#, 404,
                    "unknown-product"
                ),
                (
                    "pia", #"{"productId": "coins.100", "offerId": "comeback.3months", "format": "v1"}"#, 404,
                    "unknown-product"
                ),
                (
                    "pia", #"{"productId": "pro.monthly", "offerId": "comeback.3months", "format": "v3"}"#, 400,
                    "malformed-body"
                ),
                ("pia", #"{"productId": "pro.monthly"}"#, 400, "malformed-body"),
                (
                    "nobody", #"{"productId": "pro.monthly", "offerId": "comeback.3months", "format": "v1"}"#, 404,
                    "customer-not-found"
                ),
            ]
            for item in cases {
                let response = try await h.request(
                    .POST, "/v1/customers/\(item.customer)/signatures/promotional-offer", json: item.body)
                #expect(response.status == item.status, "\(item.customer) \(item.body)")
                #expect(errorCode(response) == item.code, "\(item.customer) \(item.body)")
            }
        }
    }

    /// One customer, two stores: a Google Play subscription to the "pro" group uses up the App
    /// Store's introductory offer only when the policy says the stores count together.
    @Test(arguments: [false, true])
    func introductoryEligibilityIsDecidedAcrossStoresUnderThePolicy(acrossStores: Bool) async throws {
        for backend in StorageBackend.available {
            try await ServerHarness.run(on: backend, customize: Self.withGateway(acrossStores: acrossStores)) { h in
                let (keyID, key) = try publicKey(h)
                let token = try await h.createCustomer("ray")
                // An App Store transaction to sign for (a coin pack), and a Google subscription to "pro".
                let coins = try h.simulator.appStore.purchase(
                    customer: "ray", product: "coins.100", appAccountToken: token)
                _ = try h.simulator.googlePlay.purchaseSubscription(
                    packageName: ServerHarness.packageName, productId: "premium",
                    options: PlayPurchaseOptions(obfuscatedExternalAccountId: token.uuidString))
                try await h.settle()
                let answer = try await h.request(
                    .POST, "/v1/customers/ray/signatures/introductory-offer-eligibility",
                    json: #"{"productId": "pro.monthly"}"#, key: Self.gatewayKey)
                #expect(answer.status == 200)
                #expect(answer.body["eligible"] as? Bool == !acrossStores, "\(backend)")
                let verified = try verifiedJWS(try #require(answer.body["signature"] as? String), key)
                expectBaseClaims(verified, keyID: keyID, audience: "introductory-offer-eligibility")
                #expect(verified.claims["allowIntroductoryOffer"] as? Bool == !acrossStores)
                #expect(verified.claims["productId"] as? String == "pro.monthly")
                #expect(verified.claims["transactionId"] as? String == coins.originalTransactionId)

                // An App Store subscriber of the group is never eligible.
                let other = try await h.createCustomer("sam")
                _ = try h.simulator.appStore.purchase(customer: "sam", product: "max.monthly", appAccountToken: other)
                try await h.settle()
                let subscriber = try await h.request(
                    .POST, "/v1/customers/sam/signatures/introductory-offer-eligibility",
                    json: #"{"productId": "pro.monthly"}"#)
                #expect(subscriber.body["eligible"] as? Bool == false)
                // Nothing of the App Store to sign for.
                _ = try await h.createCustomer("tia")
                let none = try await h.request(
                    .POST, "/v1/customers/tia/signatures/introductory-offer-eligibility",
                    json: #"{"productId": "pro.monthly"}"#)
                #expect(none.status == 409)
                #expect(errorCode(none) == "app-transaction-required")
            }
        }
    }

    @Test(arguments: StorageBackend.available)
    func advancedCommerceRequestsAreSignedAsGiven(_ backend: StorageBackend) async throws {
        try await ServerHarness.run(on: backend) { h in
            let (keyID, key) = try publicKey(h)
            _ = try await h.createCustomer("uma")
            let request =
                #"{"operation": "CREATE_SUBSCRIPTION", "version": "1", "requestInfo": {"requestReferenceId": "0d1c2b3a-0000-4000-8000-000000000001"}}"#
            let answer = try await h.request(
                .POST, "/v1/customers/uma/signatures/advanced-commerce", json: #"{"request": \#(request)}"#)
            #expect(answer.status == 200)
            let verified = try verifiedJWS(try #require(answer.body["signature"] as? String), key)
            expectBaseClaims(verified, keyID: keyID, audience: "advanced-commerce-api")
            let signed = try #require(Data(base64Encoded: verified.claims["request"] as? String ?? ""))
            let object = try JSONSerialization.jsonObject(with: signed)
            let decoded = try #require(object as? [String: Any])
            #expect(decoded["operation"] as? String == "CREATE_SUBSCRIPTION")
            #expect(
                (decoded["requestInfo"] as? [String: Any])?["requestReferenceId"] as? String
                    == "0d1c2b3a-0000-4000-8000-000000000001")
            let malformed = try await h.request(
                .POST, "/v1/customers/uma/signatures/advanced-commerce", json: #"{"request": [1, 2]}"#)
            #expect(malformed.status == 400)
            #expect(errorCode(malformed) == "malformed-body")
            let stranger = try await h.request(
                .POST, "/v1/customers/nobody/signatures/advanced-commerce", json: #"{"request": \#(request)}"#)
            #expect(stranger.status == 404)
            #expect(errorCode(stranger) == "customer-not-found")
        }
    }

    @Test func anAppGatewayKeyMayOnlySubmitAndSign() async throws {
        try await ServerHarness.run(on: .sqlite, customize: Self.withGateway()) { h in
            let token = try await h.createCustomer("vic")
            _ = try h.simulator.appStore.purchase(customer: "vic", product: "pro.monthly", appAccountToken: token)
            try await h.settle()
            let key = Self.gatewayKey
            let refused: [(HTTPMethod, String, String?)] = [
                (.GET, "/v1/customers/vic", nil),
                (.PUT, "/v1/customers/vic", nil),
                (.PUT, "/v1/customers/vic", #"{"consumptionConsent": true}"#),
                (.POST, "/v1/customers/vic/balances/coins/debits", #"{"amount": 1, "idempotencyKey": "k"}"#),
                (.GET, "/v1/customers/vic/refund-requests", nil),
                (.GET, "/v1/inbox", nil),
            ]
            for (method, path, body) in refused {
                let response = try await h.request(method, path, json: body, key: key)
                #expect(response.status == 403, "\(method) \(path)")
                #expect(errorCode(response) == "api-key-scope", "\(method) \(path)")
            }
            let signed = try await h.request(
                .POST, "/v1/customers/vic/signatures/promotional-offer",
                json: #"{"productId": "pro.monthly", "offerId": "comeback.3months", "format": "jws"}"#, key: key)
            #expect(signed.status == 200)
            // A submission goes through the scope (and is judged on its own: this one is malformed).
            let submitted = try await h.request(.POST, "/v1/customers/vic/purchases/app-store", json: "{}", key: key)
            #expect(submitted.status == 400)
            #expect(errorCode(submitted) != "api-key-scope")
        }
    }

    @Test func withoutASigningKeyTheConfigurationIsNamed() async throws {
        let withoutKey: @Sendable (StoreSimulator, inout StorekeeperConfiguration) throws -> Void = {
            _, configuration in
            configuration.apps[0].appStore?.keyID = nil
            configuration.apps[0].appStore?.issuerID = nil
            configuration.apps[0].appStore?.privateKeyPath = nil
        }
        try await ServerHarness.run(on: .sqlite, customize: withoutKey) { h in
            _ = try await h.createCustomer("wes")
            let response = try await h.request(
                .POST, "/v1/customers/wes/signatures/advanced-commerce", json: #"{"request": {"operation": "X"}}"#)
            #expect(response.status == 422)
            #expect(errorCode(response) == "not-configured")
            let message = (response.body["error"] as? [String: Any])?["message"] as? String ?? ""
            #expect(message.contains("apps.demo.appStore"))
            #expect(message.contains("privateKeyPath"))
        }
    }
}
