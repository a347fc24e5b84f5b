public import AsyncHTTPClient
public import Foundation
public import Logging
public import NIOCore
import Synchronization
import _CryptoExtras

/// Authenticates Cloud Pub/Sub push requests ("Authenticate push subscriptions"): verifies the
/// OpenID Connect JWT that Pub/Sub sends as `Authorization: Bearer <token>` when the push
/// subscription has authentication enabled.
///
/// The token must be a compact RS256 JWT signed by one of the keys published at the JWKS URL
/// (Google's by default), issued by `accounts.google.com`, for the configured audience and push
/// service account (with `email_verified` true), and current on the injected clock within the
/// allowed skew.
///
/// Keys are cached. An unknown `kid` triggers a JWKS fetch, at most once per
/// ``Configuration/jwksRefreshInterval``, so a flood of forged key ids cannot hammer the JWKS
/// endpoint; concurrent requests share one fetch.
public final class PushAuthenticator: Sendable {
    /// What a push token must say, and how keys are fetched.
    public struct Configuration: Sendable {
        /// Google's JWKS for OIDC tokens.
        public static let googleJWKSURL = "https://www.googleapis.com/oauth2/v3/certs"
        /// The issuers Google's OIDC tokens carry.
        public static let googleIssuers: Set<String> = ["accounts.google.com", "https://accounts.google.com"]

        /// The `aud` the push subscription was configured with (by default, Pub/Sub uses the push
        /// endpoint URL).
        public var audience: String
        /// The service account the push subscription signs tokens as (the `email` claim).
        public var serviceAccountEmail: String
        /// Where the signing keys are published.
        public var jwksURL: String
        /// Accepted `iss` values.
        public var issuers: Set<String>
        /// The least time between two JWKS fetches caused by unknown key ids.
        public var jwksRefreshInterval: TimeInterval
        /// Tolerated clock difference for `exp`, `iat` and `nbf`.
        public var clockSkew: TimeInterval
        /// The longest token accepted, in bytes; longer ones are refused unread.
        public var maxTokenBytes: Int
        /// How long one JWKS request may take.
        public var jwksRequestTimeout: TimeAmount
        /// The largest JWKS accepted.
        public var maxJWKSBytes: Int

        /// Creates a configuration for a push subscription.
        public init(
            audience: String, serviceAccountEmail: String, jwksURL: String = Configuration.googleJWKSURL,
            issuers: Set<String> = Configuration.googleIssuers, jwksRefreshInterval: TimeInterval = 60,
            clockSkew: TimeInterval = 60, maxTokenBytes: Int = 8 * 1024, jwksRequestTimeout: TimeAmount = .seconds(5),
            maxJWKSBytes: Int = 256 * 1024
        ) {
            self.audience = audience
            self.serviceAccountEmail = serviceAccountEmail
            self.jwksURL = jwksURL
            self.issuers = issuers
            self.jwksRefreshInterval = max(0, jwksRefreshInterval)
            self.clockSkew = max(0, clockSkew)
            self.maxTokenBytes = maxTokenBytes
            self.jwksRequestTimeout = jwksRequestTimeout
            self.maxJWKSBytes = maxJWKSBytes
        }
    }

    /// The facts of an authenticated push token.
    public struct Identity: Sendable, Hashable {
        /// `email`: the push service account.
        public var email: String
        /// `aud`.
        public var audience: String
        /// `iss`.
        public var issuer: String
        /// `sub`, when present.
        public var subject: String?
        /// `iat`.
        public var issuedAt: Date
        /// `exp`.
        public var expiresAt: Date
        /// The header's `kid`: the JWKS key the token was verified with.
        public var keyID: String
    }

    struct State {
        var keys: [String: _RSA.Signing.PublicKey] = [:]
        var lastFetchAttempt: Date?
        var lastFetchError: String?
        var fetch: Task<Void, Never>?
        var fetchCount = 0
    }

    /// What push tokens must say.
    public let configuration: Configuration
    private let httpClient: HTTPClient
    private let clock: any WallClock
    private let logger: Logger
    private let state = Mutex(State())

