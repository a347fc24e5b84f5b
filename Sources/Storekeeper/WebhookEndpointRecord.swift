public import Foundation

/// A webhook endpoint created through the API (docs/events.md, "Endpoints through the API"), as
/// the database keeps it. Configured endpoints live in the configuration file instead; names are
/// unique across both.
public struct WebhookEndpointRecord: Sendable, Hashable, CustomStringConvertible {
    public var name: String
    public var url: URL
    /// The types delivered; empty: all.
    public var eventTypes: Set<EventType>
    /// The purchase environments whose events are delivered; empty: all.
    public var environments: Set<PurchaseEnvironment>
    /// One or two: every delivery is signed with each (two while rotating).
    public var secrets: [WebhookEndpointSecret]
    /// A disabled endpoint is sent nothing and its cursor stays where it is.
    public var enabled: Bool
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        name: String, url: URL, eventTypes: Set<EventType>, environments: Set<PurchaseEnvironment>,
        secrets: [WebhookEndpointSecret], enabled: Bool, createdAt: Date, updatedAt: Date
    ) {
        self.name = name
        self.url = url
        self.eventTypes = eventTypes
        self.environments = environments
        self.secrets = secrets
        self.enabled = enabled
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// Never the secrets.
    public var description: String {
        "webhook endpoint \(name) (\(secrets.count) secret\(secrets.count == 1 ? "" : "s"))"
    }
}

/// One signing secret of an API-managed endpoint: its public id (what listings show and what a
/// rotation retires) and its value (returned once, when it is added; never shown again).
public struct WebhookEndpointSecret: Sendable, Hashable, Codable, CustomStringConvertible {
    public var id: String
    public var value: String
    public var createdAt: Date

    public init(id: String, value: String, createdAt: Date) {
        self.id = id
        self.value = value
        self.createdAt = createdAt
    }

    /// The id only: the value never reaches a log.
    public var description: String { "secret \(id)" }
}
