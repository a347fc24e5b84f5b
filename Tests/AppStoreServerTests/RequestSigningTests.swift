import AppStoreServer
import Crypto
import Foundation
import StoreSimulator
import Testing

/// A compact JWS taken apart the way a receiver would.
struct DecodedJWS {
    var header: [String: Any]
    var claims: [String: Any]
    var claimsText: String
    var signingInput: Data
    var signature: Data

    init(_ token: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 3, "a compact JWS has three parts", sourceLocation: sourceLocation)
        let headerJSON = try #require(Base64URL.decode(parts[0]), sourceLocation: sourceLocation)
        let claimsJSON = try #require(Base64URL.decode(parts[1]), sourceLocation: sourceLocation)
        header = try #require(
            try JSONSerialization.jsonObject(with: headerJSON) as? [String: Any], sourceLocation: sourceLocation)
        claims = try #require(
            try JSONSerialization.jsonObject(with: claimsJSON) as? [String: Any], sourceLocation: sourceLocation)
        claimsText = String(decoding: claimsJSON, as: UTF8.self)
        signingInput = Data((parts[0] + "." + parts[1]).utf8)
        signature = try #require(Base64URL.decode(parts[2]), sourceLocation: sourceLocation)
    }

    /// Whether the signature is a raw r‖s ES256 signature that verifies with `publicKey`.
    func verifies(with publicKey: P256.Signing.PublicKey) -> Bool {
        guard signature.count == 64, let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else {
            return false
        }
        return publicKey.isValidSignature(ecdsa, for: signingInput)
    }

    /// The header as strings; nil when a member is not a string.
    var stringHeader: [String: String]? { header as? [String: String] }
}

/// Deterministic inputs shared by the tests.
struct SigningFixture {
    static let keyId = "2X9R4HXF34"
    static let issuerId = "57246542-96fe-1a63-e053-0824d011072a"
    static let bundleId = "com.example.storekeeper"
    /// 2025-03-03T23:14:23.25Z; a quarter second so milliseconds are exact in binary floating point.
    static let date = Date(timeIntervalSince1970: 1_741_043_663.25)
    static let nonce = UUID(uuidString: "6584BEDF-2ED0-4C01-93ED-C0C64A1670CC")!
    static let appAccountToken = UUID(uuidString: "7E3FB20B-4CDB-47CC-936D-99D65F608138")!

    let privateKey = P256.Signing.PrivateKey()
    let key: AppStoreSigningKey
    let clock = ManualClock(SigningFixture.date)

    init() throws {
        key = try AppStoreSigningKey(pemRepresentation: privateKey.pemRepresentation, keyId: Self.keyId)
    }

    var publicKey: P256.Signing.PublicKey { privateKey.publicKey }

    func requestSigner(nonces: RequestNonceGenerator = RequestNonceGenerator { SigningFixture.nonce }) throws
        -> AppStoreRequestSigner
    {
        try AppStoreRequestSigner(
            key: key, issuerId: Self.issuerId, bundleId: Self.bundleId, clock: clock, nonces: nonces)
    }
}

func isLowercaseUUID(_ text: String) -> Bool {
    text.wholeMatch(of: /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/) != nil
}

// MARK: - Promotional offer V1

@Suite struct PromotionalOfferV1Tests {
    let fixture: SigningFixture
    init() throws { fixture = try SigningFixture() }

    @Test func messageIsTheSevenFieldsJoinedByInvisibleSeparatorWithLowercaseUUIDs() throws {
        let message = try PromotionalOfferV1Signer.message(
            bundleId: "com.example.storekeeper", keyId: "2X9R4HXF34", productId: "pro.monthly", offerId: "winback50",
            appAccountToken: SigningFixture.appAccountToken, nonce: SigningFixture.nonce, timestamp: 1_741_043_663_250)
        let expected =
            "com.example.storekeeper\u{2063}2X9R4HXF34\u{2063}pro.monthly\u{2063}winback50\u{2063}"
            + "7e3fb20b-4cdb-47cc-936d-99d65f608138\u{2063}6584bedf-2ed0-4c01-93ed-c0c64a1670cc\u{2063}1741043663250"
        #expect(message == Data(expected.utf8))
        // U+2063 is E2 81 A3 in UTF-8, six times.
        let separator: [UInt8] = [0xE2, 0x81, 0xA3]
        let bytes = [UInt8](message)
        let count = (0...(bytes.count - 3)).filter { Array(bytes[$0..<$0 + 3]) == separator }.count
        #expect(count == 6)
        #expect(bytes.starts(with: Array("com.example.storekeeper".utf8) + separator))
    }

