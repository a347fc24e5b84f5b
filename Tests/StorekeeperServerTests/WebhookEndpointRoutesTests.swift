import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import StoreSimulator
import Storekeeper
import StorekeeperServer
import StorekeeperStorage
import TestSupport
import Testing

/// Webhook endpoints managed through the API (docs/events.md, "Endpoints through the API"), through
/// Hummingbird's router test client on a real application, on both backends: create, show, update,
/// delete, secret rotation, the errors for bad input (nothing written), configured endpoints being
/// read-only, the `secret` key alone managing them, and another instance on the same database
/// seeing every change.
@Suite struct WebhookEndpointRoutesTests {
    static let secretKey = "secret-key-for-webhook-tests"
    static let readOnlyKey = "read-only-key-for-webhook-tests"
    static let gatewayKey = "gateway-key-for-webhook-tests"
    static let configuredSecret = "whsec_configured_0123456789"
    static let start = Date(timeIntervalSince1970: 1_767_225_600)

    static func configuration(storageURL: String) throws -> StorekeeperConfiguration {
        var configuration = StorekeeperConfiguration(
            storageURL: storageURL,
            apiKeys: [
                ConfiguredAPIKey(name: "backend", scope: .secret, secret: secretKey),
                ConfiguredAPIKey(name: "dashboard", scope: .readOnly, secret: readOnlyKey),
                ConfiguredAPIKey(name: "gateway", scope: .appGateway, secret: gatewayKey),
            ],
            apps: [], catalog: Catalog([]))
        configuration.webhooks = WebhookSettings(
            endpoints: [
                try WebhookEndpoint(
                    name: "configured", url: URL(string: "http://127.0.0.1:9/hook")!,
                    secrets: [try WebhookSecret(configuredSecret)])
            ], pollInterval: 3_600)
        return configuration
    }

    /// An application on its own storage of the database at `url`.
    static func withApplication(
        _ url: String, clock: ManualClock, _ body: (StorekeeperApplication) async throws -> Void
    ) async throws {
        let storage = try await StorageFactory.open(url, logger: TemporaryStorage.quietLogger)
        do {
            try await storage.migrate()
            try await body(
                try StorekeeperApplication(
                    configuration: try configuration(storageURL: url), storage: storage, clock: clock,
                    logger: TemporaryStorage.quietLogger))
        } catch {
            try? await storage.close()
            throw error
        }
        try await storage.close()
    }

    static func withRouter(
        _ backend: StorageBackend,
        _ body: @Sendable (any TestClientProtocol, StorekeeperApplication, String) async throws -> Void
    ) async throws {
        try await backend.withFreshDatabase { url in
            try await withApplication(url, clock: ManualClock(start)) { application in
                let app = Application(router: application.makeRouter(), logger: TemporaryStorage.quietLogger)
                try await app.test(.router) { client in try await body(client, application, url) }
            }
        }
    }

    struct Answer {
        var status: HTTPResponse.Status
        var text: String
        var json: [String: Any]
        var code: String? { (json["error"] as? [String: Any])?["code"] as? String }
        var webhook: [String: Any] { json["webhook"] as? [String: Any] ?? [:] }
        var secret: [String: Any] { json["secret"] as? [String: Any] ?? [:] }
    }

    static func call(
        _ client: any TestClientProtocol, _ method: HTTPRequest.Method, _ uri: String, _ json: String? = nil,
        key: String = secretKey
    ) async throws -> Answer {
        try await client.execute(
            uri: uri, method: method, headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
            body: json.map { ByteBuffer(string: $0) }
        ) { response in
            let text = String(buffer: response.body)
            let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
            return Answer(status: response.status, text: text, json: object)
        }
    }

    /// Checks an error answer: its code, the status that goes with it, and that it echoes no secret.
    static func expectError(
        _ answer: Answer, _ code: ErrorCode, notContaining secret: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(answer.code == code.rawValue, "\(answer.text)", sourceLocation: sourceLocation)
        #expect(answer.status == code.status, "\(answer.text)", sourceLocation: sourceLocation)
        if let secret {
            #expect(!answer.text.contains(secret), "an error echoed the secret", sourceLocation: sourceLocation)
        }
    }

