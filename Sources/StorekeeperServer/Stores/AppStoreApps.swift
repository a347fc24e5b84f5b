public import AppStoreServer
public import AsyncHTTPClient
import Foundation
public import StoreCore
public import Storekeeper

/// The configured App Store apps, each with one verifier per accepted environment (each
/// expecting its own bundle id, environment and — in Production — app Apple id) and, with an API
/// key, one App Store Server API client per environment, at that environment's host.
public struct AppStoreApps: Sendable, ConfiguredStoreApps {
    static let storeName = "App Store"
    static let appField = "bundleId"

    public struct App: Sendable, ConfiguredStoreApp {
        public let name: String
        public let configuration: AppStoreAppConfiguration
        public let verifiers: [PurchaseEnvironment: SignedDataVerifier]
        public let clients: [PurchaseEnvironment: AppStoreServerAPIClient]

        public var id: AppID { AppID(configuration.bundleID) }
    }

    public let apps: [App]

    /// Each app's API client asks its quota (scope `app-store:<bundleId>:<environment>`) before
    /// every call.
    public init(
        configuration: StorekeeperConfiguration, clock: any WallClock, httpClient: HTTPClient,
        quotas: StoreQuotas = .inProcess
    ) throws {
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
            var verifiers: [PurchaseEnvironment: SignedDataVerifier] = [:]
            var clients: [PurchaseEnvironment: AppStoreServerAPIClient] = [:]
            for environment in settings.environments {
                let verifier = try SignedDataVerifier(
                    configuration: SignedDataVerifier.Configuration(
                        trustedRoots: roots, bundleId: settings.bundleID, appAppleId: settings.appAppleID,
                        environment: AppStoreFacts.environment(environment)
                    ),
                    clock: clock
                )
                verifiers[environment] = verifier
                guard let tokenProvider else { continue }
                let quota = quotas.quota(
                    scope: "app-store:\(settings.bundleID):\(environment.rawValue)",
                    limits: configuration.quotas.appStore)
                clients[environment] = AppStoreServerAPIClient(
                    configuration: .init(baseURL: settings.apiBaseURL(for: environment), quota: quota),
                    authorization: tokenProvider, verifier: verifier, httpClient: httpClient
                )
            }
            apps.append(App(name: app.name, configuration: settings, verifiers: verifiers, clients: clients))
        }
        self.apps = apps
    }

    /// The verifier for a payload claiming `identity`: its app's, for its environment.
    public func verifier(for identity: ClaimedAppIdentity) throws(ServerError) -> SignedDataVerifier {
        guard let bundleID = identity.claimedBundleId else {
            throw ServerError(.malformedPayload, "the signed payload names no bundle id")
        }
        let app = try app(AppID(bundleID))
        guard let environment = AppStoreFacts.environment(identity.claimedEnvironment),
            let verifier = app.verifiers[environment]
        else {
            throw ServerError(
                .environmentNotAccepted,
                "app \(app.name) does not accept \(identity.claimedEnvironment?.rawValue ?? "unnamed") environment payloads"
            )
        }
        return verifier
    }

    /// The verifier for the app and environment `unverified` claims (``verifier(for:)``). When no
    /// configured one matches the claim, the token is first checked by another verifier: a token
    /// whose chain or signature fails gets that failure, as it would from a configured app, and
    /// only one Apple signed learns that its app (`unknown-app`) or environment
    /// (`environment-not-accepted`) is not configured. Otherwise anyone could ask which bundle ids
    /// are, with a payload signed by nobody.
    func verifier<Payload: SignedPayload>(for unverified: UnverifiedSignedData<Payload>) async throws
        -> SignedDataVerifier
    {
        let identity = try unverified.claimedIdentity()
        do {
            return try verifier(for: identity)
        } catch let refusal where [.unknownApp, .environmentNotAccepted].contains(refusal.code) {
            guard let other = apps.lazy.flatMap({ $0.verifiers.values }).first else { throw refusal }
            do {
                _ = try await other.verifyKeepingJSON(unverified)
            } catch let mismatch
                where [.bundleIdMismatch, .appAppleIdMismatch, .environmentMismatch].contains(mismatch.reason)
            {
                // Signed by Apple, for an app or environment this verifier does not expect either.
            }
            throw refusal
        }
    }

    /// `token` verified by the verifier of the app and environment it claims (``verifier(for:)``),
    /// its payload decoded once for both (``UnverifiedSignedData``). Throws `ServerError` when no
    /// configured verifier matches the claim, `SignedDataVerificationError` when it doesn't verify.
    func verify<Payload: SignedPayload>(_ token: String, as payloadType: Payload.Type) async throws -> Payload {
        let unverified = try UnverifiedSignedData(parsing: token, as: payloadType)
        return try await verifier(for: unverified).verifyKeepingJSON(unverified).payload
    }

    /// The API client of an app in an environment.
    public func client(_ id: AppID, _ environment: PurchaseEnvironment) throws(ServerError)
        -> AppStoreServerAPIClient
    {
        let app = try app(id)
        guard let client = app.clients[environment] else {
            throw ServerError(
                .notConfigured, "app \(app.name) has no App Store Server API key for \(environment)")
        }
        return client
    }
}

extension AppStoreAppConfiguration {
    /// The App Store Server API's base URL for an environment: Apple's own host unless overridden.
    public func apiBaseURL(for environment: PurchaseEnvironment) -> String {
        switch environment {
        case .production: apiBaseURL ?? AppStoreServerAPIClient.Configuration.productionBaseURL
        case .sandbox: sandboxAPIBaseURL ?? AppStoreServerAPIClient.Configuration.sandboxBaseURL
        }
    }
}