    /// - Parameters:
    ///   - configuration: the audience, service account and key source.
    ///   - httpClient: the client to fetch the JWKS with.
    ///   - clock: the clock tokens' times and the JWKS refresh interval are judged on.
    ///   - logger: where JWKS fetches and their failures are logged.
    public init(
        configuration: Configuration, httpClient: HTTPClient = .shared, clock: any WallClock = SystemWallClock(),
        logger: Logger = Logger(label: "storekeeper.google.push-auth")
    ) {
        self.configuration = configuration
        self.httpClient = httpClient
        self.clock = clock
        self.logger = logger
    }

    /// How many times the JWKS was fetched (successfully or not).
    public var jwksFetchCount: Int { state.withLock { $0.fetchCount } }

    /// Authenticates a push request by its `Authorization` header value (nil if absent).
    public func authenticate(authorizationHeader: String?) async throws(PushAuthenticationError) -> Identity {
        guard let header = authorizationHeader?.trimmingCharacters(in: .whitespaces), !header.isEmpty else {
            throw PushAuthenticationError(.missingToken, "no Authorization header")
        }
        let scheme = header.prefix(while: { $0 != " " })
        guard scheme.caseInsensitiveCompare("Bearer") == .orderedSame else {
            throw PushAuthenticationError(.missingToken, "the Authorization header is not a Bearer token")
        }
        let token = header.dropFirst(scheme.count).trimmingCharacters(in: .whitespaces)
        guard !token.isEmpty else { throw PushAuthenticationError(.missingToken, "the Bearer token is empty") }
        return try await authenticate(token: token)
    }

    /// Authenticates a push request by its bearer token.
    public func authenticate(token: String) async throws(PushAuthenticationError) -> Identity {
        guard !token.isEmpty else { throw PushAuthenticationError(.missingToken, "the token is empty") }
        guard token.utf8.count <= configuration.maxTokenBytes else {
            throw PushAuthenticationError(
                .malformedToken, "the token is longer than \(configuration.maxTokenBytes) bytes")
        }
        let jwt: CompactJWT
        do {
            jwt = try CompactJWT(parsing: token)
        } catch {
            throw PushAuthenticationError(.malformedToken, "not a compact JWT: \(error.description)")
        }
        guard let algorithm = jwt.algorithm else {
            throw PushAuthenticationError(.malformedToken, "the header has no alg")
        }
        guard algorithm == "RS256" else {
            throw PushAuthenticationError(
                .unsupportedAlgorithm, "alg is \"\(algorithm.prefix(20))\"; only RS256 is accepted")
        }
        guard jwt.header["crit"] == nil else {
            throw PushAuthenticationError(.malformedToken, "the header has critical extensions")
        }
        guard let keyID = jwt.keyID, !keyID.isEmpty else {
            throw PushAuthenticationError(.malformedToken, "the header has no kid")
        }
        let key = try await publicKey(for: keyID)
        guard jwt.hasValidRS256Signature(for: key) else {
            throw PushAuthenticationError(
                .invalidSignature, "the signature does not verify with key \(keyID.prefix(64))")
        }
        return try checkClaims(jwt, keyID: keyID)
    }