    static func names(_ client: any TestClientProtocol) async throws -> [String] {
        let list = try await call(client, .get, "/v1/webhooks")
        return (list.json["webhooks"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
    }

    @Test(arguments: StorageBackend.available) func createShowUpdateAndDelete(_ backend: StorageBackend) async throws {
        try await Self.withRouter(backend) { client, application, _ in
            let created = try await Self.call(
                client, .post, "/v1/webhooks",
                #"{"name": "crm", "url": "https://crm.example.com/hooks?token=abc", "events": ["purchase.started"], "environments": ["production"]}"#
            )
            #expect(created.status == .created, "\(created.text)")
            let value = try #require(created.secret["value"] as? String)
            let secretID = try #require(created.secret["id"] as? String)
            #expect(value.hasPrefix("whsec_") && value.count == 6 + 64)
            #expect(created.webhook["name"] as? String == "crm")
            #expect(created.webhook["source"] as? String == "api")
            #expect(created.webhook["enabled"] as? Bool == true)
            #expect(created.webhook["events"] as? [String] == ["purchase.started"])
            #expect(created.webhook["environments"] as? [String] == ["production"])
            // The query, which may hold a token, is not shown.
            #expect(created.webhook["url"] as? String == "https://crm.example.com/hooks?***")

            let shown = try await Self.call(client, .get, "/v1/webhooks/crm")
            #expect(shown.status == .ok)
            #expect((shown.webhook["secretIds"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [secretID])
            #expect(!shown.text.contains(value))
            let listed = try await Self.call(client, .get, "/v1/webhooks")
            #expect(try await Self.names(client) == ["configured", "crm"])
            #expect(!listed.text.contains(value))
            let configured = try await Self.call(client, .get, "/v1/webhooks/configured")
            #expect(configured.webhook["source"] as? String == "configuration")

            let updated = try await Self.call(
                client, .patch, "/v1/webhooks/crm",
                #"{"url": "http://crm.internal:8080/in", "events": [], "environments": ["sandbox"], "enabled": false}"#)
            #expect(updated.status == .ok, "\(updated.text)")
            #expect(updated.webhook["url"] as? String == "http://crm.internal:8080/in")
            #expect(updated.webhook["events"] as? [String] == [])
            #expect(updated.webhook["environments"] as? [String] == ["sandbox"])
            #expect(updated.webhook["enabled"] as? Bool == false)
            let record = try #require(try await application.webhookEndpoints.record(named: "crm"))
            #expect(record.url.absoluteString == "http://crm.internal:8080/in" && !record.enabled)
            #expect(record.secrets.map(\.value) == [value])

            let deleted = try await Self.call(client, .delete, "/v1/webhooks/crm")
            #expect(deleted.status == .noContent)
            Self.expectError(try await Self.call(client, .get, "/v1/webhooks/crm"), .webhookNotFound)
            Self.expectError(try await Self.call(client, .delete, "/v1/webhooks/crm"), .webhookNotFound)
            #expect(try await Self.names(client) == ["configured"])
            // The name is free again.
            let again = try await Self.call(
                client, .post, "/v1/webhooks", #"{"name": "crm", "url": "https://crm.example.com/hooks"}"#)
            #expect(again.status == .created)
        }
    }

    @Test(arguments: StorageBackend.available) func badInputGetsASpecificErrorAndWritesNothing(
        _ backend: StorageBackend
    ) async throws {
        try await Self.withRouter(backend) { client, application, _ in
            let short = "whsec_short"
            let cases: [(String, ErrorCode)] = [
                (#"{"name": "a", "url": "ftp://example.com/in"}"#, .invalidWebhookURL),
                (#"{"name": "a", "url": "mailto:someone@example.com"}"#, .invalidWebhookURL),
                (#"{"name": "a", "url": "https://"}"#, .invalidWebhookURL),
                (#"{"name": "a", "url": "https://example.com", "events": ["subscription.renewd"]}"#, .unknownEventType),
                (#"{"name": "a", "url": "https://example.com", "environments": ["staging"]}"#, .unknownEnvironment),
                (#"{"name": "a", "url": "https://example.com", "secret": ""}"#, .invalidWebhookSecret),
                (#"{"name": "a", "url": "https://example.com", "secret": "\#(short)"}"#, .invalidWebhookSecret),
                (#"{"name": "", "url": "https://example.com"}"#, .invalidWebhookName),
                (#"{"name": "a/b", "url": "https://example.com"}"#, .invalidWebhookName),
                (#"{"name": "a", "url": "https://example.com", "after": 5}"#, .unknownCursor),
                (#"{"url": "https://example.com"}"#, .malformedBody),
            ]
            for (body, code) in cases {
                Self.expectError(try await Self.call(client, .post, "/v1/webhooks", body), code, notContaining: short)
            }
            #expect(try await Self.names(client) == ["configured"])
            #expect(try await application.storage.transaction { try await $0.webhookEndpointRecords() }.isEmpty)

            // An existing endpoint: a bad change leaves it as it was.
            let created = try await Self.call(
                client, .post, "/v1/webhooks",
                #"{"name": "crm", "url": "https://crm.example.com/in", "secret": "whsec_given_0123456789"}"#)
            #expect(created.status == .created)
            #expect(created.secret["value"] as? String == "whsec_given_0123456789")
            let before = try await application.webhookEndpoints.record(named: "crm")
            for (body, code) in [
                (#"{"url": "file:///etc/passwd"}"#, ErrorCode.invalidWebhookURL),
                (#"{"events": ["purchase.started", "nope"]}"#, .unknownEventType),
                (#"{"environments": ["production", "dev"]}"#, .unknownEnvironment),
                (#"{"secret": "whsec_sneaky_0123456789"}"#, .invalidWebhookSecret),
            ] {
                Self.expectError(
                    try await Self.call(client, .patch, "/v1/webhooks/crm", body), code,
                    notContaining: "whsec_sneaky_0123456789")
            }
            #expect(try await application.webhookEndpoints.record(named: "crm") == before)
            Self.expectError(
                try await Self.call(client, .post, "/v1/webhooks", #"{"name": "crm", "url": "https://other.example"}"#),
                .webhookNameTaken)
            Self.expectError(
                try await Self.call(client, .patch, "/v1/webhooks/nobody", #"{"enabled": false}"#), .webhookNotFound)
            Self.expectError(try await Self.call(client, .post, "/v1/webhooks/nobody/secrets", "{}"), .webhookNotFound)
            Self.expectError(
                try await Self.call(client, .post, "/v1/webhooks/crm/secrets", #"{"secret": "\#(short)"}"#),
                .invalidWebhookSecret, notContaining: short)
            #expect(try await application.webhookEndpoints.record(named: "crm") == before)
        }
    }

    @Test(arguments: StorageBackend.available) func configuredEndpointsAreReadOnly(_ backend: StorageBackend)
        async throws
    {
        try await Self.withRouter(backend) { client, application, _ in
            Self.expectError(
                try await Self.call(
                    client, .post, "/v1/webhooks", #"{"name": "configured", "url": "https://example.com/in"}"#),
                .webhookNameTaken)
            Self.expectError(
                try await Self.call(client, .patch, "/v1/webhooks/configured", #"{"enabled": false}"#),
                .webhookConfigured)
            Self.expectError(try await Self.call(client, .delete, "/v1/webhooks/configured"), .webhookConfigured)
            Self.expectError(
                try await Self.call(client, .post, "/v1/webhooks/configured/secrets", "{}"), .webhookConfigured)
            Self.expectError(
                try await Self.call(client, .delete, "/v1/webhooks/configured/secrets/sec_0"), .webhookConfigured)
            let shown = try await Self.call(client, .get, "/v1/webhooks/configured")
            #expect(shown.webhook["enabled"] as? Bool == true && shown.webhook["secrets"] as? Int == 1)
            #expect(!shown.text.contains(Self.configuredSecret))
            #expect(try await application.storage.transaction { try await $0.webhookEndpointRecords() }.isEmpty)
        }
    }

    @Test(arguments: StorageBackend.available) func onlyTheSecretKeyManagesEndpoints(_ backend: StorageBackend)
        async throws
    {
        try await Self.withRouter(backend) { client, _, _ in
            let body = #"{"name": "crm", "url": "https://crm.example.com/in"}"#
            Self.expectError(
                try await Self.call(client, .post, "/v1/webhooks", body, key: Self.readOnlyKey), .readOnlyAPIKey)
            Self.expectError(
                try await Self.call(client, .post, "/v1/webhooks", body, key: Self.gatewayKey), .apiKeyScope)
            #expect(try await Self.names(client) == ["configured"])
            #expect(try await Self.call(client, .post, "/v1/webhooks", body).status == .created)
            for (method, uri) in [
                (HTTPRequest.Method.patch, "/v1/webhooks/crm"), (.delete, "/v1/webhooks/crm"),
                (.post, "/v1/webhooks/crm/secrets"),
            ] {
                Self.expectError(
                    try await Self.call(client, method, uri, #"{"enabled": false}"#, key: Self.readOnlyKey),
                    .readOnlyAPIKey)
                Self.expectError(
                    try await Self.call(client, method, uri, #"{"enabled": false}"#, key: Self.gatewayKey),
                    .apiKeyScope)
            }
            // Reading is for any key that may read.
            #expect(try await Self.call(client, .get, "/v1/webhooks/crm", key: Self.readOnlyKey).status == .ok)
            #expect(try await Self.names(client) == ["configured", "crm"])
        }
    }

    @Test(arguments: StorageBackend.available) func secretsRotateAndAreShownOnlyOnce(_ backend: StorageBackend)
        async throws
    {
        try await Self.withRouter(backend) { client, application, _ in
            let created = try await Self.call(
                client, .post, "/v1/webhooks", #"{"name": "crm", "url": "https://crm.example.com/in"}"#)
            let old = try #require(created.secret["id"] as? String)
            let oldValue = try #require(created.secret["value"] as? String)

            let added = try await Self.call(
                client, .post, "/v1/webhooks/crm/secrets", #"{"secret": "whsec_next_0123456789abcdef"}"#)
            #expect(added.status == .created, "\(added.text)")
            let new = try #require(added.secret["id"] as? String)
            #expect(added.secret["value"] as? String == "whsec_next_0123456789abcdef")
            #expect(added.webhook["secrets"] as? Int == 2)
            #expect(!added.text.contains(oldValue))
            Self.expectError(try await Self.call(client, .post, "/v1/webhooks/crm/secrets", "{}"), .webhookSecretLimit)
            // Signed with both while rotating.
            let endpoint = try #require(try await application.webhooks.endpoint(named: "crm"))
            #expect(endpoint.secrets.count == 2)

            Self.expectError(
                try await Self.call(client, .delete, "/v1/webhooks/crm/secrets/sec_nope"), .webhookSecretNotFound)
            let retired = try await Self.call(client, .delete, "/v1/webhooks/crm/secrets/\(old)")
            #expect(retired.status == .ok, "\(retired.text)")
            #expect((retired.webhook["secretIds"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [new])
            Self.expectError(
                try await Self.call(client, .delete, "/v1/webhooks/crm/secrets/\(new)"), .webhookSecretRequired)
            let record = try #require(try await application.webhookEndpoints.record(named: "crm"))
            #expect(record.secrets.map(\.value) == ["whsec_next_0123456789abcdef"])
            // Nothing that shows the endpoint shows a value.
            for uri in ["/v1/webhooks", "/v1/webhooks/crm"] {
                let text = try await Self.call(client, .get, uri).text
                #expect(!text.contains("whsec_"), "\(uri) showed a secret")
            }
            #expect(!"\(record)".contains("whsec_") && !"\(record.secrets)".contains("whsec_"))
        }
    }

    @Test(arguments: StorageBackend.available) func anotherInstanceSeesEveryChange(_ backend: StorageBackend)
        async throws
    {
        try await Self.withRouter(backend) { client, first, url in
            try await Self.withApplication(url, clock: ManualClock(Self.start)) { second in
                #expect(try await second.webhooks.endpoint(named: "crm") == nil)
                _ = try await Self.call(
                    client, .post, "/v1/webhooks", #"{"name": "crm", "url": "https://crm.example.com/in"}"#)
                let seen = try #require(try await second.webhooks.endpoint(named: "crm"))
                #expect(seen.url.absoluteString == "https://crm.example.com/in")
                // A change made on the second is what the first delivers to at its next round.
                _ = try await second.webhookEndpoints.update("crm", .init(url: "https://crm.example.com/v2"))
                #expect(
                    try await first.webhooks.endpoint(named: "crm")?.url.absoluteString == "https://crm.example.com/v2")
                // The second refuses the name too.
                await #expect(throws: ServerError.self) {
                    _ = try await second.webhookEndpoints.create(.init(name: "crm", url: "https://elsewhere.example"))
                }
                try await second.webhookEndpoints.delete("crm")
                #expect(try await first.webhooks.endpoint(named: "crm") == nil)
            }
        }
    }
}
