import AppStoreServer
import Crypto
import Foundation
import StoreSimulator
import Testing

/// Every check of the verifier, each failure asserting its specific reason.
@Suite struct SignedDataVerifierTests {
    let fixture: VerifierFixture

    init() throws {
        fixture = try VerifierFixture()
    }

    func expectFailure(
        _ reason: SignedDataVerificationError.Reason,
        _ token: String,
        verifier: SignedDataVerifier? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let verifier = try verifier ?? fixture.verifier()
        do {
            _ = try await verifier.verify(token, as: JWSTransaction.self)
            Issue.record("expected \(reason), but the token verified", sourceLocation: sourceLocation)
        } catch {
            #expect(error.reason == reason, "\(error)", sourceLocation: sourceLocation)
        }
    }

    /// Replaces one of the three parts of a compact JWS.
    func replacingPart(_ index: Int, of token: String, with part: String) -> String {
        var parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        parts[index] = part
        return parts.joined(separator: ".")
    }

    func signatureBytes(of token: String) -> Data {
        Base64URL.decode(token.split(separator: ".")[2])!
    }

    @Test func genuineTransactionVerifiesAndDecodes() async throws {
        let token = try fixture.signer.sign(fixture.transaction())
        let transaction = try await fixture.verifier().verify(token, as: JWSTransaction.self)
        #expect(transaction == fixture.transaction())
        #expect(transaction.transactionId == "2000000987654321")
        #expect(transaction.environment == .production)
    }

    // MARK: signature

    @Test func signatureWithOneBitFlippedIsInvalid() async throws {
        let token = try fixture.signer.sign(fixture.transaction())
        for bit in [0, 7, 255, 511] {
            var signature = signatureBytes(of: token)
            signature[bit / 8] ^= UInt8(1 << (bit % 8))
            try await expectFailure(.invalidSignature, replacingPart(2, of: token, with: Base64URL.encode(signature)))
        }
    }

    @Test func signatureOfAnotherPayloadIsInvalid() async throws {
        let token = try fixture.signer.sign(fixture.transaction())
        let other = try fixture.signer.sign(fixture.transaction(signedDate: fixture.signedDate.addingTimeInterval(1)))
        let spliced = replacingPart(2, of: token, with: String(other.split(separator: ".")[2]))
        try await expectFailure(.invalidSignature, spliced)
    }

    @Test func truncatedSignatureIsMalformed() async throws {
        let token = try fixture.signer.sign(fixture.transaction())
        let truncated = signatureBytes(of: token).prefix(63)
        try await expectFailure(.malformedSignature, replacingPart(2, of: token, with: Base64URL.encode(truncated)))
        // A DER signature (what a careless signer emits) is not ES256's raw r‖s either.
        let key = fixture.chain.leafKey
        let signingInput = token.split(separator: ".")[0] + "." + token.split(separator: ".")[1]
        let der = try key.signature(for: Data(signingInput.utf8)).derRepresentation
        try await expectFailure(.malformedSignature, replacingPart(2, of: token, with: Base64URL.encode(der)))
    }

    @Test func payloadEditedAfterSigningIsInvalid() async throws {
        let token = try fixture.signer.sign(fixture.transaction())
        var json = try #require(String(data: try fixture.transactionJSON(), encoding: .utf8))
        json = json.replacingOccurrences(of: "\"price\":9990", with: "\"price\":10")
        #expect(json.contains("\"price\":10"))
        try await expectFailure(.invalidSignature, replacingPart(1, of: token, with: Base64URL.encode(Data(json.utf8))))
    }

    @Test func signedByAnotherKeyUnderTheSameCertificatesIsInvalid() async throws {
        // An attacker re-signs with their own key but keeps Apple's certificates in x5c.
        let impostor = try TestCertificateChain(options: .init(now: fixture.signedDate))
        let forged = try AppStoreSigner(chain: impostor).sign(
            payloadJSON: try fixture.transactionJSON(), header: fixture.signer.standardHeader)
        try await expectFailure(.invalidSignature, forged)
    }

    // MARK: header

    @Test(arguments: ["none", "HS256", "ES384", "RS256", "es256"])
    func algorithmsOtherThanES256AreRefused(alg: String) async throws {
        var header = fixture.signer.standardHeader
        header.alg = alg
        let token = try fixture.signer.sign(payloadJSON: try fixture.transactionJSON(), header: header)
        try await expectFailure(.unsupportedAlgorithm, token)
    }

    @Test func missingAlgorithmIsAMalformedHeader() async throws {
        var header = fixture.signer.standardHeader
        header.alg = nil
        try await expectFailure(
            .malformedHeader, try fixture.signer.sign(payloadJSON: try fixture.transactionJSON(), header: header))
    }

