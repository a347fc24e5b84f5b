import AppStoreServer
import Foundation
import Testing

/// A token read before verification (to pick the verifier by the identity it claims) verifies as
/// the token itself does: the decoded payload it carries skips none of the checks.
@Suite struct UnverifiedSignedDataTests {
    let fixture: VerifierFixture

    init() throws {
        fixture = try VerifierFixture()
    }

    @Test func aTokenReadFirstVerifiesAsTheTokenItselfDoes() async throws {
        let token = try fixture.signer.sign(fixture.transaction())
        let unverified = try UnverifiedSignedData(parsing: token, as: JWSTransaction.self)
        #expect(try unverified.claimedIdentity() == fixture.transaction().claimedIdentity)
        let verifier = try fixture.verifier()
        let fromRead = try await verifier.verifyKeepingJSON(unverified)
        let fromToken = try await verifier.verifyKeepingJSON(token, as: JWSTransaction.self)
        #expect(fromRead.payload == fromToken.payload)
        #expect(fromRead.json == fromToken.json)
    }

    @Test func aForgedTokenReadFirstIsRefused() async throws {
        let token = try fixture.signer.sign(fixture.transaction())
        var parts = token.split(separator: ".").map(String.init)
        var signature = try #require(Base64URL.decode(parts[2]))
        signature[0] ^= 1
        parts[2] = Base64URL.encode(signature)
        let unverified = try UnverifiedSignedData(parsing: parts.joined(separator: "."), as: JWSTransaction.self)
        await #expect {
            _ = try await fixture.verifier().verifyKeepingJSON(unverified)
        } throws: { ($0 as? SignedDataVerificationError)?.reason == .invalidSignature }
        // Claimed for another app: the verifier's identity checks still apply.
        let other = try fixture.signer.sign(fixture.transaction(bundleId: "com.example.other"))
        let claimed = try UnverifiedSignedData(parsing: other, as: JWSTransaction.self)
        await #expect {
            _ = try await fixture.verifier().verifyKeepingJSON(claimed)
        } throws: { ($0 as? SignedDataVerificationError)?.reason == .bundleIdMismatch }
    }

    @Test func aPayloadThatIsNotThePayloadTypeClaimsNothing() throws {
        let token = try fixture.signer.sign(payloadJSON: Data("not json".utf8))
        let unverified = try UnverifiedSignedData(parsing: token, as: JWSTransaction.self)
        #expect {
            _ = try unverified.claimedIdentity()
        } throws: { ($0 as? SignedDataVerificationError)?.reason == .malformedPayload }
    }

    @Test func theVerifiersOwnLengthLimitApplies() async throws {
        let token = try fixture.signer.sign(fixture.transaction())
        let unverified = try UnverifiedSignedData(parsing: token, as: JWSTransaction.self, maxLength: 1 << 20)
        var configuration = try fixture.verifier().configuration
        configuration.maxInputBytes = token.utf8.count - 1
        let strict = try SignedDataVerifier(configuration: configuration)
        await #expect {
            _ = try await strict.verifyKeepingJSON(unverified)
        } throws: { ($0 as? SignedDataVerificationError)?.reason == .inputTooLarge }
    }
}
