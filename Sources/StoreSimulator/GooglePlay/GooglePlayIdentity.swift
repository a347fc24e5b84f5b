public import Foundation
import GooglePlay
import Hummingbird
import NIOCore
import StoreCore
import Synchronization
import _CryptoExtras

/// The simulator's stand-in for Google's identity services:
///
/// - an OAuth 2.0 token endpoint (`POST /google/oauth2/token`) that verifies service accounts'
///   RS256 assertion JWTs against the accounts registered here and issues opaque access tokens;
/// - a JWKS (`GET /google/oauth2/v3/certs`) of the keys it signs Pub/Sub push OIDC tokens with,
///   with key rotation;
/// - a Swift API to mint those push tokens, and to create service-account JSON keys whose
///   `token_uri` is this simulator.
///
/// Times that real clients judge, or that they cannot know, go by the real clock
/// (``SimulatorClock/wallClock``), not the simulated one: an assertion is accepted when its `iat` and
/// `exp` are current on the real clock (or, for a client sharing the simulator's clock such as the
/// demo's server, on the simulated clock); access tokens live `accessTokenLifetime` real seconds;
/// push tokens are current on both clocks.
public final class GooglePlayIdentity: Sendable {
    /// How the identity behaves.
    public struct Configuration: Sendable {
        /// `expires_in` of issued access tokens, in real seconds.
        public var accessTokenLifetime: TimeInterval
        /// Tolerated clock difference when checking assertions' `iat` and `exp`.
        public var assertionSkew: TimeInterval

        /// Creates a configuration.
        public init(accessTokenLifetime: TimeInterval = 3600, assertionSkew: TimeInterval = 60) {
            self.accessTokenLifetime = accessTokenLifetime
            self.assertionSkew = assertionSkew
        }
    }

    /// A service account created by ``makeServiceAccount(email:projectID:)``.
    public struct ServiceAccount: Sendable {
        /// `client_email`.
        public var email: String
        /// `private_key_id`.
        public var privateKeyID: String
        /// The JSON key file's contents (holding the private key), as the Cloud console would
        /// download it, with `token_uri` pointing at this simulator.
        public var jsonKey: Data
    }