    @Test(arguments: [1, 2, 4, 0])
    func x5cWithOtherThanThreeCertificatesIsRefused(count: Int) async throws {
        let certificates = fixture.chain.x5c
        var header = fixture.signer.standardHeader
        header.x5c = (0..<count).map { certificates[min($0, 2)] }
        let token = try fixture.signer.sign(payloadJSON: try fixture.transactionJSON(), header: header)
        try await expectFailure(.wrongCertificateCount, token)
    }

    @Test func missingX5CIsAMalformedHeader() async throws {
        var header = fixture.signer.standardHeader
        header.x5c = nil
        try await expectFailure(
            .malformedHeader, try fixture.signer.sign(payloadJSON: try fixture.transactionJSON(), header: header))
    }

    @Test func nonJSONHeaderIsMalformed() async throws {
        let token = try fixture.signer.sign(
            headerJSON: Data("not json".utf8), payloadJSON: try fixture.transactionJSON())
        try await expectFailure(.malformedHeader, token)
        let array = try fixture.signer.sign(headerJSON: Data("[1,2]".utf8), payloadJSON: try fixture.transactionJSON())
        try await expectFailure(.malformedHeader, array)
    }

    @Test func unparsableCertificatesAreMalformed() async throws {
        var header = fixture.signer.standardHeader
        header.x5c = ["not base64!", fixture.chain.x5c[1], fixture.chain.x5c[2]]
        try await expectFailure(
            .malformedCertificate, try fixture.signer.sign(payloadJSON: try fixture.transactionJSON(), header: header))
        header.x5c = [fixture.chain.x5c[0], Data("garbage".utf8).base64EncodedString(), fixture.chain.x5c[2]]
        try await expectFailure(
            .malformedCertificate, try fixture.signer.sign(payloadJSON: try fixture.transactionJSON(), header: header))
    }

    // MARK: format

    @Test(arguments: [
        "", "garbage", "a.b", "a.b.c.d", "..", "eyJhbGciOiJFUzI1NiJ9..c2ln", "!!!.???.***",
        "eyJhbGciOiJFUzI1NiJ9.eyJ9.c2ln+/", "eyJhbGciOiJFUzI1NiJ9.e.c2ln", "eyJhbGc=iOiJFUzI1NiJ9.eyJ9.c2ln",
    ])
    func garbageIsAMalformedJWS(token: String) async throws {
        try await expectFailure(.malformedJWS, token)
    }

