public import Foundation
public import Storekeeper

/// The webhook endpoints events are delivered to, and how delivery behaves
/// (docs/events.md, docs/configuration.md "webhooks").
public struct WebhookSettings: Sendable {
    public var endpoints: [WebhookEndpoint]
    /// How often the delivery job looks for new events and due retries.
    public var pollInterval: TimeInterval
    /// How long one delivery may take before it counts as failed.
    public var timeout: TimeInterval
    /// The wait after each failed attempt; once all are used, the delivery is dead-lettered.
    public var retrySchedule: [TimeInterval]
    /// Deliveries sent at once (of different customers; one customer's go one after another).
    public var concurrency: Int

    /// 1 min, 5 min, 30 min, 2 h, 6 h, 12 h, 24 h, 48 h, 72 h: the last attempt is about 6.5 days
    /// after the first.
    public static let defaultRetrySchedule: [TimeInterval] = [
        60, 300, 1_800, 7_200, 21_600, 43_200, 86_400, 172_800, 259_200,
    ]

    public init(
        endpoints: [WebhookEndpoint] = [], pollInterval: TimeInterval = 1, timeout: TimeInterval = 10,
        retrySchedule: [TimeInterval] = WebhookSettings.defaultRetrySchedule, concurrency: Int = 16
    ) {
        self.endpoints = endpoints
        self.pollInterval = pollInterval
        self.timeout = timeout
        self.retrySchedule = retrySchedule
        self.concurrency = concurrency
    }

    public func endpoint(named name: String) -> WebhookEndpoint? { endpoints.first { $0.name == name } }
}

/// One receiver of events: where, which events, and the secrets deliveries are signed with.
public struct WebhookEndpoint: Sendable {
    /// Its name in the configuration (`webhooks.endpoints.<name>`), used in the API and metrics.
    public var name: String
    public var url: URL
    /// The types delivered; empty: all.
    public var eventTypes: Set<EventType>
    /// The purchase environments whose events are delivered; empty: all. Events without a
    /// purchase (a debit) go to every endpoint their type admits.
    public var environments: Set<PurchaseEnvironment>
    /// One or two secrets: every delivery is signed with each (two while rotating).
    public var secrets: [WebhookSecret]

    public init(
        name: String, url: URL, eventTypes: Set<EventType> = [], environments: Set<PurchaseEnvironment> = [],
        secrets: [WebhookSecret]
    ) throws {
        if let problem = Self.problem(url: url) { throw WebhookConfigurationError(key: "url", message: problem) }
        if let unknown = eventTypes.sorted().first(where: { !$0.isKnown }) {
            throw WebhookConfigurationError(key: "events", message: Self.unknownTypeMessage(unknown))
        }
        guard (1...2).contains(secrets.count) else {
            throw WebhookConfigurationError(key: "secrets", message: "needs one or two secrets (two while rotating)")
        }
        self.name = name
        self.url = url
        self.eventTypes = eventTypes
        self.environments = environments
        self.secrets = secrets
    }

    /// Whether `event` goes to this endpoint.
    public func admits(_ event: StoredEvent) -> Bool {
        if !eventTypes.isEmpty, !eventTypes.contains(event.type) { return false }
        if !environments.isEmpty, let environment = event.environment, !environments.contains(environment) {
            return false
        }
        return true
    }

    /// Why `url` can't receive webhooks (nil: it can): http or https, with a host.
    public static func problem(url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme) else {
            return "'\(url.absoluteString)' is not an http or https URL"
        }
        guard let host = url.host, !host.isEmpty else { return "'\(url.absoluteString)' has no host" }
        return nil
    }

    static func unknownTypeMessage(_ type: EventType) -> String {
        "unknown event type '\(type.rawValue)' (known: \(EventType.all.map(\.rawValue).joined(separator: ", ")))"
    }
}

/// A webhook signing secret: never printed.
public struct WebhookSecret: Sendable, CustomStringConvertible {
    let bytes: [UInt8]

    /// Refuses an empty secret.
    public init(_ value: String) throws {
        guard !value.isEmpty else {
            throw WebhookConfigurationError(key: "secrets", message: "a secret is empty")
        }
        bytes = Array(value.utf8)
    }

    public var description: String { "***" }
}

/// A webhook endpoint that can't be used: the key at fault and why.
public struct WebhookConfigurationError: Error, Sendable, CustomStringConvertible {
    public var key: String
    public var message: String

    public var description: String { "\(key): \(message)" }
}

extension WebhookEndpoint {
    /// An endpoint created through the API, as the dispatcher delivers to it.
    public init(record: WebhookEndpointRecord) throws {
        try self.init(
            name: record.name, url: record.url, eventTypes: record.eventTypes, environments: record.environments,
            secrets: try record.secrets.map { try WebhookSecret($0.value) })
    }
}

extension WebhookSecret {
    /// The shortest secret accepted, in the configuration file and through the API.
    public static let minimumLength = 16
}