    @Test func emptyAppAccountTokenLeavesTwoSeparatorsSideBySide() throws {
        let message = try PromotionalOfferV1Signer.message(
            bundleId: "com.example.storekeeper", keyId: "2X9R4HXF34", productId: "pro.monthly", offerId: "winback50",
            appAccountToken: nil, nonce: SigningFixture.nonce, timestamp: 1_741_043_663_250)
        let expected =
            "com.example.storekeeper\u{2063}2X9R4HXF34\u{2063}pro.monthly\u{2063}winback50\u{2063}\u{2063}"
            + "6584bedf-2ed0-4c01-93ed-c0c64a1670cc\u{2063}1741043663250"
        #expect(message == Data(expected.utf8))
    }

    @Test func signatureIsDERBase64OverTheExactMessage() throws {
        let signer = try PromotionalOfferV1Signer(
            key: fixture.key, bundleId: SigningFixture.bundleId, clock: fixture.clock,
            nonces: RequestNonceGenerator { SigningFixture.nonce })
        let result = try signer.sign(
            productId: "pro.monthly", offerId: "winback50", appAccountToken: SigningFixture.appAccountToken)
        #expect(result.keyId == "2X9R4HXF34")
        #expect(result.nonce == "6584bedf-2ed0-4c01-93ed-c0c64a1670cc")
        #expect(result.timestamp == 1_741_043_663_250)
        let der = try #require(Data(base64Encoded: result.signature))
        let signature = try P256.Signing.ECDSASignature(derRepresentation: der)
        #expect(der.first == 0x30)  // a DER SEQUENCE, not raw r‖s
        let message = try PromotionalOfferV1Signer.message(
            bundleId: SigningFixture.bundleId, keyId: "2X9R4HXF34", productId: "pro.monthly", offerId: "winback50",
            appAccountToken: SigningFixture.appAccountToken, nonce: SigningFixture.nonce, timestamp: 1_741_043_663_250)
        #expect(fixture.publicKey.isValidSignature(signature, for: message))
        // Any other message, or another key, does not verify.
        let otherOffer = try PromotionalOfferV1Signer.message(
            bundleId: SigningFixture.bundleId, keyId: "2X9R4HXF34", productId: "pro.monthly", offerId: "winback51",
            appAccountToken: SigningFixture.appAccountToken, nonce: SigningFixture.nonce, timestamp: 1_741_043_663_250)
        #expect(!fixture.publicKey.isValidSignature(signature, for: otherOffer))
        let withoutToken = try PromotionalOfferV1Signer.message(
            bundleId: SigningFixture.bundleId, keyId: "2X9R4HXF34", productId: "pro.monthly", offerId: "winback50",
            appAccountToken: nil, nonce: SigningFixture.nonce, timestamp: 1_741_043_663_250)
        #expect(!fixture.publicKey.isValidSignature(signature, for: withoutToken))
        #expect(!P256.Signing.PrivateKey().publicKey.isValidSignature(signature, for: message))
    }

    @Test func encodesAsTheFourFieldsTheAppNeeds() throws {
        let value = PromotionalOfferSignatureV1(
            keyId: "2X9R4HXF34", nonce: "6584bedf-2ed0-4c01-93ed-c0c64a1670cc", timestamp: 1_741_043_663_250,
            signature: "MEUCIQ+/=")
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let json = String(decoding: try encoder.encode(value), as: UTF8.self)
        #expect(
            json
                == #"{"keyId":"2X9R4HXF34","nonce":"6584bedf-2ed0-4c01-93ed-c0c64a1670cc","signature":"MEUCIQ+/=","timestamp":1741043663250}"#
        )
        #expect(try JSONDecoder().decode(PromotionalOfferSignatureV1.self, from: Data(json.utf8)) == value)
    }

    @Test func freshNonceForEachSignatureBySystemDefault() throws {
        let signer = try PromotionalOfferV1Signer(key: fixture.key, bundleId: SigningFixture.bundleId)
        let first = try signer.sign(productId: "pro.monthly", offerId: "winback50")
        let second = try signer.sign(productId: "pro.monthly", offerId: "winback50")
        #expect(isLowercaseUUID(first.nonce))
        #expect(isLowercaseUUID(second.nonce))
        #expect(first.nonce != second.nonce)
    }

    @Test func fieldHoldingTheSeparatorOrEmptyIsRefused() throws {
        let signer = try PromotionalOfferV1Signer(key: fixture.key, bundleId: SigningFixture.bundleId)
        #expect(throws: RequestSigningError(.invalidInput, "the offer id contains U+2063, the field separator")) {
            try signer.sign(productId: "pro.monthly", offerId: "a\u{2063}b")
        }
        #expect(throws: RequestSigningError(.invalidInput, "the product id is empty")) {
            try signer.sign(productId: "", offerId: "winback50")
        }
    }
}

