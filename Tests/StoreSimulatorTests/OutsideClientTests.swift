import AppStoreServer
import AsyncHTTPClient
import Crypto
import Foundation
import GooglePlay
import NIOCore
import NIOHTTP1
import StoreSimulator
import Synchronization
import Testing

/// What a client outside the simulation needs — Apple's and Google's own libraries, a backend in
/// any language, over HTTP only: whole-millisecond dates on every clock rate, Apple's token rules,
/// token lifetimes on the real clock whatever the simulated clock says, a service account from the
/// control API, OCSP answered by key hash, only documented Google fields, Google's keys before the
/// first push, and Google's calls served or refused the way Google refuses an unsupported one.
@Suite struct OutsideClientTests {
    static let bundleId = "com.example.outside"
    static let keyId = "OUTSIDE001"
    static let day: TimeInterval = 86_400

    // MARK: Helpers

    /// An App Store Server API token signed with `key`, with exactly `claims`.
    static func appStoreToken(_ key: P256.Signing.PrivateKey, claims: [String: Any]) throws -> String {
        let header = try JSONSerialization.data(
            withJSONObject: ["alg": "ES256", "kid": keyId, "typ": "JWT"], options: [.sortedKeys])
        let body = try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])
        let input = Base64URL.encode(header) + "." + Base64URL.encode(body)
        let signature = try key.signature(for: Data(input.utf8))
        return input + "." + Base64URL.encode(signature.rawRepresentation)
    }

    /// Claims as Apple's App Store Server Library for Python sends them: no `iat`, `exp` five
    /// minutes after `now`.
    static func libraryClaims(now: Date, lifetime: TimeInterval = 300) -> [String: Any] {
        [
            "aud": "appstoreconnect-v1", "bid": bundleId, "iss": "57246542-96fe-1a63-e053-0824d011072a",
            "exp": Int(now.timeIntervalSince1970) + Int(lifetime),
        ]
    }

    /// One request; the status and the body as text.
    static func send(
        _ method: HTTPMethod, _ url: String, json: String? = nil, bearer: String? = nil
    ) async throws -> (status: Int, body: String) {
        var request = HTTPClientRequest(url: url)
        request.method = method
        if let bearer { request.headers.add(name: "Authorization", value: "Bearer \(bearer)") }
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: json))
        }
        // Generous: the whole suite runs in parallel on small machines.
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 22)
        return (Int(response.status.code), String(buffer: body))
    }

    /// A simulator with one sandbox app (3 days of grace), a monthly subscription, a consumable
    /// and a registered API key.
    static func withAppStore(
        start: Date, rate: Double, wallClock: any WallClock = SystemWallClock(),
        _ body: (StoreSimulator, StoreSimulator.Endpoints, P256.Signing.PrivateKey) async throws -> Void
    ) async throws {
        try await StoreSimulator.withRunning(configuration: .init(start: start, rate: rate, wallClock: wallClock)) {
            simulator, endpoints in
            let appStore = simulator.appStore
            appStore.addApp(
                SimulatedApp(bundleId: bundleId, appAppleId: 1_234_567_890, environment: .sandbox, gracePeriodDays: 3))
            try appStore.addProduct(
                .autoRenewable("pro.monthly", bundleId: bundleId, group: "pro", level: 1, period: "P1M", price: 9_990))
            try appStore.addProduct(.oneTime("coins.100", bundleId: bundleId, kind: .consumable, price: 990))
            let key = P256.Signing.PrivateKey()
            appStore.registerAPIKey(keyId: keyId, publicKey: key.publicKey)
            try await body(simulator, endpoints, key)
        }
    }

    /// Every JSON text inside `text`: itself, and the payload of every compact JWS among its strings,
    /// recursively (notifications hold signed transactions and renewal infos).
    static func jsonTexts(in text: String) -> [String] {
        var texts = [text]
        let jwsPattern = /"(eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)"/
        for match in text.matches(of: jwsPattern) {
            let parts = match.output.1.split(separator: ".")
            guard parts.count == 3, let payload = Base64URL.decode(parts[1]) else { continue }
            texts += jsonTexts(in: String(decoding: payload, as: UTF8.self))
        }
        return texts
    }

    /// Every `"…Date": number` member in `texts`, with the number as written.
    static func dateMembers(in texts: [String]) -> [(name: String, value: String)] {
        let member = /"([A-Za-z]*Date)"\s*:\s*(-?[0-9][0-9.eE+-]*)/
        return texts.flatMap { text in
            text.matches(of: member).map { (String($0.output.1), String($0.output.2)) }
        }
    }

    // MARK: 1. Whole milliseconds

    /// At a non-zero rate from a start between two milliseconds, every date in signed payloads,
    /// notifications and API answers is a whole number of milliseconds, and one transaction's dates
    /// are the same in every answer.
    @Test func everyAppStoreDateIsWholeMillisecondsAtAnAcceleratedRate() async throws {
        let start = Date(timeIntervalSince1970: 1_798_107_835.032_214)
        let receiver = NotificationReceiver()
        try await receiver.start()
        do {
            try await Self.withAppStore(start: start, rate: 3_600) { simulator, endpoints, key in
                let appStore = simulator.appStore
                // Every notification gets an attempt (`attemptDate`).
                try appStore.setNotificationURL(receiver.url, bundleId: Self.bundleId)
                let subscription = try appStore.purchase(customer: "ana", product: "pro.monthly")
                let coins = try appStore.purchase(customer: "ana", product: "coins.100")
                try appStore.refund(transactionId: coins.transactionId)
                try appStore.failBilling(subscription.originalTransactionId)
                try appStore.advance(by: 31 * Self.day)  // the renewal fails: grace period
                #expect(appStore.subscription(subscription.originalTransactionId)?.gracePeriodExpiresDate != nil)
                // Stopped where it is, so that retries stop coming due and deliveries settle.
                simulator.clock.setRate(0)
                try await appStore.deliveriesSettled()

                let token = try Self.appStoreToken(key, claims: Self.libraryClaims(now: Date()))
                let base = endpoints.baseURL + "/inApps"
                let now = Int64(simulator.clock.now().timeIntervalSince1970 * 1000)
                let history = #"{"startDate": \#(now - 400 * 86_400_000), "endDate": \#(now + 86_400_000)}"#
                var texts: [String] = []
                for (method, url, json) in [
                    (HTTPMethod.GET, "\(base)/v1/transactions/\(subscription.transactionId)", nil),
                    (.GET, "\(base)/v1/subscriptions/\(subscription.transactionId)", nil),
                    (.GET, "\(base)/v2/history/\(subscription.transactionId)", nil),
                    (.GET, "\(base)/v2/refund/lookup/\(subscription.transactionId)", nil),
                    (.GET, "\(base)/v1/transactions/appTransactions/\(subscription.transactionId)", nil),
                    (.POST, "\(base)/v1/notifications/history", history),
                ] as [(HTTPMethod, String, String?)] {
                    let answer = try await Self.send(method, url, json: json, bearer: token)
                    #expect(answer.status == 200, "\(url): \(answer.body)")
                    texts += Self.jsonTexts(in: answer.body)
                }
                for notification in appStore.notifications {
                    texts += Self.jsonTexts(in: #"{"signedPayload": "\#(notification.signedPayload)"}"#)
                }

                let dates = Self.dateMembers(in: texts)
                let names = Set(dates.map(\.name))
                for expected in [
                    "signedDate", "purchaseDate", "originalPurchaseDate", "expiresDate", "revocationDate",
                    "renewalDate",
                    "recentSubscriptionStartDate", "gracePeriodExpiresDate", "attemptDate", "receiptCreationDate",
                ] {
                    #expect(names.contains(expected), "no \(expected) in the answers")
                }
                let fractional = dates.filter { !$0.value.allSatisfy(\.isNumber) && !$0.value.hasPrefix("-") }
                #expect(fractional.isEmpty, "dates that are not whole milliseconds: \(fractional.prefix(5))")

                // The same transaction carries the same dates in every answer.
                let expiries = texts.compactMap { text -> String? in
                    guard text.contains(#""transactionId":"\#(subscription.transactionId)""#) else { return nil }
                    return text.firstMatch(of: /"expiresDate":([0-9]+)/).map { String($0.output.1) }
                }
                #expect(expiries.count >= 3)
                #expect(Set(expiries).count == 1, "\(expiries)")
            }
        } catch {
            await receiver.stop()
            throw error
        }
        await receiver.stop()
    }

    /// The App Store encoder writes whole milliseconds, rounding a date between two to the nearer.
    @Test func appStoreEncoderWritesWholeMilliseconds() throws {
        struct Dated: Codable { var date: Date }
        let encoder = AppStoreJSON.makeEncoder()
        let text = { (date: Date) throws -> String in
            String(decoding: try encoder.encode(Dated(date: date)), as: UTF8.self)
        }
        #expect(try text(Date(timeIntervalSince1970: 1_798_107_835.032_214)) == #"{"date":1798107835032}"#)
        #expect(try text(Date(timeIntervalSince1970: 1_798_107_835.032_6)) == #"{"date":1798107835033}"#)
        #expect(try text(Date(timeIntervalSince1970: 1_798_107_835.032)) == #"{"date":1798107835032}"#)
    }

    // MARK: 2. Tokens without iat

    /// Apple's own library signs `aud`, `bid`, `exp` and `iss` and no `iat`; the App Store accepts that
    /// (the hour then counts from now), and so does the simulator.
    @Test func appStoreTokenWithoutIssuedAtIsAccepted() async throws {
        try await Self.withAppStore(start: Date(), rate: 1) { simulator, endpoints, key in
            let purchase = try simulator.appStore.purchase(customer: "bo", product: "coins.100")
            let url = endpoints.baseURL + "/inApps/v1/transactions/\(purchase.transactionId)"
            let accepted = try Self.appStoreToken(key, claims: Self.libraryClaims(now: Date()))
            #expect(try await Self.send(.GET, url, bearer: accepted).status == 200)
            // Still at most an hour, and not expired.
            let tooLong = try Self.appStoreToken(key, claims: Self.libraryClaims(now: Date(), lifetime: 7_200))
            #expect(try await Self.send(.GET, url, bearer: tooLong).status == 401)
            let expired = try Self.appStoreToken(key, claims: Self.libraryClaims(now: Date(), lifetime: -120))
            #expect(try await Self.send(.GET, url, bearer: expired).status == 401)
        }
    }

    // MARK: 3. Token lifetimes on the real clock

    /// After the simulated clock moves a month, tokens a client makes from its own (real) clock still
    /// work: App Store API tokens, Google service-account assertions, and access tokens already
    /// issued. Access tokens expire in real time; subscriptions keep following the simulated clock.
    @Test func clientTokensFromTheWallClockWorkAfterASimulatedMonth() async throws {
        let start = Date(timeIntervalSince1970: 1_790_000_000)
        let wall = ManualClock(start)
        try await Self.withAppStore(start: start, rate: 0, wallClock: wall) { simulator, endpoints, key in
            let purchase = try simulator.appStore.purchase(customer: "cy", product: "pro.monthly")
            let play = simulator.googlePlay
            play.addApp(SimulatedPlayApp(packageName: "com.example.outside"))
            try play.addSubscription(
                SimulatedPlaySubscription(
                    packageName: "com.example.outside", productId: "premium",
                    basePlans: [SimulatedBasePlan(basePlanId: "monthly", billingPeriod: .iso8601("P1M"))]))
            let playPurchase = try play.purchaseSubscription(
                packageName: "com.example.outside", productId: "premium", basePlanId: "monthly")
            let account = try simulator.googleIdentity.makeServiceAccount()
            // A real client: its token provider runs on the real clock.
            let client = ServiceAccountTokenProvider(key: try ServiceAccountKey(jsonData: account.jsonKey), clock: wall)
            let accessToken = try await client.accessToken()
            let playURL =
                endpoints.baseURL
                + "/androidpublisher/v3/applications/com.example.outside/purchases/subscriptionsv2/tokens/"
                + playPurchase.purchaseToken

            try simulator.appStore.advance(by: 31 * Self.day)
            #expect(simulator.appStore.subscription(purchase.originalTransactionId)?.transactionIds.count == 2)

            let appStoreURL = endpoints.baseURL + "/inApps/v1/subscriptions/\(purchase.transactionId)"
            var claims = Self.libraryClaims(now: wall.now())
            claims["iat"] = Int(wall.now().timeIntervalSince1970)
            #expect(
                try await Self.send(.GET, appStoreURL, bearer: try Self.appStoreToken(key, claims: claims)).status
                    == 200)
            let withoutIssuedAt = try Self.appStoreToken(key, claims: Self.libraryClaims(now: wall.now()))
            #expect(try await Self.send(.GET, appStoreURL, bearer: withoutIssuedAt).status == 200)
            // A token current on neither clock is refused.
            let stale = try Self.appStoreToken(
                key, claims: Self.libraryClaims(now: wall.now().addingTimeInterval(-7_200)))
            #expect(try await Self.send(.GET, appStoreURL, bearer: stale).status == 401)

            // The access token issued before the simulated month is still good, and a new assertion
            // from the real clock gets a new one.
            #expect(try await Self.send(.GET, playURL, bearer: accessToken).status == 200)
            let another = ServiceAccountTokenProvider(
                key: try ServiceAccountKey(jsonData: account.jsonKey), clock: wall)
            let second = try await another.accessToken()
            #expect(second != accessToken)
            #expect(try await Self.send(.GET, playURL, bearer: second).status == 200)
            // An hour of real time later, both have expired.
            wall.advance(by: 3_601)
            #expect(try await Self.send(.GET, playURL, bearer: accessToken).status == 401)
            #expect(!simulator.googleIdentity.isValidAccessToken(second))

            // Push tokens are current on both clocks.
            let push = try simulator.googleIdentity.makePushToken(audience: "https://example.com/push", email: "p@x")
            let parts = push.split(separator: ".")
            let pushPayload = try #require(Base64URL.decode(parts[1]))
            let pushClaims = try #require(try JSONSerialization.jsonObject(with: pushPayload) as? [String: Any])
            let iat = try #require(pushClaims["iat"] as? Int)
            let exp = try #require(pushClaims["exp"] as? Int)
            #expect(iat <= Int(wall.now().timeIntervalSince1970))
            #expect(exp >= Int(simulator.clock.now().timeIntervalSince1970) + 3_600)
        }
    }

    // MARK: 5. A service account over HTTP

    /// `POST /control/googleplay/service-accounts` writes a key file next to the root certificate and
    /// answers its path and contents; Google's token flow works with it, and a second key for the same
    /// account leaves the first one working.
    @Test func serviceAccountFromTheControlAPI() async throws {
        try await PlayHarness.run { h in
            let url = h.endpoints.controlURL + "/googleplay/service-accounts"
            let created = try await Self.send(.POST, url, json: "{}")
            #expect(created.status == 200, "\(created.body)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(created.body.utf8)) as? [String: Any])
            let path = try #require(object["keyFile"] as? String)
            #expect(
                URL(fileURLWithPath: path).deletingLastPathComponent().path
                    == URL(fileURLWithPath: h.endpoints.rootCertificatePath).deletingLastPathComponent().path)
            let key = try ServiceAccountKey(contentsOfFile: path)
            #expect(key.clientEmail == GooglePlayIdentity.defaultServiceAccountEmail)
            #expect(object["email"] as? String == key.clientEmail)
            #expect((object["key"] as? [String: Any])?["private_key_id"] as? String == key.privateKeyID)
            #expect(key.tokenURI == h.endpoints.baseURL + GooglePlayIdentity.tokenPath)
            let first = ServiceAccountTokenProvider(key: key, clock: h.simulator.clock)
            #expect(h.simulator.googleIdentity.isValidAccessToken(try await first.accessToken()))

            let named = try await Self.send(
                .POST, url, json: #"{"email": "ci@tests.iam.gserviceaccount.com", "projectId": "tests"}"#)
            let namedPath = try #require(
                (try JSONSerialization.jsonObject(with: Data(named.body.utf8)) as? [String: Any])?["keyFile"] as? String
            )
            #expect(try ServiceAccountKey(contentsOfFile: namedPath).clientEmail == "ci@tests.iam.gserviceaccount.com")
            // Same account again: a new key, and the first file still works.
            _ = try await Self.send(.POST, url, json: "{}")
            first.invalidate()
            #expect(h.simulator.googleIdentity.isValidAccessToken(try await first.accessToken()))
        }
    }

    // MARK: 6. OCSP by key hash

    /// The responder names itself by the SHA-1 of its key (`responderID` `byKey`), as Apple's does.
    @Test func ocspAnswersIdentifyTheResponderByKeyHash() async throws {
        try await StoreSimulator.withRunning { simulator, endpoints in
            let chain = try #require(simulator.chain)
            let responder = try #require(simulator.ocspResponder)
            let transport = CapturingOCSPTransport(responder: responder)
            let roots = try TrustedRoots(appleRootFiles: [], allowedRootFiles: [endpoints.rootCertificatePath])
            let verifier = try SignedDataVerifier(
                configuration: .init(trustedRoots: roots, environment: .sandbox, onlineChecks: true),
                ocspTransport: transport)
            let token = try AppStoreSigner(chain: chain).sign(
                JWSRenewalInfo(environment: .sandbox, originalTransactionId: "1", signedDate: simulator.clock.now()))
            _ = try await verifier.verify(token, as: JWSRenewalInfo.self)

            let answers = transport.answers
            #expect(answers.count == 2)
            // [2] EXPLICIT OCTET STRING (20 bytes): the issuer's key hash; the leaf's issuer is the
            // intermediate, the intermediate's is the root.
            let intermediateHash = Array(Insecure.SHA1.hash(data: chain.intermediateKey.publicKey.x963Representation))
            let rootHash = Array(Insecure.SHA1.hash(data: chain.rootKey.publicKey.x963Representation))
            let expected = Set([intermediateHash, rootHash].map { [0xA2, 0x16, 0x04, 0x14] + $0 })
            let found = Set(answers.compactMap { answer in expected.first { answer.contains($0) } })
            #expect(found == expected)
        }
    }

    // MARK: 7 and 8. Google's documented answers and calls

    /// `subscriptionsv2.get` carries the latest order in `lineItems[].latestSuccessfulOrderId` only:
    /// `latestOrderId` is not a field of Google's resource any more.
    @Test func subscriptionV2AnswersOnlyDocumentedFields() async throws {
        try await PlayHarness.run { h in
            let purchase = try h.play.purchaseSubscription(
                packageName: PlayHarness.package, productId: "premium", basePlanId: "monthly")
            let answer = try await h.get("purchases/subscriptionsv2/tokens/\(purchase.purchaseToken)")
            #expect(answer.status == 200)
            let object = try #require(try JSONSerialization.jsonObject(with: answer.body) as? [String: Any])
            #expect(object["latestOrderId"] == nil)
            let items = try #require(object["lineItems"] as? [[String: Any]])
            #expect(items.first?["latestSuccessfulOrderId"] as? String == purchase.orderId)
        }
    }

    /// Google serves its JWKS whether or not anything was pushed yet.
    @Test func googleKeysAreServedBeforeTheFirstPush() async throws {
        try await StoreSimulator.withRunning(configuration: .init(rate: 0)) { simulator, endpoints in
            let answer = try await Self.send(.GET, endpoints.baseURL + GooglePlayIdentity.certsPath)
            #expect(answer.status == 200)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any])
            let keys = try #require(object["keys"] as? [[String: Any]])
            #expect(keys.count == 1)
            #expect(keys.first?["kid"] as? String == simulator.googleIdentity.pushSigningKeyIDs.first)
            #expect(simulator.googlePlay.pushes.isEmpty)
        }
    }

    /// `orders.refund` (with and without `revoke`) and `purchases.subscriptions.cancel` are served;
    /// any other Android Publisher call answers Google's 501 `UNIMPLEMENTED`, not a bare 404.
    @Test func refundAndLegacyCancelAreServedOtherCallsAreUnimplemented() async throws {
        try await PlayHarness.run { h in
            let kept = try h.play.purchaseSubscription(
                packageName: PlayHarness.package, productId: "premium", basePlanId: "monthly")
            let ended = try h.play.purchaseSubscription(
                packageName: PlayHarness.package, productId: "gold", basePlanId: "monthly")
            #expect(try await h.post("orders/\(try #require(kept.orderId)):refund").status == 204)
            #expect(try await h.post("orders/\(try #require(ended.orderId)):refund?revoke=true").status == 204)
            #expect(try await h.subscriptionV2(kept.purchaseToken).subscriptionState == .active)
            #expect(try await h.subscriptionV2(ended.purchaseToken).subscriptionState == .expired)
            let voided = h.play.voidedPurchases
            #expect(Set(voided.map(\.orderId)) == Set([kept.orderId, ended.orderId]))
            #expect(voided.allSatisfy { $0.voidedSource == .developer })
            let again = try await h.post("orders/\(try #require(kept.orderId)):refund")
            #expect(again.status == 400)
            #expect(try await h.post("orders/GPA.0000-0000-0000-00000:refund").status == 404)

            let cancel = "purchases/subscriptions/premium/tokens/\(kept.purchaseToken):cancel"
            #expect(try await h.post(cancel).status == 204)
            let canceled = try await h.subscriptionV2(kept.purchaseToken)
            #expect(canceled.subscriptionState == .canceled)
            #expect(canceled.canceledStateContext?.developerInitiatedCancellation != nil)
            let mismatch = try await h.post("purchases/subscriptions/gold/tokens/\(kept.purchaseToken):cancel")
            #expect(mismatch.status == 400)

            let unsupported = try await h.get("inappproducts")
            #expect(unsupported.status == 501)
            let error = try unsupported.decode(GoogleAPIErrorBody.self).error
            #expect(error?.status == "UNIMPLEMENTED")
            #expect(error?.code == 501)
            #expect(try await h.post("orders/\(try #require(kept.orderId)):reviewrefund").status == 501)
            // Without a token, 401 as for every Google API call.
            #expect(try await playRequest(.GET, h.url("inappproducts")).status == 401)
            // The served routes still answer.
            #expect(try await h.get("orders/\(try #require(kept.orderId))").status == 200)
        }
    }
}

/// An OCSP transport that asks the simulator's responder in-process and keeps every answer.
final class CapturingOCSPTransport: OCSPTransport {
    let responder: TestOCSPResponder
    private let captured = Mutex<[[UInt8]]>([])

    init(responder: TestOCSPResponder) { self.responder = responder }

    var answers: [[UInt8]] { captured.withLock { $0 } }

    func send(request: [UInt8], to uri: String) async throws -> [UInt8] {
        let answer = try responder.respond(to: request)
        captured.withLock { $0.append(answer) }
        return answer
    }
}

extension Array where Element == UInt8 {
    /// Whether `needle` occurs in the array.
    func contains(_ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return false }
        return (0...(count - needle.count)).contains { Array(self[$0..<($0 + needle.count)]) == needle }
    }
}