    private func checkClaims(_ jwt: CompactJWT, keyID: String) throws(PushAuthenticationError) -> Identity {
        let claims = jwt.claims
        guard let issuer = claims["iss"] as? String, configuration.issuers.contains(issuer) else {
            throw PushAuthenticationError(.wrongIssuer, "iss is not one of \(configuration.issuers.sorted())")
        }
        let audiences: [String] =
            switch claims["aud"] {
            case let single as String: [single]
            case let many as [Any]: many.compactMap { $0 as? String }
            default: []
            }
        // What the token said, not what is expected: the refusal goes back to whoever pushed.
        guard audiences.contains(configuration.audience) else {
            throw PushAuthenticationError(.wrongAudience, "aud \(audiences) is not the configured push audience")
        }
        let email = claims["email"] as? String
        guard let email, email.caseInsensitiveCompare(configuration.serviceAccountEmail) == .orderedSame else {
            throw PushAuthenticationError(
                .wrongEmail, "email \(email ?? "(none)") is not the configured push service account")
        }
        let verified: Bool =
            switch claims["email_verified"] {
            case let flag as Bool: flag
            case let text as String: text == "true"
            default: false
            }
        guard verified else { throw PushAuthenticationError(.emailNotVerified, "email_verified is not true") }
        guard let expiresAt = jwt.numericDate("exp") else {
            throw PushAuthenticationError(.malformedToken, "exp is missing or not a number")
        }
        guard let issuedAt = jwt.numericDate("iat") else {
            throw PushAuthenticationError(.malformedToken, "iat is missing or not a number")
        }
        let now = clock.now()
        let skew = configuration.clockSkew
        guard now.timeIntervalSince(expiresAt) <= skew else {
            throw PushAuthenticationError(.expired, "expired at \(expiresAt) (now \(now), skew \(Int(skew)) s)")
        }
        guard issuedAt.timeIntervalSince(now) <= skew else {
            throw PushAuthenticationError(.issuedInFuture, "issued at \(issuedAt) (now \(now), skew \(Int(skew)) s)")
        }
        if claims["nbf"] != nil {
            guard let notBefore = jwt.numericDate("nbf") else {
                throw PushAuthenticationError(.malformedToken, "nbf is not a number")
            }
            guard notBefore.timeIntervalSince(now) <= skew else {
                throw PushAuthenticationError(.notYetValid, "not valid before \(notBefore) (now \(now))")
            }
        }
        return Identity(
            email: email, audience: configuration.audience, issuer: issuer, subject: claims["sub"] as? String,
            issuedAt: issuedAt, expiresAt: expiresAt, keyID: keyID)
    }

    private enum Lookup {
        case found(_RSA.Signing.PublicKey)
        case wait(Task<Void, Never>)
        case unknown
        case unavailable(String)
    }

    private func publicKey(for keyID: String) async throws(PushAuthenticationError) -> _RSA.Signing.PublicKey {
        let now = clock.now()
        let interval = configuration.jwksRefreshInterval
        let lookup: Lookup = state.withLock { state in
            if let key = state.keys[keyID] { return .found(key) }
            if let fetch = state.fetch { return .wait(fetch) }
            if let last = state.lastFetchAttempt, now >= last, now.timeIntervalSince(last) < interval {
                return state.lastFetchError.map { Lookup.unavailable($0) } ?? Lookup.unknown
            }
            state.lastFetchAttempt = now
            state.fetchCount += 1
            let fetch = Task { await self.fetchKeys() }
            state.fetch = fetch
            return .wait(fetch)
        }
        switch lookup {
        case .found(let key):
            return key
        case .unknown:
            throw PushAuthenticationError(.unknownKey, "no key \(keyID.prefix(64)) in the JWKS")
        case .unavailable(let detail):
            throw PushAuthenticationError(.jwksUnavailable, detail)
        case .wait(let fetch):
            await fetch.value
            let after: Lookup = state.withLock { state in
                if let key = state.keys[keyID] { return .found(key) }
                return state.lastFetchError.map { Lookup.unavailable($0) } ?? Lookup.unknown
            }
            switch after {
            case .found(let key): return key
            case .unavailable(let detail): throw PushAuthenticationError(.jwksUnavailable, detail)
            default: throw PushAuthenticationError(.unknownKey, "no key \(keyID.prefix(64)) in the JWKS")
            }
        }
    }

    private struct JWKS: Decodable {
        struct Key: Decodable {
            var kty: String?
            var kid: String?
            var alg: String?
            var use: String?
            var n: String?
            var e: String?
        }
        var keys: [Key]
    }

