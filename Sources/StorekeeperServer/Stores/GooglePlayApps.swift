public import AsyncHTTPClient
import Foundation
public import GooglePlay
public import Logging
public import StoreCore
public import Storekeeper

/// The configured Google Play apps, ready to authenticate pushes and to call the Android
/// Publisher API: one push authenticator and (with a service-account key) one client per package.
/// Clients of apps whose service accounts belong to one Google Cloud project share one quota
/// (scope `google-play:<project>`), as Google counts quota per project.
public struct GooglePlayApps: Sendable, ConfiguredStoreApps {
    static let storeName = "Google Play"
    static let appField = "packageName"

    public struct App: Sendable, ConfiguredStoreApp {
        public let name: String
        public let configuration: GooglePlayAppConfiguration
        public let client: AndroidPublisherClient?
        public let pushAuthenticator: PushAuthenticator?

        public var id: AppID { AppID(configuration.packageName) }
    }

    public let apps: [App]

    public init(
        configuration: StorekeeperConfiguration, clock: any WallClock, httpClient: HTTPClient, logger: Logger,
        quotas makeQuota: StoreQuotas = .inProcess, userAgent: String? = nil
    ) throws {
        var apps: [App] = []
        var quotas: [String: any RequestQuota] = [:]
        for app in configuration.apps {
            guard let settings = app.googlePlay else { continue }
            var client: AndroidPublisherClient?
            if let path = settings.serviceAccountKeyPath {
                let key = try ServiceAccountKey(contentsOfFile: path)
                let project = Self.quotaProject(of: key)
                let scope = "google-play:\(project)"
                let quota = quotas[scope] ?? makeQuota.quota(scope: scope, limits: configuration.quotas.googlePlay)
                quotas[scope] = quota
                let tokens = ServiceAccountTokenProvider(key: key, httpClient: httpClient, clock: clock, logger: logger)
                client = AndroidPublisherClient(
                    configuration: .init(
                        baseURL: settings.apiBaseURL ?? AndroidPublisherClient.Configuration.googleBaseURL,
                        quota: quota, userAgent: userAgent),
                    tokens: tokens, httpClient: httpClient)
            }
            var authenticator: PushAuthenticator?
            if let audience = settings.pushAudience, let email = settings.pushServiceAccount {
                authenticator = PushAuthenticator(
                    configuration: .init(
                        audience: audience, serviceAccountEmail: email,
                        jwksURL: settings.jwksURL ?? PushAuthenticator.Configuration.googleJWKSURL),
                    httpClient: httpClient, clock: clock, logger: logger)
            }
            apps.append(App(name: app.name, configuration: settings, client: client, pushAuthenticator: authenticator))
        }
        self.apps = apps
    }

    /// The Google Cloud project a service account's calls count against: its `project_id`, or
    /// (a key file without one) the project named in its e-mail address
    /// (`name@PROJECT.iam.gserviceaccount.com`).
    static func quotaProject(of key: ServiceAccountKey) -> String {
        if let project = key.projectID, !project.isEmpty { return project }
        let domain = key.clientEmail.split(separator: "@").last.map(String.init) ?? key.clientEmail
        return domain.split(separator: ".").first.map(String.init) ?? domain
    }

    /// The API client of the app with this package name.
    public func client(_ id: AppID) throws(ServerError) -> AndroidPublisherClient {
        let app = try app(id)
        guard let client = app.client else {
            throw ServerError(.notConfigured, "app \(app.name) has no Google Play service-account key")
        }
        return client
    }
}