// MARK: - JWS request signatures

@Suite struct RequestJWSTests {
    let fixture: SigningFixture
    init() throws { fixture = try SigningFixture() }

    static let header = ["alg": "ES256", "kid": "2X9R4HXF34", "typ": "JWT"]

    /// Checks the base claims every request JWS carries, and returns the rest.
    func featureClaims(
        _ jws: DecodedJWS, audience: String, sourceLocation: SourceLocation = #_sourceLocation
    ) -> [String: Any] {
        #expect(jws.stringHeader == Self.header, "header \(jws.header)", sourceLocation: sourceLocation)
        #expect(jws.claims["iss"] as? String == SigningFixture.issuerId, sourceLocation: sourceLocation)
        #expect(jws.claims["iat"] as? Int == 1_741_043_663, sourceLocation: sourceLocation)
        #expect(jws.claims["aud"] as? String == audience, sourceLocation: sourceLocation)
        #expect(jws.claims["bid"] as? String == "com.example.storekeeper", sourceLocation: sourceLocation)
        #expect(
            jws.claims["nonce"] as? String == "6584bedf-2ed0-4c01-93ed-c0c64a1670cc", sourceLocation: sourceLocation)
        #expect(jws.verifies(with: fixture.publicKey), sourceLocation: sourceLocation)
        return jws.claims.filter { !["iss", "iat", "aud", "bid", "nonce"].contains($0.key) }
    }

    @Test func promotionalOfferJWSHasExactlyTheDocumentedClaims() throws {
        let token = try fixture.requestSigner().promotionalOfferSignature(
            productId: "pro.monthly", offerIdentifier: "winback50", transactionId: "1000011859217")
        let jws = try DecodedJWS(token)
        let rest = featureClaims(jws, audience: "promotional-offer")
        #expect(
            rest as? [String: String]
                == ["productId": "pro.monthly", "offerIdentifier": "winback50", "transactionId": "1000011859217"])
        #expect(jws.claims.count == 8)
    }

    @Test func promotionalOfferJWSWithoutTransactionIdOmitsTheClaim() throws {
        let token = try fixture.requestSigner().promotionalOfferSignature(
            productId: "pro.monthly", offerIdentifier: "winback50")
        let jws = try DecodedJWS(token)
        let rest = featureClaims(jws, audience: "promotional-offer")
        #expect(rest as? [String: String] == ["productId": "pro.monthly", "offerIdentifier": "winback50"])
        #expect(!jws.claimsText.contains("transactionId"))
    }

    @Test(arguments: [true, false])
    func introductoryOfferEligibilityJWSHasExactlyTheDocumentedClaims(allow: Bool) throws {
        let token = try fixture.requestSigner().introductoryOfferEligibilitySignature(
            productId: "pro.monthly", allowIntroductoryOffer: allow, transactionId: "1000011859217")
        let jws = try DecodedJWS(token)
        let rest = featureClaims(jws, audience: "introductory-offer-eligibility")
        #expect(Set(rest.keys) == ["productId", "allowIntroductoryOffer", "transactionId"])
        #expect(rest["productId"] as? String == "pro.monthly")
        #expect(rest["transactionId"] as? String == "1000011859217")
        // A JSON boolean, not a number or a string.
        #expect(jws.claimsText.contains("\"allowIntroductoryOffer\":\(allow)"))
    }

    @Test func advancedCommerceJWSCarriesTheRequestAsStandardBase64OfTheExactBytes() throws {
        // Bytes whose base64 has "+", "/" and padding, to tell standard base64 from base64url.
        let request = Data(#"{"operation":"CREATE_SUBSCRIPTION","requestInfo":{"requestReferenceId":"ÿ?>"}}"#.utf8)
        let token = try fixture.requestSigner().advancedCommerceInAppSignature(requestJSON: request)
        let jws = try DecodedJWS(token)
        let rest = featureClaims(jws, audience: "advanced-commerce-api")
        #expect(Set(rest.keys) == ["request"])
        let encoded = try #require(rest["request"] as? String)
        #expect(encoded.contains("/") && encoded.hasSuffix("="), "the fixture must tell base64 from base64url")
        #expect(encoded == request.base64EncodedString())
        #expect(Data(base64Encoded: encoded) == request)
    }

    @Test func advancedCommerceRequestThatIsNotAJSONObjectIsRefused() throws {
        let signer = try fixture.requestSigner()
        for bad in ["", "[1]", "not json", "\"text\""] {
            #expect(throws: RequestSigningError(.invalidInput, "the Advanced Commerce request is not a JSON object")) {
                try signer.advancedCommerceInAppSignature(requestJSON: Data(bad.utf8))
            }
        }
    }

    @Test func advancedCommerceEncodableRequestIsEncodedAsAppStoreJSON() throws {
        struct Request: Encodable {
            var operation = "CREATE_ONE_TIME_CHARGE"
            var storefront = "USA"
        }
        let token = try fixture.requestSigner().advancedCommerceInAppSignature(request: Request())
        let jws = try DecodedJWS(token)
        let encoded = try #require(jws.claims["request"] as? String)
        let json = try #require(Data(base64Encoded: encoded))
        #expect(String(decoding: json, as: UTF8.self) == #"{"operation":"CREATE_ONE_TIME_CHARGE","storefront":"USA"}"#)
    }

    @Test func eachJWSGetsAFreshLowercaseNonceBySystemDefault() throws {
        let signer = try AppStoreRequestSigner(
            key: fixture.key, issuerId: SigningFixture.issuerId, bundleId: SigningFixture.bundleId)
        let nonces = try (0..<3).map { _ in
            try DecodedJWS(signer.promotionalOfferSignature(productId: "p", offerIdentifier: "o")).claims["nonce"]
                as? String ?? ""
        }
        #expect(nonces.allSatisfy(isLowercaseUUID), "\(nonces)")
        #expect(Set(nonces).count == 3)
    }

    @Test func signatureOverEditedClaimsDoesNotVerify() throws {
        let token = try fixture.requestSigner().promotionalOfferSignature(
            productId: "pro.monthly", offerIdentifier: "winback50")
        var parts = token.split(separator: ".").map(String.init)
        let edited = try DecodedJWS(token).claimsText.replacingOccurrences(of: "winback50", with: "winback99")
        parts[1] = Base64URL.encode(Data(edited.utf8))
        #expect(!(try DecodedJWS(parts.joined(separator: ".")).verifies(with: fixture.publicKey)))
        #expect(try DecodedJWS(token).verifies(with: fixture.publicKey))
    }

    @Test func emptyInputsAndConfigurationAreRefused() throws {
        let signer = try fixture.requestSigner()
        #expect(throws: RequestSigningError(.invalidInput, "the transaction id is empty")) {
            try signer.introductoryOfferEligibilitySignature(
                productId: "pro.monthly", allowIntroductoryOffer: true, transactionId: "")
        }
        #expect(throws: RequestSigningError(.invalidInput, "the offer identifier is empty")) {
            try signer.promotionalOfferSignature(productId: "pro.monthly", offerIdentifier: "")
        }
        #expect(throws: RequestSigningError(.invalidConfiguration, "the issuer id is empty")) {
            try AppStoreRequestSigner(key: fixture.key, issuerId: "", bundleId: SigningFixture.bundleId)
        }
    }
}