    private func fetchKeys() async {
        let result: Result<[String: _RSA.Signing.PublicKey], PushAuthenticationError>
        do {
            result = .success(try await downloadKeys())
        } catch {
            result = .failure(error)
        }
        state.withLock { state in
            state.fetch = nil
            switch result {
            case .success(let keys):
                state.keys = keys
                state.lastFetchError = nil
            case .failure(let error):
                state.lastFetchError = error.detail
            }
        }
        switch result {
        case .success(let keys):
            logger.debug("fetched the JWKS", metadata: ["url": "\(configuration.jwksURL)", "keys": "\(keys.count)"])
        case .failure(let error):
            logger.warning("could not fetch the JWKS", metadata: ["error": "\(error)"])
        }
    }

    private func downloadKeys() async throws(PushAuthenticationError) -> [String: _RSA.Signing.PublicKey] {
        var request = HTTPClientRequest(url: configuration.jwksURL)
        request.headers.add(name: "Accept", value: "application/json")
        let status: UInt
        let data: Data
        do {
            let response = try await httpClient.execute(request, timeout: configuration.jwksRequestTimeout)
            status = response.status.code
            data = Data(try await response.body.collect(upTo: configuration.maxJWKSBytes).readableBytesView)
        } catch {
            throw PushAuthenticationError(
                .jwksUnavailable, "could not fetch the JWKS from \(configuration.jwksURL): \(error)")
        }
        guard status == 200 else {
            throw PushAuthenticationError(.jwksUnavailable, "the JWKS endpoint answered HTTP \(status)")
        }
        guard let jwks = try? JSONDecoder().decode(JWKS.self, from: data) else {
            throw PushAuthenticationError(.jwksUnavailable, "the JWKS is not a JSON object with keys")
        }
        var keys: [String: _RSA.Signing.PublicKey] = [:]
        for entry in jwks.keys {
            guard entry.kty == "RSA", entry.use == nil || entry.use == "sig",
                entry.alg == nil || entry.alg == "RS256",
                let kid = entry.kid, let n = entry.n.flatMap({ Base64URL.decode($0) }),
                let e = entry.e.flatMap({ Base64URL.decode($0) }),
                let key = try? _RSA.Signing.PublicKey(n: n, e: e)
            else { continue }
            keys[kid] = key
        }
        return keys
    }
}

/// Why a Pub/Sub push request was not authenticated: one reason per check. Never contains the token.
public typealias PushAuthenticationError = CheckFailure<PushAuthenticationErrorReason>

/// The check that failed.
public enum PushAuthenticationErrorReason: String, FailureReason, CaseIterable {
    /// No `Authorization: Bearer` token.
    case missingToken = "missing-token"
    /// Not a well-formed compact JWT (or too long, or lacking `kid`, `exp`, `iat`).
    case malformedToken = "malformed-token"
    /// The header's `alg` is not `RS256` (`none`, `HS256`, …).
    case unsupportedAlgorithm = "unsupported-algorithm"
    /// The `kid` is not in the JWKS, even after a refresh (or a refresh was not yet allowed).
    case unknownKey = "unknown-key"
    /// The signature does not verify with the key named by `kid`.
    case invalidSignature = "invalid-signature"
    /// `iss` is not Google's.
    case wrongIssuer = "wrong-issuer"
    /// `aud` is not the configured audience.
    case wrongAudience = "wrong-audience"
    /// `email` is not the configured push service account.
    case wrongEmail = "wrong-email"
    /// `email_verified` is not true.
    case emailNotVerified = "email-not-verified"
    /// `exp` is past (beyond the skew).
    case expired
    /// `nbf` is in the future (beyond the skew).
    case notYetValid = "not-yet-valid"
    /// `iat` is in the future (beyond the skew).
    case issuedInFuture = "issued-in-future"
    /// The JWKS could not be fetched. Retryable: the token may well be genuine.
    case jwksUnavailable = "jwks-unavailable"
}

extension CheckFailure where R == PushAuthenticationErrorReason {
    /// Whether the push may succeed later (answer 5xx so Pub/Sub retries): only a JWKS outage.
    public var isRetryable: Bool { reason == .jwksUnavailable }
}
