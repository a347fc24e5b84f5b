public import AsyncHTTPClient
public import Foundation
public import GooglePlay
public import Logging
public import StoreCore

/// The configured Google Play apps, ready to authenticate pushes and to call the Android
/// Publisher API: one push authenticator and (with a service-account key) one client per package.
public struct GooglePlayApps: Sendable {
    public struct App: Sendable {
        public let name: String
        public let configuration: GooglePlayAppConfiguration
        public let client: AndroidPublisherClient?
        public let pushAuthenticator: PushAuthenticator?
    }

    public let apps: [App]

    public init(
        configuration: StorekeeperConfiguration, clock: any WallClock, httpClient: HTTPClient, logger: Logger
    ) throws {
        var apps: [App] = []
        for app in configuration.apps {
            guard let settings = app.googlePlay else { continue }
            var client: AndroidPublisherClient?
            if let path = settings.serviceAccountKeyPath {
                let key = try ServiceAccountKey(contentsOfFile: path)
                let tokens = ServiceAccountTokenProvider(key: key, httpClient: httpClient, clock: clock, logger: logger)
                client = AndroidPublisherClient(
                    configuration: .init(
                        baseURL: settings.apiBaseURL ?? AndroidPublisherClient.Configuration.googleBaseURL),
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

    /// The app with this package name.
    public func app(packageName: String?) throws(ProcessingError) -> App {
        guard let app = apps.first(where: { packageName == nil || $0.configuration.packageName == packageName })
        else {
            throw ProcessingError(
                .unknownApp, "no configured Google Play app has package name \(packageName ?? "(none)")")
        }
        return app
    }

    /// The API client of the app with this package name.
    public func client(packageName: String?) throws(ProcessingError) -> (App, AndroidPublisherClient) {
        let app = try app(packageName: packageName)
        guard let client = app.client else {
            throw ProcessingError(.notConfigured, "app \(app.name) has no Google Play service-account key")
        }
        return (app, client)
    }
}
