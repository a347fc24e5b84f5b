public import AsyncHTTPClient
public import Foundation
public import Logging
public import NIOCore
import Synchronization

/// OAuth 2.0 access tokens for a service account ("Using OAuth 2.0 for Server to Server
/// Applications"): signs an RS256 assertion JWT with the account's key, exchanges it at the key's
/// `token_uri` with the `urn:ietf:params:oauth:grant-type:jwt-bearer` grant, and caches the token.
///
/// The cached token is refreshed ``Configuration/refreshMargin`` before it expires. However many
/// callers ask at once, at most one exchange is in flight; the others await its result. Tokens and
/// assertions never appear in errors or logs.
public final class ServiceAccountTokenProvider: Sendable {
    /// How tokens are requested and cached.
    public struct Configuration: Sendable {
        /// The OAuth scope(s) to request, space-separated.
        public var scope: String
        /// How long before expiry a token is replaced (capped at half the token's lifetime).
        public var refreshMargin: TimeInterval
        /// The assertion's lifetime, `exp - iat`; Google allows at most one hour.
        public var assertionLifetime: TimeInterval
        /// How long one token request may take.
        public var requestTimeout: TimeAmount
        /// The largest token response accepted.
        public var maxResponseBytes: Int

        /// The Android Publisher API scope.
        public static let androidPublisherScope = "https://www.googleapis.com/auth/androidpublisher"

        /// Creates a configuration; the defaults suit the Android Publisher API.
        public init(
            scope: String = Configuration.androidPublisherScope, refreshMargin: TimeInterval = 300,
            assertionLifetime: TimeInterval = 3600, requestTimeout: TimeAmount = .seconds(10),
            maxResponseBytes: Int = 64 * 1024
        ) {
            self.scope = scope
            self.refreshMargin = max(0, refreshMargin)
            self.assertionLifetime = min(3600, max(1, assertionLifetime))
            self.requestTimeout = requestTimeout
            self.maxResponseBytes = maxResponseBytes
        }
    }

    struct Token: Sendable {
        var value: String
        var expiresAt: Date
        var refreshAt: Date
    }

    struct State {
        var token: Token?
        var refresh: Task<Token, any Error>?
        var refreshGeneration = 0
    }

    /// The service account whose tokens this provides.
    public let key: ServiceAccountKey
    /// How tokens are requested and cached.
    public let configuration: Configuration
    private let httpClient: HTTPClient
    private let clock: any WallClock
    private let logger: Logger
    private let state = Mutex(State())

    /// - Parameters:
    ///   - key: the service account's JSON key.
    ///   - configuration: scope, refresh margin, timeouts.
    ///   - httpClient: the client to reach the token endpoint with.
    ///   - clock: the clock expiry is judged on (injected in tests).
    ///   - logger: where refreshes are logged (at debug level, never with tokens).
    public init(
        key: ServiceAccountKey, configuration: Configuration = Configuration(), httpClient: HTTPClient = .shared,
        clock: any WallClock = SystemWallClock(), logger: Logger = Logger(label: "storekeeper.google.auth")
    ) {
        self.key = key
        self.configuration = configuration
        self.httpClient = httpClient
        self.clock = clock
        self.logger = logger
    }

    private enum Next {
        case cached(String)
        case await(Task<Token, any Error>, fallback: Token?)
    }

    /// A valid access token: the cached one, or a new one if it is missing or due for refresh.
    ///
    /// If a refresh fails while the cached token has not yet expired, the cached token is returned.
    public func accessToken() async throws -> String {
        let now = clock.now()
        let next: Next = state.withLock { state in
            if let token = state.token, now < token.refreshAt { return .cached(token.value) }
            let fallback = state.token.flatMap { now < $0.expiresAt ? $0 : nil }
            if let refresh = state.refresh { return .await(refresh, fallback: fallback) }
            state.refreshGeneration += 1
            let generation = state.refreshGeneration
            let task = Task { try await self.refresh(generation: generation) }
            state.refresh = task
            return .await(task, fallback: fallback)
        }
        switch next {
        case .cached(let value):
            return value
        case .await(let task, let fallback):
            do {
                return try await task.value.value
            } catch {
                if let fallback, clock.now() < fallback.expiresAt { return fallback.value }
                throw error
            }
        }
    }

