import AsyncHTTPClient
import Foundation
import GooglePlay
import NIOCore
import StoreSimulator
import Synchronization
import Testing
import _CryptoExtras

/// Service-account OAuth against the simulator's token endpoint, over loopback HTTP, with the
/// simulator's clock (stopped: it moves only when a test advances it) driving expiry.
@Suite struct ServiceAccountAuthTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    func withIdentity(
        _ body: (StoreSimulator, GooglePlayIdentity, GooglePlayIdentity.ServiceAccount) async throws -> Void
    ) async throws {
        try await StoreSimulator.withRunning(configuration: .init(start: Self.start, rate: 0)) { simulator, _ in
            let account = try simulator.googleIdentity.makeServiceAccount()
            try await body(simulator, simulator.googleIdentity, account)
        }
    }

    func provider(_ simulator: StoreSimulator, _ jsonKey: Data) throws -> ServiceAccountTokenProvider {
        ServiceAccountTokenProvider(key: try ServiceAccountKey(jsonData: jsonKey), clock: simulator.clock)
    }

    /// The JSON key with some members replaced.
    func editing(_ jsonKey: Data, _ changes: [String: String]) throws -> Data {
        var object = try #require(try JSONSerialization.jsonObject(with: jsonKey) as? [String: Any])
        for (name, value) in changes { object[name] = value }
        return try JSONSerialization.data(withJSONObject: object)
    }

    func tokenError(_ provider: ServiceAccountTokenProvider) async throws -> ServiceAccountTokenError {
        do {
            _ = try await provider.accessToken()
        } catch let error as ServiceAccountTokenError {
            return error
        }
        Issue.record("a token was issued")
        throw CancellationError()
    }

    @Test func parsesTheJSONKeyWithoutRevealingIt() async throws {
        try await withIdentity { simulator, identity, account in
            let key = try ServiceAccountKey(jsonData: account.jsonKey)
            #expect(key.clientEmail == account.email)
            #expect(key.privateKeyID == account.privateKeyID)
            #expect(key.tokenURI == identity.tokenURL)
            #expect(key.projectID == "storekeeper-simulator")
            #expect(!key.description.contains("PRIVATE KEY"))

            let path = FileManager.default.temporaryDirectory.appendingPathComponent("sa-\(UUID().uuidString).json")
            try account.jsonKey.write(to: path)
            defer { try? FileManager.default.removeItem(at: path) }
            #expect(try ServiceAccountKey(contentsOfFile: path.path).clientEmail == account.email)

            func reason(_ data: Data) -> ServiceAccountKeyError.Reason? {
                do {
                    _ = try ServiceAccountKey(jsonData: data)
                    return nil
                } catch {
                    #expect(!error.description.contains("MII"))
                    return error.reason
                }
            }
            #expect(reason(Data("{".utf8)) == .malformedJSON)
            #expect(reason(try editing(account.jsonKey, ["type": "authorized_user"])) == .wrongType)
            #expect(reason(try editing(account.jsonKey, ["private_key": ""])) == .missingField)
            #expect(reason(try editing(account.jsonKey, ["token_uri": "not a url"])) == .invalidTokenURI)
            let bogusPEM =
                "-----BEGIN PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n-----END PRIVATE KEY-----\n"
            #expect(reason(try editing(account.jsonKey, ["private_key": bogusPEM])) == .invalidPrivateKey)
            let missing = #expect(throws: ServiceAccountKeyError.self) {
                try ServiceAccountKey(contentsOfFile: "/nonexistent/key.json")
            }
            #expect(missing?.reason == .unreadable)
        }
    }

    @Test func cachesTheAccessToken() async throws {
        try await withIdentity { simulator, identity, account in
            let provider = try provider(simulator, account.jsonKey)
            let first = try await provider.accessToken()
            #expect(identity.isValidAccessToken(first))
            let second = try await provider.accessToken()
            #expect(second == first)
            #expect(identity.issuedAccessTokenCount == 1)
        }
    }

    @Test func refreshesShortlyBeforeExpiry() async throws {
        try await withIdentity { simulator, identity, account in
            let provider = try provider(simulator, account.jsonKey)
            let first = try await provider.accessToken()
            simulator.clock.advance(by: 3600 - 300 - 1)  // one second before the 5-minute margin
            #expect(try await provider.accessToken() == first)
            #expect(identity.issuedAccessTokenCount == 1)
            simulator.clock.advance(by: 2)
            let second = try await provider.accessToken()
            #expect(second != first)
            #expect(identity.issuedAccessTokenCount == 2)
            #expect(identity.isValidAccessToken(second))
        }
    }

    @Test func oneRefreshInFlightForManyCallers() async throws {
        try await withIdentity { simulator, identity, account in
            let provider = try provider(simulator, account.jsonKey)
            let tokens = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<50 { group.addTask { try await provider.accessToken() } }
                return try await group.reduce(into: Set<String>()) { _ = $0.insert($1) }
            }
            #expect(tokens.count == 1)
            #expect(identity.issuedAccessTokenCount == 1)

            // And again when the token is due for refresh.
            simulator.clock.advance(by: 3500)
            let refreshed = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<50 { group.addTask { try await provider.accessToken() } }
                return try await group.reduce(into: Set<String>()) { _ = $0.insert($1) }
            }
            #expect(refreshed.count == 1)
            #expect(refreshed.isDisjoint(with: tokens))
            #expect(identity.issuedAccessTokenCount == 2)
        }
    }

    @Test func unauthorizedAnswerRefreshesOnceAndRetriesOnce() async throws {
        try await withIdentity { simulator, identity, account in
            let provider = try provider(simulator, account.jsonKey)
            let url = try #require(simulator.endpoints?.baseURL) + GooglePlayIdentity.authCheckPath
            let fine = try await provider.execute(HTTPClientRequest(url: url), timeout: .seconds(10))
            #expect(fine.status == .ok)
            #expect(identity.issuedAccessTokenCount == 1)

            // Revoked through the simulator's HTTP control.
            var revoke = HTTPClientRequest(
                url: try #require(simulator.endpoints?.baseURL) + "/google/simulator/revoke-tokens")
            revoke.method = .POST
            #expect(try await HTTPClient.shared.execute(revoke, timeout: .seconds(10)).status == .ok)
            #expect(!identity.isValidAccessToken(try await provider.accessToken()))
            let retried = try await provider.execute(HTTPClientRequest(url: url), timeout: .seconds(10))
            #expect(retried.status == .ok)
            #expect(identity.issuedAccessTokenCount == 2)

            // Refused again after the refresh: the second answer is returned, no third attempt.
            let sends = Counter()
            let send: (String) async throws -> HTTPClientResponse = { token in
                sends.increment()
                identity.revokeAllAccessTokens()
                var request = HTTPClientRequest(url: url)
                request.headers.add(name: "Authorization", value: "Bearer " + token)
                let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
                _ = try await response.body.collect(upTo: 1 << 16)
                return response
            }
            let refused = try await provider.withAuthorization(isUnauthorized: { $0.status == .unauthorized }, send)
            #expect(refused.status == .unauthorized)
            #expect(sends.value == 2)
            #expect(identity.issuedAccessTokenCount == 3)
        }
    }

    @Test func wrongKeyIsRejectedByTheTokenEndpoint() async throws {
        try await withIdentity { simulator, identity, account in
            let otherKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            let forged = try editing(account.jsonKey, ["private_key": otherKey.pkcs8PEMRepresentation])
            let error = try await tokenError(try provider(simulator, forged))
            #expect(error.reason == .tokenEndpointError)
            #expect(error.status == 400)
            #expect(error.oauthError == "invalid_grant")
            #expect(error.detail.contains("Invalid JWT Signature"))
            #expect(!error.isRetryable)
            #expect(!error.description.contains("eyJ"))  // no assertion in the error
            #expect(identity.issuedAccessTokenCount == 0)
        }
    }

    @Test func wrongAudienceAndUnknownAccountAreRejected() async throws {
        try await withIdentity { simulator, identity, account in
            let tokenURL = try #require(identity.tokenURL)
            // Same endpoint, but the assertion's aud (the key's token_uri) is not the token URL.
            let wrongAudience = try editing(account.jsonKey, ["token_uri": tokenURL + "?tenant=other"])
            let audienceError = try await tokenError(try provider(simulator, wrongAudience))
            #expect(audienceError.oauthError == "invalid_grant")
            #expect(audienceError.detail.contains("audience"))

            let unknown = try editing(account.jsonKey, ["client_email": "nobody@example.iam.gserviceaccount.com"])
            let unknownError = try await tokenError(try provider(simulator, unknown))
            #expect(unknownError.oauthError == "invalid_grant")
            #expect(unknownError.detail.contains("account not found"))
            #expect(identity.issuedAccessTokenCount == 0)
        }
    }

    /// google-auth and Google's other libraries put Google's own token URL in the assertion's `aud`
    /// whatever `token_uri` they post to; the simulator accepts it, and still refuses any other.
    @Test func acceptsGooglesDocumentedAudience() async throws {
        try await withIdentity { simulator, identity, account in
            let tokenURL = try #require(identity.tokenURL)
            let object = try #require(try JSONSerialization.jsonObject(with: account.jsonKey) as? [String: Any])
            let key = try _RSA.Signing.PrivateKey(pemRepresentation: try #require(object["private_key"] as? String))
            func exchange(audience: String) async throws -> (status: Int, body: String) {
                let iat = Int(Date().timeIntervalSince1970)
                let assertion = try CompactJWT.signRS256(
                    header: ["alg": "RS256", "typ": "JWT", "kid": account.privateKeyID],
                    claims: [
                        "iss": account.email, "aud": audience, "iat": iat, "exp": iat + 3600,
                        "scope": "https://www.googleapis.com/auth/androidpublisher",
                    ],
                    key: key)
                var request = HTTPClientRequest(url: tokenURL)
                request.method = .POST
                request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
                request.body = .bytes(
                    ByteBuffer(
                        string: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion="
                            + assertion))
                let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
                let body = try await response.body.collect(upTo: 1 << 16)
                return (Int(response.status.code), String(buffer: body))
            }
            let google = try await exchange(audience: "https://oauth2.googleapis.com/token")
            #expect(google.status == 200, "\(google.body)")
            #expect(google.body.contains("access_token"))
            #expect(try await exchange(audience: tokenURL).status == 200)
            let other = try await exchange(audience: "https://oauth2.example.com/token")
            #expect(other.status == 400)
            #expect(other.body.contains("audience"))
            #expect(identity.issuedAccessTokenCount == 2)
        }
    }

    @Test func networkFailureIsRetryable() async throws {
        try await withIdentity { simulator, _, account in
            let unreachable = try editing(account.jsonKey, ["token_uri": "http://127.0.0.1:1/token"])
            let provider = ServiceAccountTokenProvider(
                key: try ServiceAccountKey(jsonData: unreachable),
                configuration: .init(requestTimeout: .seconds(1)), clock: simulator.clock)
            let error = try await tokenError(provider)
            #expect(error.reason == .networkFailure)
            #expect(error.isRetryable)
        }
    }

    @Test func keepsAStillValidTokenWhenARefreshFails() async throws {
        try await withIdentity { simulator, identity, account in
            let provider = try provider(simulator, account.jsonKey)
            let first = try await provider.accessToken()
            simulator.faults.add([APIFault(pathPrefix: GooglePlayIdentity.tokenPath, status: 503, times: 2)])
            simulator.clock.advance(by: 3400)  // in the refresh window, not expired
            #expect(try await provider.accessToken() == first)
            simulator.clock.advance(by: 300)  // expired
            let error = try await tokenError(provider)
            #expect(error.status == 503)
            #expect(error.isRetryable)
            #expect(try await provider.accessToken() != first)  // the fault is used up
            #expect(identity.issuedAccessTokenCount == 2)
        }
    }
}

/// A thread-safe counter for closures.
final class Counter: Sendable {
    private let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