    /// Why the identity could not do what was asked.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        /// What went wrong.
        public var description: String
    }

    /// The token endpoint's path.
    public static let tokenPath = "/google/oauth2/token"
    /// Google's token endpoint: google-auth and Google's other libraries put it in every assertion's
    /// `aud`, whatever `token_uri` they post to, so the simulator accepts it as well as its own URL.
    public static let googleTokenURL = "https://oauth2.googleapis.com/token"
    /// The push-signing JWKS path.
    public static let certsPath = "/google/oauth2/v3/certs"
    /// A simulator-only probe that answers 200 for a valid access token and 401 otherwise, the way
    /// Google's APIs do; the Android Publisher routes guard themselves the same way.
    public static let authCheckPath = "/google/simulator/authcheck"

    struct PushKey {
        var id: String
        var key: _RSA.Signing.PrivateKey
    }

    struct IssuedToken {
        var email: String
        var expiresAt: Date
    }

    struct State {
        /// The public keys of each service account (a new key for an existing account is added, as
        /// the Cloud console does: earlier key files keep working).
        var accounts: [String: [_RSA.Signing.PublicKey]] = [:]
        var tokens: [String: IssuedToken] = [:]
        var issuedCount = 0
        var jwksRequestCount = 0
        var pushKeys: [PushKey] = []
        /// A key never published in the JWKS, for forged push tokens.
        var untrustedKey: PushKey?
        var baseURL: (@Sendable () -> String?)?
        /// How many of the process's shared keys this identity took (``newKey()``).
        var keysTaken = 0
    }

    /// How the identity behaves.
    public let configuration: Configuration
    private let clock: SimulatorClock
    private let state = Mutex(State())

    /// Creates an identity on `clock`; its routes are served once the simulator runs.
    public init(clock: SimulatorClock, configuration: Configuration = Configuration()) {
        self.clock = clock
        self.configuration = configuration
    }

    // MARK: Service accounts and access tokens

    /// The token endpoint's URL (the `token_uri` and assertion `aud`), once the simulator runs.
    public var tokenURL: String? { baseURL.map { $0 + Self.tokenPath } }
    /// The push-signing JWKS URL, once the simulator runs.
    public var jwksURL: String? { baseURL.map { $0 + Self.certsPath } }

    private var baseURL: String? { state.withLock { $0.baseURL }?() }

    /// How many access tokens the token endpoint has issued.
    public var issuedAccessTokenCount: Int { state.withLock { $0.issuedCount } }
    /// How many times the JWKS was requested.
    public var jwksRequestCount: Int { state.withLock { $0.jwksRequestCount } }

    /// The service account ``makeServiceAccount(email:projectID:)`` creates by default.
    public static let defaultServiceAccountEmail = "storekeeper@storekeeper-simulator.iam.gserviceaccount.com"
    /// The project ``makeServiceAccount(email:projectID:)`` puts it in by default.
    public static let defaultProjectID = "storekeeper-simulator"

    /// Creates a service account key — a 2048-bit RSA key new to this identity
    /// (``SimulatorRSAKeys``) for `email` (an account that already has keys keeps them) — registers
    /// its public key with the token endpoint and returns its JSON key. The simulator must be running.
    public func makeServiceAccount(
        email: String = GooglePlayIdentity.defaultServiceAccountEmail,
        projectID: String = GooglePlayIdentity.defaultProjectID
    ) throws -> ServiceAccount {
        guard let tokenURL else { throw Failure(description: "the simulator is not running") }
        let key = try newKey()
        let keyID = Self.randomHex(20)
        let json: [String: Any] = [
            "type": "service_account", "project_id": projectID, "private_key_id": keyID,
            "private_key": key.pkcs8PEMRepresentation + "\n", "client_email": email,
            "client_id": String(Int.random(in: 100_000_000_000_000_000...999_999_999_999_999_999)),
            "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": tokenURL,
        ]
        let data = try JSONSerialization.data(withJSONObject: json, options: [.prettyPrinted, .sortedKeys])
        state.withLock { $0.accounts[email, default: []].append(key.publicKey) }
        return ServiceAccount(email: email, privateKeyID: keyID, jsonKey: data)
    }

    /// Whether `token` was issued here, is not revoked and has not expired (on the real clock).
    public func isValidAccessToken(_ token: String) -> Bool {
        let now = clock.wallClock.now()
        return state.withLock { $0.tokens[token].map { now < $0.expiresAt } ?? false }
    }

    /// Revokes every access token issued so far: API calls with them get 401 from now on.
    public func revokeAllAccessTokens() {
        state.withLock { $0.tokens.removeAll() }
    }

    // MARK: Push tokens

    /// The ids of the keys in the JWKS, oldest first; push tokens are signed with the last one.
    public var pushSigningKeyIDs: [String] { state.withLock { $0.pushKeys.map(\.id) } }

    /// Adds a new push-signing key to the JWKS and signs push tokens with it from now on; returns its id.
    @discardableResult
    public func addPushSigningKey() throws -> String {
        let key = PushKey(id: Self.randomHex(20), key: try newKey())
        state.withLock { $0.pushKeys.append(key) }
        return key.id
    }

    /// Removes a key from the JWKS; tokens it signed no longer verify once clients refresh.
    public func retirePushSigningKey(_ id: String) {
        state.withLock { $0.pushKeys.removeAll { $0.id == id } }
    }

    /// Mints the OIDC token Pub/Sub would send as `Authorization: Bearer …` on a push.
    ///
    /// - Parameters:
    ///   - audience: `aud`, the push subscription's configured audience.
    ///   - email: the push service account (`email`).
    ///   - emailVerified: `email_verified`.
    ///   - issuedAt: `iat`; by default the token is current on both clocks: `iat` is the earlier of
    ///     the real and the simulated now, `exp` is `expiresIn` after the later one (a receiver on
    ///     the real clock and one on the simulated clock both accept it).
    ///   - expiresIn: `exp - iat` when `issuedAt` is given.
    ///   - keyID: the JWKS key to sign with (default: the newest; one is created if there is none).
    ///   - issuer: `iss`.
    public func makePushToken(
        audience: String, email: String, emailVerified: Bool = true, issuedAt: Date? = nil,
        expiresIn: TimeInterval = 3600, keyID: String? = nil, issuer: String = "https://accounts.google.com"
    ) throws -> String {
        let (iat, exp) = tokenTimes(issuedAt: issuedAt, expiresIn: expiresIn)
        let digest = email.utf8.reduce(UInt64(14_695_981_039_346_656_037)) { ($0 ^ UInt64($1)) &* 1_099_511_628_211 }
        let subject = "1" + String(digest % 100_000_000_000_000_000)
        let claims: [String: Any] = [
            "aud": audience, "azp": subject, "email": email, "email_verified": emailVerified,
            "exp": exp, "iat": iat, "iss": issuer, "sub": subject,
        ]
        return try makePushToken(claims: claims, keyID: keyID)
    }

    /// Mints a push token like ``makePushToken(audience:email:emailVerified:issuedAt:expiresIn:keyID:issuer:)``
    /// but signed by a key that is not in the JWKS (a forgery receivers must refuse).
    public func makeUntrustedPushToken(audience: String, email: String) throws -> String {
        let existing = state.withLock { $0.untrustedKey }
        let signing: PushKey
        if let existing {
            signing = existing
        } else {
            let created = PushKey(id: Self.randomHex(20), key: try newKey())
            signing = state.withLock { state in
                if let raced = state.untrustedKey { return raced }
                state.untrustedKey = created
                return created
            }
        }
        let (iat, exp) = tokenTimes(issuedAt: nil, expiresIn: 3600)
        let claims: [String: Any] = [
            "aud": audience, "email": email, "email_verified": true, "exp": exp, "iat": iat,
            "iss": "https://accounts.google.com", "sub": "100000000000000000000",
        ]
        return try CompactJWT.signRS256(
            header: ["alg": "RS256", "kid": signing.id, "typ": "JWT"], claims: claims, key: signing.key)
    }

    /// A push token's `iat` and `exp` (seconds since 1970): from `issuedAt` if given, else spanning the
    /// real and the simulated now.
    private func tokenTimes(issuedAt: Date?, expiresIn: TimeInterval) -> (iat: Int, exp: Int) {
        func seconds(_ date: Date) -> Int { Int(date.timeIntervalSince1970.rounded(.down)) }
        if let issuedAt { return (seconds(issuedAt), seconds(issuedAt) + Int(expiresIn)) }
        let real = clock.wallClock.now()
        let simulated = clock.now()
        return (seconds(min(real, simulated)), seconds(max(real, simulated)) + Int(expiresIn))
    }

    /// A key this identity has not used yet: the next of the process's shared keys
    /// (``SimulatorRSAKeys``), so that simulators after the first need not generate their own.
    func newKey() throws -> _RSA.Signing.PrivateKey {
        let index = state.withLock { state in
            defer { state.keysTaken += 1 }
            return state.keysTaken
        }
        return try SimulatorRSAKeys.shared.key(at: index)
    }

    /// Adds a push-signing key if there is none (once, however many callers race).
    private func ensurePushSigningKey() throws {
        guard state.withLock({ $0.pushKeys.isEmpty }) else { return }
        let key = PushKey(id: Self.randomHex(20), key: try newKey())
        state.withLock { state in
            if state.pushKeys.isEmpty { state.pushKeys.append(key) }
        }
    }

    /// Signs an arbitrary claim set as a push token (for tests of unusual or missing claims).
    public func makePushToken(claims: [String: Any], keyID: String? = nil) throws -> String {
        try ensurePushSigningKey()
        let signing: PushKey? = state.withLock { state in
            keyID.map { id in state.pushKeys.first { $0.id == id } } ?? state.pushKeys.last
        }
        guard let signing else { throw Failure(description: "no push-signing key \(keyID ?? "")") }
        return try CompactJWT.signRS256(
            header: ["alg": "RS256", "kid": signing.id, "typ": "JWT"], claims: claims, key: signing.key)
    }

    // MARK: Routes

    func register(on router: some RouterMethods<BasicRequestContext>, baseURL: @escaping @Sendable () -> String?) {
        state.withLock { $0.baseURL = baseURL }
        router.post(RouterPath(String(Self.tokenPath.dropFirst()))) { [self] request, _ -> Response in
            let body = try await request.body.collect(upTo: 64 * 1024)
            return tokenResponse(to: String(buffer: body))
        }
        router.get(RouterPath(String(Self.certsPath.dropFirst()))) { [self] _, _ -> Response in
            // Google always serves its keys: the JWKS has one before the first push (made on first
            // use, as generating an RSA key is slow).
            try? ensurePushSigningKey()
            let pushKeys = state.withLock { state in
                state.jwksRequestCount += 1
                return state.pushKeys
            }
            let keys: [[String: Any]] = pushKeys.compactMap { pushKey in
                guard let primitives = try? pushKey.key.publicKey.getKeyPrimitives() else { return nil }
                return [
                    "kty": "RSA", "alg": "RS256", "use": "sig", "kid": pushKey.id,
                    "n": Base64URL.encode(primitives.modulus), "e": Base64URL.encode(primitives.publicExponent),
                ]
            }
            return Self.json(.ok, ["keys": keys], cacheControl: "public, max-age=3600")
        }
        router.get(RouterPath(String(Self.authCheckPath.dropFirst()))) { [self] request, _ -> Response in
            let header = request.headers[.authorization] ?? ""
            let token = header.hasPrefix("Bearer ") ? String(header.dropFirst(7)) : ""
            let now = clock.wallClock.now()
            guard let issued = state.withLock({ $0.tokens[token] }), now < issued.expiresAt else {
                return Self.unauthenticated()
            }
            return Self.json(.ok, ["email": issued.email, "expires_in": Int(issued.expiresAt.timeIntervalSince(now))])
        }
        router.post("google/simulator/revoke-tokens") { [self] _, _ -> Response in
            revokeAllAccessTokens()
            return Self.json(.ok, [:])
        }
    }

    /// Google's answer to an API call without a valid access token.
    static func unauthenticated() -> Response {
        json(
            .unauthorized,
            [
                "error": [
                    "code": 401,
                    "message":
                        "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
                    "status": "UNAUTHENTICATED",
                ] as [String: Any]
            ])
    }

    private func tokenResponse(to body: String) -> Response {
        guard let form = FormURLEncoding.decode(body) else {
            return Self.oauthError("invalid_request", "The request body is not form-encoded.")
        }
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            return Self.oauthError("unsupported_grant_type", "Invalid grant_type: \(form["grant_type"] ?? "")")
        }
        guard let assertion = form["assertion"], !assertion.isEmpty else {
            return Self.oauthError("invalid_request", "Missing required parameter: assertion")
        }
        let jwt: CompactJWT
        do {
            jwt = try CompactJWT(parsing: assertion)
        } catch {
            return Self.oauthError("invalid_grant", "Invalid JWT: \(error.description)")
        }
        guard jwt.algorithm == "RS256" else {
            return Self.oauthError("invalid_grant", "Invalid JWT: alg must be RS256")
        }
        guard let email = jwt.claims["iss"] as? String,
            let publicKeys = state.withLock({ $0.accounts[email] })
        else {
            return Self.oauthError("invalid_grant", "Invalid grant: account not found")
        }
        guard publicKeys.contains(where: { jwt.hasValidRS256Signature(for: $0) }) else {
            return Self.oauthError("invalid_grant", "Invalid JWT Signature.")
        }
        guard let audience = jwt.claims["aud"] as? String, audience == tokenURL || audience == Self.googleTokenURL
        else {
            return Self.oauthError("invalid_grant", "Invalid JWT: Failed audience check.")
        }
        guard let scope = jwt.claims["scope"] as? String, !scope.trimmingCharacters(in: .whitespaces).isEmpty else {
            return Self.oauthError("invalid_scope", "Invalid OAuth scope or ID token audience provided.")
        }
        let now = clock.wallClock.now()
        let skew = configuration.assertionSkew
        guard let issuedAt = jwt.numericDate("iat"), let expiresAt = jwt.numericDate("exp"),
            expiresAt > issuedAt, expiresAt.timeIntervalSince(issuedAt) <= 3600,
            [now, clock.now()].contains(where: {
                issuedAt.timeIntervalSince($0) <= skew && $0.timeIntervalSince(expiresAt) <= skew
            })
        else {
            return Self.oauthError(
                "invalid_grant",
                "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim."
            )
        }
        let token = "ya29.sim-" + Self.randomHex(32)
        let lifetime = configuration.accessTokenLifetime
        state.withLock { state in
            state.tokens[token] = IssuedToken(email: email, expiresAt: now.addingTimeInterval(lifetime))
            state.issuedCount += 1
        }
        return Self.json(.ok, ["access_token": token, "expires_in": Int(lifetime), "token_type": "Bearer"])
    }

    private static func oauthError(_ code: String, _ description: String) -> Response {
        json(.badRequest, ["error": code, "error_description": description])
    }

    private static func json(_ status: HTTPResponse.Status, _ object: [String: Any], cacheControl: String? = nil)
        -> Response
    {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        if let cacheControl { headers[.cacheControl] = cacheControl }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    private static func randomHex(_ bytes: Int) -> String {
        Hex.encode((0..<bytes).map { _ in UInt8.random(in: 0...255) })
    }
}