    /// Drops the cached token so the next call fetches a new one (after an API answered 401).
    ///
    /// - Parameter token: the token that was refused; if given, the cache is dropped only if it
    ///   still holds that token, so many callers refused at once cause one refresh, not many.
    public func invalidate(_ token: String? = nil) {
        state.withLock { state in
            guard let cached = state.token else { return }
            if token == nil || token == cached.value { state.token = nil }
        }
    }

    /// Calls `send` with an access token; if `isUnauthorized` says the answer was a 401, drops the
    /// token, gets a new one and calls `send` once more, returning that second answer whatever it is.
    public nonisolated(nonsending) func withAuthorization<Result>(
        isUnauthorized: (Result) -> Bool,
        _ send: (_ accessToken: String) async throws -> Result
    ) async throws -> Result {
        let token = try await accessToken()
        let first = try await send(token)
        guard isUnauthorized(first) else { return first }
        logger.debug("access token refused; refreshing once", metadata: ["account": "\(key.clientEmail)"])
        invalidate(token)
        return try await send(try await accessToken())
    }

    /// Executes `request` with `Authorization: Bearer <token>`; on a 401, discards that answer,
    /// refreshes the token once and sends the request again. The request's body must be replayable
    /// (bytes, not a one-shot stream).
    ///
    /// `beforeSending` runs right before each request goes out, after the token is at hand (a
    /// rate limiter waits there, so it spaces what reaches the server, not what waits for a token).
    public func execute(
        _ request: HTTPClientRequest, timeout: TimeAmount, beforeSending: (() async throws -> Void)? = nil
    ) async throws -> HTTPClientResponse {
        let send: (String) async throws -> HTTPClientResponse = { token in
            try await beforeSending?()
            var authorized = request
            authorized.headers.replaceOrAdd(name: "Authorization", value: "Bearer " + token)
            let response = try await self.httpClient.execute(authorized, timeout: timeout)
            if response.status == .unauthorized {
                _ = try? await response.body.collect(upTo: self.configuration.maxResponseBytes)
            }
            return response
        }
        return try await withAuthorization(isUnauthorized: { $0.status == .unauthorized }, send)
    }

    private func refresh(generation: Int) async throws -> Token {
        do {
            let token = try await fetch()
            state.withLock { state in
                state.token = token
                if state.refreshGeneration == generation { state.refresh = nil }
            }
            return token
        } catch {
            state.withLock { state in
                if state.refreshGeneration == generation { state.refresh = nil }
            }
            throw error
        }
    }

    private struct TokenResponse: Decodable {
        var access_token: String?
        var expires_in: Double?
        var token_type: String?
    }

    private struct OAuthErrorResponse: Decodable {
        var error: String?
        var error_description: String?
    }

    /// The signed assertion for a token request issued at `now`.
    func assertion(issuedAt now: Date) throws(ServiceAccountTokenError) -> String {
        let issuedAt = Int(now.timeIntervalSince1970.rounded(.down))
        let header: [String: Any] = ["alg": "RS256", "typ": "JWT", "kid": key.privateKeyID]
        let claims: [String: Any] = [
            "iss": key.clientEmail, "scope": configuration.scope, "aud": key.tokenURI,
            "iat": issuedAt, "exp": issuedAt + Int(configuration.assertionLifetime),
        ]
        do {
            return try CompactJWT.signRS256(header: header, claims: claims, key: key.privateKey)
        } catch {
            throw ServiceAccountTokenError(.signingFailed, "could not sign the assertion")
        }
    }