// MARK: - App Store Server API token

@Suite struct AppStoreServerAPITokenTests {
    let fixture: SigningFixture
    init() throws { fixture = try SigningFixture() }

    func provider(lifetime: TimeInterval = 20 * 60) throws -> AppStoreServerAPITokenProvider {
        try AppStoreServerAPITokenProvider(
            key: fixture.key, issuerId: SigningFixture.issuerId, bundleId: SigningFixture.bundleId,
            lifetime: lifetime, clock: fixture.clock)
    }

    @Test func tokenHasExactlyTheDocumentedHeaderAndClaims() throws {
        let token = try provider().token()
        let jws = try DecodedJWS(token.jwt)
        #expect(jws.stringHeader == ["alg": "ES256", "kid": "2X9R4HXF34", "typ": "JWT"])
        #expect(Set(jws.claims.keys) == ["iss", "iat", "exp", "aud", "bid"])
        #expect(jws.claims["iss"] as? String == "57246542-96fe-1a63-e053-0824d011072a")
        #expect(jws.claims["iat"] as? Int == 1_741_043_663)
        #expect(jws.claims["exp"] as? Int == 1_741_043_663 + 1200)
        #expect(jws.claims["aud"] as? String == "appstoreconnect-v1")
        #expect(jws.claims["bid"] as? String == "com.example.storekeeper")
        #expect(jws.verifies(with: fixture.publicKey))
        #expect(token.issuedAt == Date(timeIntervalSince1970: 1_741_043_663))
        #expect(token.expiresAt == Date(timeIntervalSince1970: 1_741_043_663 + 1200))
        #expect(token.authorizationHeaderValue == "Bearer " + token.jwt)
    }

