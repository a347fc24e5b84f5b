import Foundation
import GooglePlay
import StoreSimulator
import Testing
import _CryptoExtras

/// Pub/Sub push authentication against the simulator's JWKS, over loopback HTTP, with push tokens
/// minted by the simulator and the simulator's stopped clock driving expiry and JWKS refreshes.
@Suite struct PushAuthenticationTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)
    static let audience = "https://storekeeper.example/google/rtdn"
    static let pushAccount = "rtdn-push@storekeeper-demo.iam.gserviceaccount.com"

    struct Fixture {
        var simulator: StoreSimulator
        var identity: GooglePlayIdentity
        var authenticator: PushAuthenticator

        var now: Date { simulator.clock.now() }

        func token(
            audience: String = PushAuthenticationTests.audience, email: String = PushAuthenticationTests.pushAccount,
            emailVerified: Bool = true, issuedAt: Date? = nil, expiresIn: TimeInterval = 3600, keyID: String? = nil,
            issuer: String = "https://accounts.google.com"
        ) throws -> String {
            try identity.makePushToken(
                audience: audience, email: email, emailVerified: emailVerified, issuedAt: issuedAt,
                expiresIn: expiresIn, keyID: keyID, issuer: issuer)
        }

        /// Valid claims, for hand-made tokens.
        func claims() -> [String: Any] {
            let iat = Int(now.timeIntervalSince1970)
            return [
                "aud": PushAuthenticationTests.audience, "email": PushAuthenticationTests.pushAccount,
                "email_verified": true, "iat": iat, "exp": iat + 3600, "iss": "https://accounts.google.com",
            ]
        }

        /// The reason `header` is refused, or nil if it is accepted.
        func refusal(_ header: String?) async -> PushAuthenticationError.Reason? {
            do {
                _ = try await authenticator.authenticate(authorizationHeader: header)
                return nil
            } catch {
                #expect(!error.description.contains("eyJ"))  // never the token
                // Nor what the configuration expects: the answer goes to whoever sent the push.
                #expect(!error.description.contains(PushAuthenticationTests.audience), "\(error)")
                #expect(!error.description.contains(PushAuthenticationTests.pushAccount), "\(error)")
                return error.reason
            }
        }

        func refusal(token: String) async -> PushAuthenticationError.Reason? {
            await refusal("Bearer " + token)
        }
    }

    func withFixture(
        refreshInterval: TimeInterval = 60, jwksURL: String? = nil, _ body: (Fixture) async throws -> Void
    ) async throws {
        // The real clock stopped at the simulated start too: push tokens are current on both clocks,
        // so with both at the same time their lifetime is the simulated clock's.
        let configuration = StoreSimulator.Configuration(start: Self.start, rate: 0, wallClock: ManualClock(Self.start))
        try await StoreSimulator.withRunning(configuration: configuration) { simulator, _ in
            let identity = simulator.googleIdentity
            try identity.addPushSigningKey()
            let url: String
            if let jwksURL { url = jwksURL } else { url = try #require(identity.jwksURL) }
            var configuration = PushAuthenticator.Configuration(
                audience: Self.audience, serviceAccountEmail: Self.pushAccount, jwksURL: url,
                jwksRefreshInterval: refreshInterval)
            // Short only where the test points at an unreachable JWKS; the simulator may be slow under load.
            configuration.jwksRequestTimeout = jwksURL == nil ? .seconds(20) : .seconds(1)
            let authenticator = PushAuthenticator(configuration: configuration, clock: simulator.clock)
            try await body(Fixture(simulator: simulator, identity: identity, authenticator: authenticator))
        }
    }

    @Test func acceptsAValidPushTokenAndCachesTheKeys() async throws {
        try await withFixture { fixture in
            let token = try fixture.token()
            let identity = try await fixture.authenticator.authenticate(authorizationHeader: "Bearer " + token)
            #expect(identity.email == Self.pushAccount)
            #expect(identity.audience == Self.audience)
            #expect(identity.issuer == "https://accounts.google.com")
            #expect(identity.keyID == fixture.identity.pushSigningKeyIDs.last)
            #expect(identity.expiresAt == fixture.now.addingTimeInterval(3600))
            _ = try await fixture.authenticator.authenticate(token: try fixture.token())
            #expect(fixture.identity.jwksRequestCount == 1)
            #expect(fixture.authenticator.jwksFetchCount == 1)
            // The other issuer spelling is Google's too.
            #expect(await fixture.refusal(token: try fixture.token(issuer: "accounts.google.com")) == nil)
        }
    }

    @Test func refusesMissingAndMalformedTokens() async throws {
        try await withFixture { fixture in
            #expect(await fixture.refusal(nil) == .missingToken)
            #expect(await fixture.refusal("") == .missingToken)
            #expect(await fixture.refusal("Basic dXNlcjpwYXNz") == .missingToken)
            #expect(await fixture.refusal("Bearer ") == .missingToken)
            #expect(await fixture.refusal(token: "garbage") == .malformedToken)
            #expect(await fixture.refusal(token: "a.b.c") == .malformedToken)
            #expect(await fixture.refusal(token: "e30.e30.e30.e30") == .malformedToken)
            let huge = try fixture.token() + String(repeating: "A", count: 8 * 1024)
            #expect(await fixture.refusal(token: huge) == .malformedToken)
            // Valid signature but no exp.
            var claims = fixture.claims()
            claims["exp"] = nil
            #expect(await fixture.refusal(token: try fixture.signed(claims: claims)) == .malformedToken)
            #expect(fixture.identity.jwksRequestCount == 1)
        }
    }

    @Test func refusesAlgorithmsOtherThanRS256() async throws {
        try await withFixture { fixture in
            let kid = try #require(fixture.identity.pushSigningKeyIDs.last)
            let claims = try CompactJWT.encodedPart(fixture.claims())
            let none = try CompactJWT.encodedPart(["alg": "none", "typ": "JWT", "kid": kid]) + "." + claims + "."
            #expect(await fixture.refusal(token: none) == .unsupportedAlgorithm)
            let hs256 =
                try CompactJWT.encodedPart(["alg": "HS256", "typ": "JWT", "kid": kid]) + "." + claims + "."
                + Base64URL.encode(Data(repeating: 7, count: 32))
            #expect(await fixture.refusal(token: hs256) == .unsupportedAlgorithm)
            let rs512 = try CompactJWT.encodedPart(["alg": "RS512", "kid": kid]) + "." + claims + ".AAAA"
            #expect(await fixture.refusal(token: rs512) == .unsupportedAlgorithm)
            #expect(fixture.identity.jwksRequestCount == 0)  // refused before any key lookup
        }
    }

    @Test func refusesASignatureByAnotherKeyUnderAKnownKeyID() async throws {
        try await withFixture { fixture in
            let kid = try #require(fixture.identity.pushSigningKeyIDs.last)
            let impostor = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            let forged = try CompactJWT.signRS256(
                header: ["alg": "RS256", "typ": "JWT", "kid": kid], claims: fixture.claims(), key: impostor)
            #expect(await fixture.refusal(token: forged) == .invalidSignature)
            // A genuine token with one claim changed afterwards.
            let genuine = try fixture.token().split(separator: ".").map(String.init)
            var claims = fixture.claims()
            claims["email"] = "attacker@example.com"
            let tampered = [genuine[0], try CompactJWT.encodedPart(claims), genuine[2]].joined(separator: ".")
            #expect(await fixture.refusal(token: tampered) == .invalidSignature)
        }
    }

    @Test func refusesWrongClaims() async throws {
        try await withFixture { fixture in
            let now = fixture.now
            #expect(
                await fixture.refusal(token: try fixture.token(audience: "https://other.example")) == .wrongAudience)
            #expect(await fixture.refusal(token: try fixture.token(email: "someone@example.com")) == .wrongEmail)
            #expect(await fixture.refusal(token: try fixture.token(emailVerified: false)) == .emailNotVerified)
            #expect(await fixture.refusal(token: try fixture.token(issuer: "https://evil.example")) == .wrongIssuer)
            // Expired beyond the 60 s skew; within it is accepted.
            let expired = try fixture.token(issuedAt: now.addingTimeInterval(-3700), expiresIn: 3600)
            #expect(await fixture.refusal(token: expired) == .expired)
            let justExpired = try fixture.token(issuedAt: now.addingTimeInterval(-3630), expiresIn: 3600)
            #expect(await fixture.refusal(token: justExpired) == nil)
            // Issued in the future beyond the skew; within it is accepted.
            let future = try fixture.token(issuedAt: now.addingTimeInterval(120))
            #expect(await fixture.refusal(token: future) == .issuedInFuture)
            #expect(await fixture.refusal(token: try fixture.token(issuedAt: now.addingTimeInterval(30))) == nil)
            // The same token expires as the clock moves.
            let token = try fixture.token()
            #expect(await fixture.refusal(token: token) == nil)
            fixture.simulator.clock.advance(by: 3600 + 61)
            #expect(await fixture.refusal(token: token) == .expired)
            // nbf in the future.
            var claims = fixture.claims()
            claims["nbf"] = Int(fixture.now.timeIntervalSince1970) + 600
            #expect(await fixture.refusal(token: try fixture.signed(claims: claims)) == .notYetValid)
        }
    }

    @Test func unknownKeyIDRefetchesTheJWKSAtMostOncePerInterval() async throws {
        try await withFixture { fixture in
            #expect(await fixture.refusal(token: try fixture.token()) == nil)
            #expect(fixture.identity.jwksRequestCount == 1)
            let stranger = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            func unknown(_ kid: String) throws -> String {
                try CompactJWT.signRS256(
                    header: ["alg": "RS256", "typ": "JWT", "kid": kid], claims: fixture.claims(), key: stranger)
            }
            // Within the interval since the first fetch: refused without fetching.
            #expect(await fixture.refusal(token: try unknown("kid-0")) == .unknownKey)
            #expect(fixture.identity.jwksRequestCount == 1)

            fixture.simulator.clock.advance(by: 61)
            let authenticator = fixture.authenticator
            let tokens = try (1...30).map { try unknown("kid-\($0)") }
            let reasons = await withTaskGroup(of: PushAuthenticationError.Reason?.self) { group in
                for token in tokens {
                    group.addTask { await fixture.refusal(token: token) }
                }
                return await group.reduce(into: [PushAuthenticationError.Reason?]()) { $0.append($1) }
            }
            #expect(reasons.count == 30)
            #expect(reasons.allSatisfy { $0 == .unknownKey })
            #expect(fixture.identity.jwksRequestCount == 2)
            #expect(authenticator.jwksFetchCount == 2)

            fixture.simulator.clock.advance(by: 59)
            #expect(await fixture.refusal(token: try unknown("kid-late")) == .unknownKey)
            #expect(fixture.identity.jwksRequestCount == 2)
            fixture.simulator.clock.advance(by: 2)
            #expect(await fixture.refusal(token: try unknown("kid-later")) == .unknownKey)
            #expect(fixture.identity.jwksRequestCount == 3)
            // Known keys keep working without fetches.
            #expect(await fixture.refusal(token: try fixture.token()) == nil)
            #expect(fixture.identity.jwksRequestCount == 3)
        }
    }

    @Test func keyRotationIsPickedUpOnTheNextRefresh() async throws {
        try await withFixture { fixture in
            let oldKey = try #require(fixture.identity.pushSigningKeyIDs.last)
            let oldToken = try fixture.token()
            #expect(await fixture.refusal(token: oldToken) == nil)

            let newKey = try fixture.identity.addPushSigningKey()
            let newToken = try fixture.token()
            #expect(newToken != oldToken)
            // Just fetched: a refresh is not yet allowed.
            #expect(await fixture.refusal(token: newToken) == .unknownKey)
            fixture.simulator.clock.advance(by: 61)
            let accepted = try await fixture.authenticator.authenticate(token: newToken)
            #expect(accepted.keyID == newKey)
            #expect(fixture.identity.jwksRequestCount == 2)

            // Retire the old key: once the JWKS is refreshed again, its tokens are unknown.
            fixture.identity.retirePushSigningKey(oldKey)
            fixture.simulator.clock.advance(by: 61)
            #expect(await fixture.refusal(token: try fixture.token(keyID: newKey)) == nil)
            let stranger = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            let unknown = try CompactJWT.signRS256(
                header: ["alg": "RS256", "kid": "brand-new"], claims: fixture.claims(), key: stranger)
            #expect(await fixture.refusal(token: unknown) == .unknownKey)  // triggers the refresh
            #expect(fixture.identity.jwksRequestCount == 3)
            #expect(await fixture.refusal(token: oldToken) == .unknownKey)
        }
    }

    @Test func unreachableJWKSIsRetryable() async throws {
        try await withFixture(jwksURL: "http://127.0.0.1:1/certs") { fixture in
            do {
                _ = try await fixture.authenticator.authenticate(token: try fixture.token())
                Issue.record("accepted without keys")
            } catch let error as PushAuthenticationError {
                #expect(error.reason == .jwksUnavailable)
                #expect(error.isRetryable)
            }
        }
        try await withFixture { fixture in
            let token = try fixture.token()
            fixture.simulator.faults.add([APIFault(pathPrefix: GooglePlayIdentity.certsPath, status: 503)])
            #expect(await fixture.refusal(token: token) == .jwksUnavailable)
            // Still within the interval: the failure is remembered, not retried.
            #expect(await fixture.refusal(token: token) == .jwksUnavailable)
            #expect(fixture.identity.jwksRequestCount == 0)  // the fault answered, not the route
            fixture.simulator.clock.advance(by: 61)
            #expect(await fixture.refusal(token: token) == nil)
            #expect(fixture.identity.jwksRequestCount == 1)
        }
    }
}

extension PushAuthenticationTests.Fixture {
    /// `claims` signed with the simulator's current push key.
    func signed(claims: [String: Any]) throws -> String {
        try identity.makePushToken(claims: claims)
    }
}
