import AppStoreServer
import Foundation
import StoreSimulator
import Testing

/// Online mode: OCSP with hard failure at the current time, against real signed OCSP responses.
@Suite struct OnlineVerificationTests {
    /// Nothing listens on port 1 of loopback: connecting is refused at once.
    static let unreachableResponder = "http://127.0.0.1:1/ocsp"
    let now = Date()
    let fixture: VerifierFixture

    init() throws {
        var options = TestCertificateChain.Options(now: now)
        options.ocspResponderURL = Self.unreachableResponder
        fixture = try VerifierFixture(options: options, signedDate: now)
    }

    func onlineVerifier(_ transport: any OCSPTransport) throws -> SignedDataVerifier {
        try SignedDataVerifier(
            configuration: .init(
                trustedRoots: fixture.chain.trustedRoots, bundleId: VerifierFixture.bundleId,
                appAppleId: VerifierFixture.appAppleId, environment: .production, onlineChecks: true),
            ocspTransport: transport)
    }

    func expectFailure(
        _ reason: SignedDataVerificationError.Reason, _ verifier: SignedDataVerifier,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> SignedDataVerificationError? {
        let token = try fixture.signer.sign(fixture.transaction())
        do {
            _ = try await verifier.verify(token, as: JWSTransaction.self)
            Issue.record("expected \(reason)", sourceLocation: sourceLocation)
            return nil
        } catch {
            #expect(error.reason == reason, "\(error)", sourceLocation: sourceLocation)
            return error
        }
    }

    @Test func goodAnswersVerifyAndAreCachedWithTheChain() async throws {
        let responder = TestOCSPResponder(chain: fixture.chain)
        let verifier = try onlineVerifier(responder)
        let token = try fixture.signer.sign(fixture.transaction())
        _ = try await verifier.verify(token, as: JWSTransaction.self)
        #expect(responder.queryCount == 2)  // leaf and intermediate
        _ = try await verifier.verify(token, as: JWSTransaction.self)
        #expect(responder.queryCount == 2)  // steady state: no network
    }

    @Test func revokedLeafIsRefusedForGood() async throws {
        let responder = TestOCSPResponder(chain: fixture.chain)
        responder.setStatus(.revoked(at: now.addingTimeInterval(-600)), for: fixture.chain.leaf)
        let error = try await expectFailure(.revocationCheckFailed, try onlineVerifier(responder))
        #expect(error?.isRetryable == false)
    }

    @Test func revokedIntermediateIsRefused() async throws {
        let responder = TestOCSPResponder(chain: fixture.chain)
        responder.setStatus(.revoked(at: now.addingTimeInterval(-600)), for: fixture.chain.intermediate)
        _ = try await expectFailure(.revocationCheckFailed, try onlineVerifier(responder))
    }

    @Test func unknownStatusFailsHard() async throws {
        let responder = TestOCSPResponder(chain: fixture.chain)
        responder.setStatus(.unknown, for: fixture.chain.leaf)
        _ = try await expectFailure(.revocationCheckFailed, try onlineVerifier(responder))
    }

    @Test func answerSignedByAnotherKeyIsRefused() async throws {
        let responder = TestOCSPResponder(chain: fixture.chain)
        responder.forgesSignatures = true
        _ = try await expectFailure(.revocationCheckFailed, try onlineVerifier(responder))
        #expect(responder.queryCount >= 1)
    }

    @Test func answerThatIsNotOCSPIsRefused() async throws {
        _ = try await expectFailure(.revocationCheckFailed, try onlineVerifier(GarbageTransport()))
    }

    @Test func unreachableResponderIsARetryableFailure() async throws {
        let error = try await expectFailure(
            .revocationCheckUnavailable, try onlineVerifier(HTTPOCSPTransport(timeout: .milliseconds(500))))
        #expect(error?.isRetryable == true)
        #expect(error?.detail.contains("127.0.0.1:1") == true)
    }

    @Test func onlineModeValidatesAtTheCurrentTime() async throws {
        // Signed while the leaf was valid, but the leaf has expired since: offline accepts, online refuses.
        let day: TimeInterval = 86_400
        let expired = try fixture.chain.withNewLeaf(
            validity: now.addingTimeInterval(-30 * day)...now.addingTimeInterval(-day),
            ocspResponderURL: Self.unreachableResponder)
        let token = try AppStoreSigner(chain: expired).sign(
            fixture.transaction(signedDate: now.addingTimeInterval(-2 * day)))
        _ = try await fixture.verifier().verify(token, as: JWSTransaction.self)
        let online = try onlineVerifier(TestOCSPResponder(chain: expired))
        do {
            _ = try await online.verify(token, as: JWSTransaction.self)
            Issue.record("an expired leaf verified online")
        } catch {
            #expect(error.reason == .untrustedChain)
        }
    }

    @Test func onlineModeNeedsATransport() {
        #expect(throws: SignedDataVerifier.ConfigurationError.self) {
            try SignedDataVerifier(
                configuration: .init(trustedRoots: fixture.chain.trustedRoots, onlineChecks: true))
        }
    }
}

/// A responder that answers with bytes that are not an OCSP response.
struct GarbageTransport: OCSPTransport {
    func send(request: [UInt8], to uri: String) async throws -> [UInt8] {
        Array("<html>captive portal</html>".utf8)
    }
}