    @Test func lifetimeIsAtMostSixtyMinutes() throws {
        let longest = try provider(lifetime: 3600).token()
        let jws = try DecodedJWS(longest.jwt)
        let iat = try #require(jws.claims["iat"] as? Int)
        let exp = try #require(jws.claims["exp"] as? Int)
        #expect(exp - iat == 3600)
        #expect(throws: RequestSigningError.self) { try provider(lifetime: 3601) }
        #expect(throws: RequestSigningError.self) {
            try AppStoreServerAPIToken.sign(
                key: fixture.key, issuerId: SigningFixture.issuerId, bundleId: SigningFixture.bundleId,
                issuedAt: SigningFixture.date, lifetime: 7200)
        }
    }

    @Test func reusedWhileFreshAndRenewedInTheLastMinute() throws {
        let provider = try provider()
        let first = try provider.token()
        fixture.clock.set(SigningFixture.date.addingTimeInterval(600))
        #expect(try provider.token() == first)
        // expiresAt is iat + 1200 with iat the whole second: 61 s left is still fresh…
        fixture.clock.set(first.expiresAt.addingTimeInterval(-61))
        #expect(try provider.token() == first)
        // …60 s left is not.
        let renewalTime = first.expiresAt.addingTimeInterval(-60)
        fixture.clock.set(renewalTime)
        let second = try provider.token()
        #expect(second != first)
        #expect(second.issuedAt == renewalTime)
        #expect(try DecodedJWS(second.jwt).claims["iat"] as? Int == Int(renewalTime.timeIntervalSince1970))
        #expect(try provider.token() == second)
    }

    @Test func renewedWhenTheClockStepsBackBeforeIssue() throws {
        let provider = try provider()
        let first = try provider.token()
        fixture.clock.set(SigningFixture.date.addingTimeInterval(-5))
        let second = try provider.token()
        #expect(second != first)
        #expect(second.issuedAt == Date(timeIntervalSince1970: 1_741_043_658))
    }

    @Test func invalidateForcesANewToken() throws {
        let provider = try provider()
        let first = try provider.token()
        provider.invalidate()
        #expect(try provider.token() != first)
    }

    @Test func concurrentCallersShareOneToken() async throws {
        let provider = try provider()
        let tokens = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<64 {
                group.addTask { try provider.token().jwt }
            }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(tokens.count == 1)
    }

    @Test func descriptionDoesNotRevealTheToken() throws {
        let token = try provider().token()
        var dumped = ""
        dump(token, to: &dumped)
        for text in [String(describing: token), String(reflecting: token), dumped] {
            #expect(!text.contains(token.jwt.split(separator: ".")[2]), "\(text)")
            #expect(!text.contains(token.jwt.split(separator: ".")[1]), "\(text)")
        }
    }
}

// MARK: - Key loading

@Suite struct AppStoreSigningKeyTests {
    /// Base64 lines of a PEM and the raw scalar: none may appear in what is printed about a key.
    func expectNoKeyMaterial(
        in text: String, pem: String, raw: Data? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        for line in pem.split(separator: "\n") where !line.hasPrefix("-----") {
            #expect(!text.contains(line), "\(text)", sourceLocation: sourceLocation)
        }
        if let raw {
            #expect(!text.contains(raw.base64EncodedString()), sourceLocation: sourceLocation)
            #expect(!text.contains(raw.map { String(format: "%02x", $0) }.joined()), sourceLocation: sourceLocation)
        }
    }

