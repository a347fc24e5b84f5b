public import AppStoreServer
public import AsyncHTTPClient
public import Foundation
public import StoreCore

/// The configured App Store apps, ready to verify and to call the API: one verifier (and, with an
/// API key, one client) per app and accepted environment.
public struct AppStoreApps: Sendable {
    public struct App: Sendable {
        public let name: String
        public let configuration: AppStoreAppConfiguration
        public let verifiers: [String: SignedDataVerifier]
        public let clients: [String: AppStoreServerAPIClient]
    }

    public let apps: [App]

    public init(configuration: StorekeeperConfiguration, clock: any WallClock, httpClient: HTTPClient) throws {
        var apps: [App] = []
        for app in configuration.apps {
            guard let settings = app.appStore else { continue }
            let roots = try TrustedRoots(
                appleRootFiles: settings.appleRootFiles, allowedRootFiles: settings.allowedRootFiles)
            var tokenProvider: AppStoreServerAPITokenProvider?
            if let keyID = settings.keyID, let issuerID = settings.issuerID, let path = settings.privateKeyPath {
                let key = try AppStoreSigningKey(contentsOfFile: path, keyId: keyID)
                tokenProvider = try AppStoreServerAPITokenProvider(
                    key: key, issuerId: issuerID, bundleId: settings.bundleID, clock: clock
                )
            }
            var verifiers: [String: SignedDataVerifier] = [:]
            var clients: [String: AppStoreServerAPIClient] = [:]
            for environment in settings.environments {
                let verifier = try SignedDataVerifier(
                    configuration: SignedDataVerifier.Configuration(
                        trustedRoots: roots, bundleId: settings.bundleID, appAppleId: settings.appAppleID,
                        environment: Environment(rawValue: environment)
                    ),
                    clock: clock
                )
                verifiers[environment] = verifier
                guard let tokenProvider else { continue }
                let baseURL =
                    environment == "Sandbox"
                    ? settings.sandboxAPIBaseURL ?? settings.apiBaseURL
                        ?? AppStoreServerAPIClient.Configuration.sandboxBaseURL
                    : settings.apiBaseURL ?? AppStoreServerAPIClient.Configuration.productionBaseURL
                clients[environment] = AppStoreServerAPIClient(
                    configuration: .init(baseURL: baseURL), authorization: tokenProvider, verifier: verifier,
                    httpClient: httpClient
                )
            }
            apps.append(App(name: app.name, configuration: settings, verifiers: verifiers, clients: clients))
        }
        self.apps = apps
    }

    /// The verifier for a signed payload, chosen by the bundle id and environment it claims (the
    /// verifier then checks both). Throws a specific error when no configured app matches.
    public func verifier(for jws: String) throws(ProcessingError) -> (App, SignedDataVerifier) {
        let claims = UnverifiedClaims(jws: jws)
        guard let bundleID = claims.bundleID, let app = apps.first(where: { $0.configuration.bundleID == bundleID })
        else {
            if apps.count == 1, let only = apps.first,
                let verifier = only.configuration.environments.lazy.compactMap({ only.verifiers[$0] }).first
            {
                // Let the verifier explain what is wrong with the payload.
                return (only, verifier)
            }
            throw ProcessingError(
                .unknownApp, "no configured App Store app has bundle id \(claims.bundleID ?? "(none)")")
        }
        let environment = claims.environment ?? "Production"
        guard let verifier = app.verifiers[environment] else {
            throw ProcessingError(
                .environmentNotAccepted, "app \(app.name) does not accept \(environment) payloads"
            )
        }
        return (app, verifier)
    }

    /// The API client for an app and environment.
    public func client(bundleID: String?, environment: String) throws(ProcessingError) -> AppStoreServerAPIClient {
        guard let app = apps.first(where: { bundleID == nil || $0.configuration.bundleID == bundleID }) else {
            throw ProcessingError(.unknownApp, "no configured App Store app has bundle id \(bundleID ?? "(none)")")
        }
        guard let client = app.clients[environment] else {
            throw ProcessingError(
                .notConfigured, "app \(app.name) has no App Store Server API key for \(environment)"
            )
        }
        return client
    }
}

/// The bundle id and environment a JWS claims, read without verification — only to pick the
/// verifier that then checks them.
struct UnverifiedClaims {
    var bundleID: String?
    var environment: String?

    private struct Payload: Decodable {
        struct Data: Decodable {
            var bundleId: String?
            var environment: String?
        }

        var bundleId: String?
        var environment: String?
        var data: Data?
    }

    init(jws: String) {
        let parts = jws.split(separator: ".", maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = Base64URL.decode(parts[1]),
            let payload = try? JSONDecoder().decode(Payload.self, from: bytes)
        else { return }
        bundleID = payload.data?.bundleId ?? payload.bundleId
        environment = payload.data?.environment ?? payload.environment
    }
}
