import AppStoreServer
import Crypto
import Foundation
import TestSupport
import Testing

@Suite struct SignCommandTests {
    let directory: URL
    let privateKey = P256.Signing.PrivateKey()
    let keyPath: String
    let identity: [String]

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-sign-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        keyPath = directory.appendingPathComponent("AuthKey_2X9R4HXF34.p8").path
        try Data(privateKey.pemRepresentation.utf8).write(to: URL(fileURLWithPath: keyPath))
        identity = ["--key", keyPath, "--key-id", "2X9R4HXF34", "--bundle-id", "com.example.storekeeper"]
    }

    func cleanUp() { try? FileManager.default.removeItem(at: directory) }

    func jsonObject(
        _ result: ChildProcess.Result, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> [String: Any] {
        #expect(result.status == 0, "\(result.standardError)", sourceLocation: sourceLocation)
        #expect(result.standardError.isEmpty, sourceLocation: sourceLocation)
        return try #require(
            try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any],
            sourceLocation: sourceLocation)
    }

    /// The header and claims of a compact JWS whose ES256 signature verifies with the test key.
    func verifiedJWS(_ token: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> (
        header: [String: String], claims: [String: Any], claimsText: String
    ) {
        let parts = token.split(separator: ".")
        try #require(parts.count == 3, sourceLocation: sourceLocation)
        let headerJSON = try #require(Base64URL.decode(parts[0]), sourceLocation: sourceLocation)
        let claimsJSON = try #require(Base64URL.decode(parts[1]), sourceLocation: sourceLocation)
        let signature = try P256.Signing.ECDSASignature(
            rawRepresentation: try #require(Base64URL.decode(parts[2]), sourceLocation: sourceLocation))
        #expect(
            privateKey.publicKey.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8)),
            "the ES256 signature does not verify", sourceLocation: sourceLocation)
        let header = try #require(
            try JSONSerialization.jsonObject(with: headerJSON) as? [String: String], sourceLocation: sourceLocation)
        let claims = try #require(
            try JSONSerialization.jsonObject(with: claimsJSON) as? [String: Any], sourceLocation: sourceLocation)
        return (header, claims, String(decoding: claimsJSON, as: UTF8.self))
    }

    func isLowercaseUUID(_ text: String?) -> Bool {
        text?.wholeMatch(of: /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/) != nil
    }

    @Test func promotionalOfferV1PrintsAVerifiableSignature() async throws {
        defer { cleanUp() }
        let before = Int64(Date().timeIntervalSince1970 * 1000)
        let result = try await CLI.run(
            ["sign", "promotional-offer", "--format", "v1"] + identity
                + [
                    "--product-id", "pro.monthly", "--offer-id", "winback50", "--app-account-token",
                    "7E3FB20B-4CDB-47CC-936D-99D65F608138",
                ])
        let after = Int64(Date().timeIntervalSince1970 * 1000)
        let object = try jsonObject(result)
        #expect(Set(object.keys) == ["keyId", "nonce", "timestamp", "signature"])
        #expect(object["keyId"] as? String == "2X9R4HXF34")
        let nonceText = try #require(object["nonce"] as? String)
        #expect(isLowercaseUUID(nonceText))
        let timestamp = try #require((object["timestamp"] as? NSNumber)?.int64Value)
        #expect((before...after).contains(timestamp))
        let signatureText = try #require(object["signature"] as? String)
        let der = try #require(Data(base64Encoded: signatureText))
        let signature = try P256.Signing.ECDSASignature(derRepresentation: der)
        let message = try PromotionalOfferV1Signer.message(
            bundleId: "com.example.storekeeper", keyId: "2X9R4HXF34", productId: "pro.monthly", offerId: "winback50",
            appAccountToken: UUID(uuidString: "7e3fb20b-4cdb-47cc-936d-99d65f608138"),
            nonce: try #require(UUID(uuidString: nonceText)), timestamp: timestamp)
        #expect(privateKey.publicKey.isValidSignature(signature, for: message))
        // The token is signed in lowercase: the message above spells it so.
        #expect(
            String(decoding: message, as: UTF8.self).contains("\u{2063}7e3fb20b-4cdb-47cc-936d-99d65f608138\u{2063}"))
    }

    @Test func promotionalOfferV1WithoutAppAccountTokenSignsAnEmptyField() async throws {
        defer { cleanUp() }
        let result = try await CLI.run(
            ["sign", "promotional-offer", "--format", "v1"] + identity + ["--product-id", "p", "--offer-id", "o"])
        let object = try jsonObject(result)
        let nonceText = try #require(object["nonce"] as? String)
        let nonce = try #require(UUID(uuidString: nonceText))
        let timestamp = try #require((object["timestamp"] as? NSNumber)?.int64Value)
        let signatureText = try #require(object["signature"] as? String)
        let der = try #require(Data(base64Encoded: signatureText))
        let message = try PromotionalOfferV1Signer.message(
            bundleId: "com.example.storekeeper", keyId: "2X9R4HXF34", productId: "p", offerId: "o",
            appAccountToken: nil, nonce: nonce, timestamp: timestamp)
        #expect(
            privateKey.publicKey.isValidSignature(try P256.Signing.ECDSASignature(derRepresentation: der), for: message)
        )
    }

    @Test func promotionalOfferJWSPrintsAVerifiableToken() async throws {
        defer { cleanUp() }
        let before = Int(Date().timeIntervalSince1970)
        let result = try await CLI.run(
            ["sign", "promotional-offer", "--format", "jws", "--issuer-id", "57246542-96fe-1a63-e053-0824d011072a"]
                + identity + [
                    "--product-id", "pro.monthly", "--offer-id", "winback50", "--transaction-id", "1000011859217",
                ])
        let object = try jsonObject(result)
        #expect(Set(object.keys) == ["signature"])
        let jws = try verifiedJWS(try #require(object["signature"] as? String))
        #expect(jws.header == ["alg": "ES256", "kid": "2X9R4HXF34", "typ": "JWT"])
        #expect(
            Set(jws.claims.keys)
                == ["iss", "iat", "aud", "bid", "nonce", "productId", "offerIdentifier", "transactionId"])
        #expect(jws.claims["iss"] as? String == "57246542-96fe-1a63-e053-0824d011072a")
        #expect(jws.claims["aud"] as? String == "promotional-offer")
        #expect(jws.claims["bid"] as? String == "com.example.storekeeper")
        #expect(jws.claims["productId"] as? String == "pro.monthly")
        #expect(jws.claims["offerIdentifier"] as? String == "winback50")
        #expect(jws.claims["transactionId"] as? String == "1000011859217")
        #expect(isLowercaseUUID(jws.claims["nonce"] as? String))
        let iat = try #require(jws.claims["iat"] as? Int)
        #expect((before...before + 60).contains(iat))
    }

    @Test func introEligibilityPrintsAVerifiableToken() async throws {
        defer { cleanUp() }
        let result = try await CLI.run(
            ["sign", "intro-eligibility", "--issuer-id", "57246542-96fe-1a63-e053-0824d011072a"] + identity
                + [
                    "--product-id", "pro.monthly", "--transaction-id", "1000011859217", "--allow-introductory-offer",
                    "false",
                ])
        let object = try jsonObject(result)
        let jws = try verifiedJWS(try #require(object["signature"] as? String))
        #expect(jws.header == ["alg": "ES256", "kid": "2X9R4HXF34", "typ": "JWT"])
        #expect(
            Set(jws.claims.keys)
                == ["iss", "iat", "aud", "bid", "nonce", "productId", "allowIntroductoryOffer", "transactionId"])
        #expect(jws.claims["aud"] as? String == "introductory-offer-eligibility")
        #expect(jws.claims["productId"] as? String == "pro.monthly")
        #expect(jws.claims["transactionId"] as? String == "1000011859217")
        #expect(jws.claimsText.contains("\"allowIntroductoryOffer\":false"))
        // The default is true.
        let allowed = try jsonObject(
            try await CLI.run(
                ["sign", "intro-eligibility", "--issuer-id", "issuer"] + identity
                    + ["--product-id", "pro.monthly", "--transaction-id", "1"]))
        #expect(
            try verifiedJWS(try #require(allowed["signature"] as? String)).claimsText.contains(
                "\"allowIntroductoryOffer\":true"))
    }

    @Test func badKeyFilesExitTwoWithOneLineAndNoKeyMaterial() async throws {
        defer { cleanUp() }
        let offer = ["--product-id", "p", "--offer-id", "o"]
        let missing = directory.appendingPathComponent("missing.p8").path
        let missingResult = try await CLI.run(
            ["sign", "promotional-offer", "--format", "v1", "--key", missing, "--key-id", "K", "--bundle-id", "b"]
                + offer)
        #expect(missingResult.status == 2)
        #expect(missingResult.standardError == "error: unreadable-file: key file \(missing) does not exist\n")
        #expect(missingResult.standardOutput.isEmpty)

        // A P-384 key: the right format, the wrong curve.
        let p384 = P384.Signing.PrivateKey().pemRepresentation
        let p384Path = directory.appendingPathComponent("p384.p8").path
        try Data(p384.utf8).write(to: URL(fileURLWithPath: p384Path))
        let p384Result = try await CLI.run(
            ["sign", "promotional-offer", "--format", "v1", "--key", p384Path, "--key-id", "K", "--bundle-id", "b"]
                + offer)
        #expect(p384Result.status == 2)
        #expect(
            p384Result.standardError
                == "error: unsupported-key-type: key file \(p384Path) is an EC key on P-384; App Store Connect keys are P-256 (ES256)\n"
        )
        for line in p384.split(separator: "\n") where !line.hasPrefix("-----") {
            #expect(!p384Result.standardError.contains(line))
            #expect(!p384Result.standardOutput.contains(line))
        }

        // Garbage with a recognizable secret in it.
        let garbagePath = directory.appendingPathComponent("garbage.p8").path
        try Data("SECRET-SHOULD-NOT-BE-PRINTED\n".utf8).write(to: URL(fileURLWithPath: garbagePath))
        let garbage = try await CLI.run(
            [
                "sign", "intro-eligibility", "--key", garbagePath, "--key-id", "K", "--issuer-id", "i", "--bundle-id",
                "b",
            ]
                + ["--product-id", "p", "--transaction-id", "1"])
        #expect(garbage.status == 2)
        #expect(garbage.standardError.hasPrefix("error: not-pem: key file \(garbagePath) is not PEM"))
        #expect(garbage.standardError.split(separator: "\n").count == 1)
        #expect(!garbage.standardError.contains("SECRET"))
    }

    @Test func badArgumentsExitTwoWithAClearError() async throws {
        defer { cleanUp() }
        let offer = ["--product-id", "p", "--offer-id", "o"]
        let uuid = try await CLI.run(
            ["sign", "promotional-offer", "--format", "v1"] + identity + offer + ["--app-account-token", "not-a-uuid"])
        #expect(uuid.status == 2)
        #expect(
            uuid.standardError
                == "error: --app-account-token takes a UUID such as 7e3fb20b-4cdb-47cc-936d-99d65f608138, not \"not-a-uuid\"\n"
        )
        let noIssuer = try await CLI.run(["sign", "promotional-offer", "--format", "jws"] + identity + offer)
        #expect(noIssuer.status == 2)
        #expect(noIssuer.standardError == "error: --issuer-id is required for --format jws\n")
        let noIssuerIntro = try await CLI.run(
            ["sign", "intro-eligibility"] + identity + ["--product-id", "p", "--transaction-id", "1"])
        #expect(noIssuerIntro.status == 2)
        #expect(noIssuerIntro.standardError == "error: --issuer-id is required for intro-eligibility\n")
        let format = try await CLI.run(["sign", "promotional-offer", "--format", "v2"] + identity + offer)
        #expect(format.status == 2)
        #expect(
            format.standardError.hasPrefix(
                "Error: The value 'v2' is invalid for '--format <format>'. Please provide one of 'v1' and 'jws'."))
        let transactionWithV1 = try await CLI.run(
            ["sign", "promotional-offer", "--format", "v1"] + identity + offer + ["--transaction-id", "1"])
        #expect(transactionWithV1.status == 2)
        #expect(transactionWithV1.standardError.hasPrefix("error: --transaction-id is only signed with --format jws"))
        let allow = try await CLI.run(
            ["sign", "intro-eligibility", "--issuer-id", "i"] + identity
                + ["--product-id", "p", "--transaction-id", "1", "--allow-introductory-offer", "yes"])
        #expect(allow.status == 2)
        #expect(
            allow.standardError.hasPrefix(
                "Error: The value 'yes' is invalid for '--allow-introductory-offer <allow-introductory-offer>'"))
        #expect(allow.standardOutput.isEmpty)
    }
}