    func loadError(pem: String) -> AppStoreSigningKeyError? {
        do {
            _ = try AppStoreSigningKey(pemRepresentation: pem, keyId: "2X9R4HXF34")
            return nil
        } catch {
            return error
        }
    }

    func temporaryFile(_ data: Data) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-key-\(UUID()).p8").path
        try data.write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func pkcs8P256PEMLoadsFromTextAndFileAndSignsVerifiably() throws {
        let privateKey = P256.Signing.PrivateKey()
        let pem = privateKey.pemRepresentation
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let fromText = try AppStoreSigningKey(pemRepresentation: pem, keyId: "2X9R4HXF34")
        let path = try temporaryFile(Data(pem.utf8))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let fromFile = try AppStoreSigningKey(contentsOfFile: path, keyId: "2X9R4HXF34")
        // Windows line endings, as an edited .p8 may have, load too.
        let crlf = try AppStoreSigningKey(
            pemRepresentation: pem.replacingOccurrences(of: "\n", with: "\r\n") + "\r\n", keyId: "2X9R4HXF34")
        for key in [fromText, fromFile, crlf] {
            #expect(key.keyId == "2X9R4HXF34")
            let token = try AppStoreServerAPIToken.sign(
                key: key, issuerId: "issuer", bundleId: "com.example", issuedAt: Date())
            #expect(try DecodedJWS(token.jwt).verifies(with: privateKey.publicKey))
        }
    }

    @Test func descriptionsShowOnlyTheKeyId() throws {
        let privateKey = P256.Signing.PrivateKey()
        let pem = privateKey.pemRepresentation
        let key = try AppStoreSigningKey(pemRepresentation: pem, keyId: "2X9R4HXF34")
        var dumped = ""
        dump(key, to: &dumped)
        #expect(String(describing: key) == "AppStoreSigningKey(keyId: 2X9R4HXF34)")
        for text in [String(describing: key), String(reflecting: key), dumped, "\([key])"] {
            #expect(text.contains("2X9R4HXF34"))
            expectNoKeyMaterial(in: text, pem: pem, raw: privateKey.rawRepresentation)
        }
    }

