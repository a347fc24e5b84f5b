import Foundation
import Storekeeper
import StorekeeperServer
import Testing

/// `webhooks` in the configuration file: what `config check` accepts and how it explains the rest.
@Suite struct WebhookConfigurationTests {
    static func configuration(webhooks: String) -> String {
        ConfigurationTests.valid.replacingOccurrences(
            of: #""server": {"port": 9090},"#, with: #""server": {"port": 9090}, "webhooks": \#(webhooks),"#)
    }

    static func load(_ webhooks: String, environment: [String: String] = [:]) async throws -> StorekeeperConfiguration {
        let folder = try ConfigurationTests.Folder()
        defer { folder.remove() }
        return try await ConfigurationLoader.load(
            path: try folder.write(configuration(webhooks: webhooks)),
            environment: environment.merging(["API_KEYS_APP_SECRET": "read-only-secret-0123456789"]) { mine, _ in mine }
        )
    }

    static func problems(_ webhooks: String) async throws -> [String] {
        do {
            _ = try await load(webhooks)
            return []
        } catch let error as ConfigurationError {
            return error.problems.map(\.description)
        }
    }

    @Test func aValidEndpointLoadsWithItsFiltersAndTwoSecrets() async throws {
        let configuration = try await Self.load(
            """
            {"timeout": 5, "retrySchedule": [10, 20], "endpoints": {"backend": {
              "url": "https://backend.example.com/hooks/storekeeper",
              "events": ["subscription.renewed", "purchase.refunded"], "environments": ["production"],
              "secrets": ["whsec_new_0123456789abcdef", "whsec_old_0123456789abcdef"]}}}
            """)
        let endpoint = try #require(configuration.webhooks.endpoints.first)
        #expect(endpoint.name == "backend")
        #expect(endpoint.url.absoluteString == "https://backend.example.com/hooks/storekeeper")
        #expect(endpoint.eventTypes == [.subscriptionRenewed, .purchaseRefunded])
        #expect(endpoint.environments == [.production])
        #expect(endpoint.secrets.count == 2)
        #expect(configuration.webhooks.timeout == 5)
        #expect(configuration.webhooks.retrySchedule == [10, 20])
        #expect(!"\(endpoint.secrets)".contains("whsec"))
    }

    @Test func aSingleSecretMayComeFromTheEnvironment() async throws {
        let configuration = try await Self.load(
            #"{"endpoints": {"backend": {"url": "http://127.0.0.1:9000/hook"}}}"#,
            environment: ["WEBHOOKS_ENDPOINTS_BACKEND_SECRET": "whsec_env_0123456789abcdef"])
        #expect(configuration.webhooks.endpoints.first?.secrets.count == 1)
        #expect(configuration.webhooks.endpoints.first?.eventTypes.isEmpty == true)
    }

    @Test func wrongValuesAreExplainedByKey() async throws {
        let problems = try await Self.problems(
            """
            {"retrySchedule": [60, 0], "endpoints": {
              "ftp": {"url": "ftp://example.com/x", "secrets": ["whsec_0123456789abcdef"]},
              "typo": {"url": "https://example.com/x", "events": ["subscription.renewd"], "secrets": ["whsec_0123456789abcdef"]},
              "empty": {"url": "https://example.com/x", "secrets": [""]},
              "three": {"url": "https://example.com/x", "secrets": ["a123456789abcdefg", "b123456789abcdefg", "c123456789abcdefg"]},
              "none": {"url": "https://example.com/x"},
              "env": {"url": "https://example.com/x", "environments": ["staging"], "secrets": ["whsec_0123456789abcdef"]}
            }}
            """)
        func has(_ prefix: String, _ words: String) -> Bool {
            problems.contains { $0.hasPrefix(prefix) && $0.contains(words) }
        }
        #expect(has("webhooks.retrySchedule:", "more than 0"), "\(problems)")
        #expect(has("webhooks.endpoints.ftp.url:", "not an http or https URL"), "\(problems)")
        #expect(has("webhooks.endpoints.typo.events:", "unknown event type 'subscription.renewd'"), "\(problems)")
        #expect(has("webhooks.endpoints.empty.secrets[0]:", "empty"), "\(problems)")
        #expect(has("webhooks.endpoints.three.secrets:", "one, or two while rotating"), "\(problems)")
        #expect(has("webhooks.endpoints.none.secrets:", "needs one or two secrets"), "\(problems)")
        #expect(has("webhooks.endpoints.env.environments:", "unknown environment 'staging'"), "\(problems)")
        #expect(!problems.joined().contains("0123456789abcdef"), "a secret was echoed")
    }

    @Test func theLibraryRefusesWhatTheFileWould() throws {
        #expect(throws: WebhookConfigurationError.self) {
            try WebhookEndpoint(
                name: "x", url: URL(string: "file:///etc/passwd")!, secrets: [try WebhookSecret("whsec_0123456789")])
        }
        #expect(throws: WebhookConfigurationError.self) { try WebhookSecret("") }
        #expect(throws: WebhookConfigurationError.self) {
            try WebhookEndpoint(
                name: "x", url: URL(string: "https://example.com")!, eventTypes: [EventType("nope")],
                secrets: [try WebhookSecret("whsec_0123456789")])
        }
    }
}