    private func fetch() async throws(ServiceAccountTokenError) -> Token {
        let requestedAt = clock.now()
        let body = FormURLEncoding.encode([
            ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
            ("assertion", try assertion(issuedAt: requestedAt)),
        ])
        var request = HTTPClientRequest(url: key.tokenURI)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.headers.add(name: "Accept", value: "application/json")
        request.body = .bytes(ByteBuffer(string: body))
        let status: Int
        let data: Data
        do {
            let response = try await httpClient.execute(request, timeout: configuration.requestTimeout)
            status = Int(response.status.code)
            data = Data(try await response.body.collect(upTo: configuration.maxResponseBytes).readableBytesView)
        } catch {
            throw ServiceAccountTokenError(
                .networkFailure, "could not reach the token endpoint \(key.tokenURI): \(error)")
        }
        guard status == 200 else {
            let oauth = try? JSONDecoder().decode(OAuthErrorResponse.self, from: data)
            guard let code = oauth?.error else {
                throw ServiceAccountTokenError(
                    .unexpectedResponse, "the token endpoint answered HTTP \(status) without an OAuth error",
                    status: status)
            }
            let description = oauth?.error_description.map { ": " + $0.prefix(200) } ?? ""
            throw ServiceAccountTokenError(
                .tokenEndpointError, "the token endpoint answered HTTP \(status) \(code.prefix(64))\(description)",
                status: status, oauthError: String(code.prefix(64)))
        }
        guard let response = try? JSONDecoder().decode(TokenResponse.self, from: data),
            let value = response.access_token, !value.isEmpty,
            let lifetime = response.expires_in, lifetime.isFinite, lifetime > 0
        else {
            throw ServiceAccountTokenError(
                .unexpectedResponse, "the token response lacks access_token or a positive expires_in", status: status)
        }
        guard response.token_type.map({ $0.caseInsensitiveCompare("Bearer") == .orderedSame }) ?? true else {
            throw ServiceAccountTokenError(.unexpectedResponse, "the token type is not Bearer", status: status)
        }
        let expiresAt = requestedAt.addingTimeInterval(lifetime)
        let margin = min(configuration.refreshMargin, lifetime / 2)
        logger.debug(
            "fetched an access token", metadata: ["account": "\(key.clientEmail)", "expires_in": "\(lifetime)"])
        return Token(value: value, expiresAt: expiresAt, refreshAt: expiresAt.addingTimeInterval(-margin))
    }
}

/// Why an access token could not be obtained. Never contains the assertion, the key or a token.
public struct ServiceAccountTokenError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Reason: String, Hashable, Sendable, CaseIterable {
        /// The assertion could not be signed with the key.
        case signingFailed = "signing-failed"
        /// The token endpoint could not be reached, or the answer was cut off (retryable).
        case networkFailure = "network-failure"
        /// The token endpoint refused with an OAuth error body (`error`, `error_description`).
        case tokenEndpointError = "token-endpoint-error"
        /// The token endpoint answered something that is neither a token nor an OAuth error.
        case unexpectedResponse = "unexpected-response"
    }

    /// What went wrong.
    public var reason: Reason
    /// A one-line explanation.
    public var detail: String
    /// The token endpoint's HTTP status, if it answered.
    public var status: Int?
    /// The OAuth `error` code (`invalid_grant`, `invalid_client`, …), if the endpoint sent one.
    public var oauthError: String?

    /// Creates an error.
    public init(_ reason: Reason, _ detail: String, status: Int? = nil, oauthError: String? = nil) {
        self.reason = reason
        self.detail = detail
        self.status = status
        self.oauthError = oauthError
    }

    /// Whether trying again later may succeed: network failures, 429 and 5xx answers.
    public var isRetryable: Bool {
        if reason == .networkFailure { return true }
        guard let status else { return false }
        return status == 429 || status >= 500
    }

    /// `reason: detail`.
    public var description: String { "\(reason.rawValue): \(detail)" }
}