    @Test func rsaKeyIsRefusedByNameWithoutKeyMaterial() throws {
        // A PKCS#8 structure naming rsaEncryption (1.2.840.113549.1.1.1) around a random "key".
        var der: [UInt8] = [0x02, 0x01, 0x00]  // version 0
        der += [0x30, 0x0D, 0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01, 0x05, 0x00]
        let secret = (0..<64).map { _ in UInt8.random(in: 0...255) }
        der += [0x04, UInt8(secret.count)] + secret
        der = [0x30, UInt8(der.count)] + der
        let pem = pemText(label: "PRIVATE KEY", der: der)
        let error = try #require(loadError(pem: pem))
        #expect(error.reason == .unsupportedKeyType)
        #expect(
            error.description == "unsupported-key-type: the key is an RSA key; App Store Connect keys are P-256 (ES256)"
        )
        expectNoKeyMaterial(in: error.description, pem: pem, raw: Data(secret))
        let traditional = try #require(loadError(pem: pemText(label: "RSA PRIVATE KEY", der: der)))
        #expect(traditional.reason == .unsupportedKeyType)
        #expect(traditional.description.contains("an RSA key"))
    }

    @Test func otherCurvesAreRefusedByName() throws {
        let p384 = try #require(loadError(pem: P384.Signing.PrivateKey().pemRepresentation))
        #expect(
            p384.description
                == "unsupported-key-type: the key is an EC key on P-384; App Store Connect keys are P-256 (ES256)")
        let ed25519 = try #require(loadError(pem: pemText(label: "PRIVATE KEY", der: ed25519PKCS8())))
        #expect(ed25519.reason == .unsupportedKeyType)
        #expect(ed25519.description.contains("an Ed25519 key"))
    }

    @Test func otherPEMBlocksAreRefusedSayingWhatTheyAre() throws {
        let der = [UInt8](P256.Signing.PrivateKey().derRepresentation)
        let sec1 = try #require(loadError(pem: pemText(label: "EC PRIVATE KEY", der: der)))
        #expect(sec1.reason == .notPKCS8)
        #expect(sec1.description.contains("SEC1 EC PRIVATE KEY"))
        let encrypted = try #require(loadError(pem: pemText(label: "ENCRYPTED PRIVATE KEY", der: der)))
        #expect(
            encrypted.description
                == "not-pkcs8: the key is an encrypted PKCS#8 key; App Store Connect .p8 keys are unencrypted")
        let publicKey = try #require(loadError(pem: P256.Signing.PrivateKey().publicKey.pemRepresentation))
        #expect(publicKey.description == "not-pkcs8: the key holds a PUBLIC KEY, not a private key")
        let two = P256.Signing.PrivateKey().pemRepresentation + "\n" + P256.Signing.PrivateKey().pemRepresentation
        let twoError = try #require(loadError(pem: two))
        #expect(twoError.description == "not-pem: the key holds 2 PEM blocks; expected one PRIVATE KEY")
        expectNoKeyMaterial(in: twoError.description, pem: two)
    }

    @Test func garbageIsNotPEMAndIsNotEchoed() throws {
        let garbage = "MHcCAQEEIGarbageThatLooksLikeBase64ButIsNotAKey0123456789abcdef"
        let error = try #require(loadError(pem: garbage))
        #expect(error.reason == .notPEM)
        #expect(!error.description.contains(garbage))
        let truncated = String(P256.Signing.PrivateKey().pemRepresentation.dropLast(40))
        let truncatedError = try #require(loadError(pem: truncated))
        #expect(truncatedError.reason == .notPEM)
        expectNoKeyMaterial(in: truncatedError.description, pem: truncated)
        // Valid PEM around bytes that are not PKCS#8.
        let notDER = try #require(loadError(pem: pemText(label: "PRIVATE KEY", der: Array("hello".utf8))))
        #expect(notDER.description == "malformed-key: the key is not a well-formed PKCS#8 structure")
    }

    @Test func fileProblemsNameThePathOnly() throws {
        let missing = "/nonexistent/storekeeper-\(UUID()).p8"
        do {
            _ = try AppStoreSigningKey(contentsOfFile: missing, keyId: "2X9R4HXF34")
            Issue.record("a missing file loaded")
        } catch {
            #expect(error.description == "unreadable-file: key file \(missing) does not exist")
        }
        let directory = FileManager.default.temporaryDirectory.path
        #expect(throws: AppStoreSigningKeyError(.unreadableFile, "key file \(directory) is a directory")) {
            try AppStoreSigningKey(contentsOfFile: directory, keyId: "2X9R4HXF34")
        }
        let hugePath = try temporaryFile(Data(repeating: 0x41, count: 100_000))
        defer { try? FileManager.default.removeItem(atPath: hugePath) }
        #expect(
            throws: AppStoreSigningKeyError(
                .unreadableFile, "key file \(hugePath) is 100000 bytes; a .p8 key is under 65536 bytes")
        ) { try AppStoreSigningKey(contentsOfFile: hugePath, keyId: "2X9R4HXF34") }
        let privateKey = P256.Signing.PrivateKey()
        let derPath = try temporaryFile(privateKey.derRepresentation)
        defer { try? FileManager.default.removeItem(atPath: derPath) }
        do {
            _ = try AppStoreSigningKey(contentsOfFile: derPath, keyId: "2X9R4HXF34")
            Issue.record("a DER file loaded")
        } catch {
            #expect(error.reason == .notPEM)
            #expect(error.description.contains("binary DER"))
            expectNoKeyMaterial(
                in: error.description, pem: privateKey.pemRepresentation, raw: privateKey.rawRepresentation)
        }
    }

    @Test func keyIdMustBeNonEmptyWithoutWhitespace() throws {
        let pem = P256.Signing.PrivateKey().pemRepresentation
        #expect(throws: AppStoreSigningKeyError(.invalidKeyId, "the key id is empty")) {
            try AppStoreSigningKey(pemRepresentation: pem, keyId: "")
        }
        #expect(throws: AppStoreSigningKeyError.self) {
            try AppStoreSigningKey(pemRepresentation: pem, keyId: "2X9R 4HXF34")
        }
    }

    func pemText(label: String, der: [UInt8]) -> String {
        let body = Data(der).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN \(label)-----\n\(body)\n-----END \(label)-----\n"
    }

    /// An RFC 8410 Ed25519 PKCS#8 structure with a random key.
    func ed25519PKCS8() -> [UInt8] {
        let secret = (0..<32).map { _ in UInt8.random(in: 0...255) }
        var der: [UInt8] = [0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70]
        der += [0x04, 0x22, 0x04, 0x20] + secret
        return [0x30, UInt8(der.count)] + der
    }
}