    @Test func truncatedTokensAreRefusedAsMalformed() async throws {
        let token = try fixture.signer.sign(fixture.transaction())
        let verifier = try fixture.verifier()
        for length in [10, token.count / 3, token.count / 2, token.count - 90] {
            let truncated = String(token.prefix(length))
            do {
                _ = try await verifier.verify(truncated, as: JWSTransaction.self)
                Issue.record("truncated token of \(length) characters verified")
            } catch {
                #expect(
                    [.malformedJWS, .malformedHeader, .malformedSignature, .malformedPayload].contains(error.reason),
                    "\(length): \(error)")
            }
        }
    }

    @Test func multiMegabyteInputIsRefusedBeforeParsing() async throws {
        let huge = String(repeating: "A", count: 8 * 1024 * 1024) + "." + "B" + "." + "C"
        let clock = ContinuousClock()
        let started = clock.now
        try await expectFailure(.inputTooLarge, huge)
        // Not a timing assertion on speed: a parser that read the input would still pass; the
        // reason code above is what proves nothing was parsed. This only guards against a hang.
        #expect(clock.now - started < .seconds(5))
    }

    @Test func payloadThatIsNotJSONIsMalformed() async throws {
        let token = try fixture.signer.sign(payloadJSON: Data("not json".utf8))
        try await expectFailure(.malformedPayload, token)
        let wrongType = try fixture.signer.sign(payloadJSON: Data(#"{"signedDate":"yesterday"}"#.utf8))
        try await expectFailure(.malformedPayload, wrongType)
    }

    // MARK: chain

    @Test func chainEndingInAnUntrustedRootIsRefusedEvenWhenX5CCarriesThatRoot() async throws {
        let stranger = try TestCertificateChain(options: .init(now: fixture.signedDate, name: "Stranger"))
        let token = try AppStoreSigner(chain: stranger).sign(fixture.transaction())
        try await expectFailure(.untrustedChain, token)
    }

    @Test func x5c2IsNeverTrustedEvenWhenItIsTheConfiguredRoot() async throws {
        // A forged leaf signed directly by an attacker's intermediate, with the genuine root in x5c[2].
        let stranger = try TestCertificateChain(options: .init(now: fixture.signedDate, name: "Stranger"))
        var header = AppStoreSigner(chain: stranger).standardHeader
        header.x5c?[2] = fixture.chain.x5c[2]
        let token = try AppStoreSigner(chain: stranger).sign(payloadJSON: try fixture.transactionJSON(), header: header)
        try await expectFailure(.untrustedChain, token)
    }

    @Test func leafSignedDirectlyByTheRootIsRefused() async throws {
        // leaf → root with the root passed as "intermediate": the path must go through x5c[1].
        var header = fixture.signer.standardHeader
        header.x5c = [fixture.chain.x5c[0], fixture.chain.x5c[2], fixture.chain.x5c[2]]
        let token = try fixture.signer.sign(payloadJSON: try fixture.transactionJSON(), header: header)
        try await expectFailure(.untrustedChain, token)
    }

    @Test func intermediateWithoutAppleMarkerIsRefused() async throws {
        var options = TestCertificateChain.Options(now: fixture.signedDate)
        options.intermediateHasAppleMarker = false
        let chain = try TestCertificateChain(options: options)
        let token = try AppStoreSigner(chain: chain).sign(fixture.transaction())
        try await expectFailure(
            .missingIntermediateMarker, token, verifier: try fixture.verifier(roots: chain.trustedRoots))
    }

    @Test func leafWithoutAppleMarkerIsRefused() async throws {
        var options = TestCertificateChain.Options(now: fixture.signedDate)
        options.leafHasAppleMarker = false
        let chain = try TestCertificateChain(options: options)
        let token = try AppStoreSigner(chain: chain).sign(fixture.transaction())
        try await expectFailure(.missingLeafMarker, token, verifier: try fixture.verifier(roots: chain.trustedRoots))
    }

    @Test func intermediateThatIsNotACAIsRefused() async throws {
        var options = TestCertificateChain.Options(now: fixture.signedDate)
        options.intermediateIsCA = false
        let chain = try TestCertificateChain(options: options)
        let token = try AppStoreSigner(chain: chain).sign(fixture.transaction())
        try await expectFailure(.untrustedChain, token, verifier: try fixture.verifier(roots: chain.trustedRoots))
    }

    @Test func leafExpiredAtSignedDateIsRefused() async throws {
        let day: TimeInterval = 86_400
        let expired = try fixture.chain.withNewLeaf(
            validity: fixture.signedDate.addingTimeInterval(-30 * day)...fixture.signedDate.addingTimeInterval(-day))
        let token = try AppStoreSigner(chain: expired).sign(fixture.transaction())
        try await expectFailure(.untrustedChain, token)
    }

    @Test func leafNotYetValidAtSignedDateIsRefused() async throws {
        let day: TimeInterval = 86_400
        let future = try fixture.chain.withNewLeaf(
            validity: fixture.signedDate.addingTimeInterval(day)...fixture.signedDate.addingTimeInterval(30 * day))
        let token = try AppStoreSigner(chain: future).sign(fixture.transaction())
        try await expectFailure(.untrustedChain, token)
    }

    @Test func chainIsValidatedAtSignedDateNotToday() async throws {
        // The leaf expired long ago, but was valid when the payload was signed: offline, that is fine.
        let signedDate = Date(timeIntervalSince1970: 1_600_000_000)
        let old = try VerifierFixture(signedDate: signedDate)
        let day: TimeInterval = 86_400
        let chain = try old.chain.withNewLeaf(
            validity: signedDate.addingTimeInterval(-day)...signedDate.addingTimeInterval(day))
        let token = try AppStoreSigner(chain: chain).sign(old.transaction())
        _ = try await old.verifier().verify(token, as: JWSTransaction.self)
        // …and at the current time it is refused.
        try await expectFailure(.untrustedChain, token, verifier: try old.verifier(effectiveDate: .currentTime))
    }

    // MARK: identity

    @Test func wrongBundleIdIsRefused() async throws {
        let token = try fixture.signer.sign(fixture.transaction(bundleId: "com.someone.else"))
        try await expectFailure(.bundleIdMismatch, token)
    }

    @Test func sandboxPayloadToAProductionVerifierIsRefused() async throws {
        let token = try fixture.signer.sign(fixture.transaction(environment: .sandbox))
        try await expectFailure(.environmentMismatch, token)
    }

    @Test func identityChecksAreSkippedWhenNotConfigured() async throws {
        let token = try fixture.signer.sign(fixture.transaction(bundleId: "com.any", environment: .sandbox))
        let verifier = try fixture.verifier(environment: nil, bundleId: nil, appAppleId: nil)
        #expect(try await verifier.verify(token, as: JWSTransaction.self).bundleId == "com.any")
    }

    @Test func productionVerifierRequiresAnAppAppleId() throws {
        #expect(throws: SignedDataVerifier.ConfigurationError.self) {
            try fixture.verifier(environment: .production, appAppleId: nil)
        }
    }

    // MARK: cache

    @Test func validatedChainIsCachedAndReusedOnlyInsideItsValidity() async throws {
        let verifier = try fixture.verifier()
        let token = try fixture.signer.sign(fixture.transaction())
        _ = try await verifier.verify(token, as: JWSTransaction.self)
        _ = try await verifier.verify(token, as: JWSTransaction.self)
        #expect(verifier.chainCacheStatistics == .init(entries: 1, hits: 1, misses: 1))
        // The same (cached) chain, but a signing date after the leaf expired: validated again, refused.
        let late = fixture.signedDate.addingTimeInterval(3 * 365 * 86_400)
        let lateToken = try fixture.signer.sign(fixture.transaction(signedDate: late))
        try await expectFailure(.untrustedChain, lateToken, verifier: verifier)
        // A forged signature is still caught on a cache hit.
        var signature = signatureBytes(of: token)
        signature[10] ^= 0x01
        try await expectFailure(
            .invalidSignature, replacingPart(2, of: token, with: Base64URL.encode(signature)), verifier: verifier)
    }

    @Test func anotherHeaderEncodingOfTheSameChainReusesTheValidatedChain() async throws {
        let verifier = try fixture.verifier()
        _ = try await verifier.verify(try fixture.signer.sign(fixture.transaction()), as: JWSTransaction.self)
        // Same certificates, different header text (an extra member): found by the certificates' DER bytes.
        let header = try JSONSerialization.data(
            withJSONObject: ["alg": "ES256", "x5c": fixture.chain.x5c, "typ": "JWT"], options: [.sortedKeys])
        let other = try fixture.signer.sign(headerJSON: header, payloadJSON: try fixture.transactionJSON())
        #expect(try await verifier.verify(other, as: JWSTransaction.self) == fixture.transaction())
        #expect(verifier.chainCacheStatistics == .init(entries: 1, hits: 1, misses: 1))
    }

    @Test func cacheEntriesExpireAfterTheirTimeToLive() async throws {
        let clock = ManualClock(fixture.signedDate)
        let verifier = try SignedDataVerifier(
            configuration: .init(
                trustedRoots: fixture.chain.trustedRoots, bundleId: VerifierFixture.bundleId,
                appAppleId: VerifierFixture.appAppleId, environment: .production, chainCacheTimeToLive: 60),
            clock: clock)
        let token = try fixture.signer.sign(fixture.transaction())
        _ = try await verifier.verify(token, as: JWSTransaction.self)
        clock.advance(by: 59)
        _ = try await verifier.verify(token, as: JWSTransaction.self)
        #expect(verifier.chainCacheStatistics == .init(entries: 1, hits: 1, misses: 1))
        clock.advance(by: 2)
        _ = try await verifier.verify(token, as: JWSTransaction.self)
        #expect(verifier.chainCacheStatistics == .init(entries: 1, hits: 1, misses: 2))
    }

    @Test func cacheIsBoundedInSize() async throws {
        let verifier = try SignedDataVerifier(
            configuration: .init(
                trustedRoots: fixture.chain.trustedRoots, bundleId: VerifierFixture.bundleId,
                appAppleId: VerifierFixture.appAppleId, environment: .production, chainCacheCapacity: 3))
        let day: TimeInterval = 86_400
        for _ in 0..<6 {
            let chain = try fixture.chain.withNewLeaf(
                validity: fixture.signedDate.addingTimeInterval(-day)...fixture.signedDate.addingTimeInterval(day))
            _ = try await verifier.verify(
                try AppStoreSigner(chain: chain).sign(fixture.transaction()), as: JWSTransaction.self)
        }
        #expect(verifier.chainCacheStatistics == .init(entries: 3, hits: 0, misses: 6))
    }

    @Test func concurrentVerificationIsSafeAndCorrect() async throws {
        let verifier = try fixture.verifier()
        let good = try fixture.signer.sign(fixture.transaction())
        var signature = signatureBytes(of: good)
        signature[0] ^= 0x80
        let forged = replacingPart(2, of: good, with: Base64URL.encode(signature))
        let results = await withTaskGroup(of: (Bool, Bool).self) { group in
            for index in 0..<400 {
                let isForged = index % 3 == 0
                group.addTask {
                    let verified =
                        (try? await verifier.verify(isForged ? forged : good, as: JWSTransaction.self)) != nil
                    return (isForged, verified)
                }
            }
            return await group.reduce(into: [(Bool, Bool)]()) { $0.append($1) }
        }
        #expect(results.count == 400)
        #expect(results.allSatisfy { isForged, verified in verified != isForged })
        #expect(verifier.chainCacheStatistics.entries == 1)
        #expect(verifier.chainCacheStatistics.hits + verifier.chainCacheStatistics.misses == 400)
    }
}
