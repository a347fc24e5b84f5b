import Foundation
public import StoreCore
public import Storekeeper
public import StorekeeperStorage

/// Webhook endpoints managed through the API (docs/events.md, "Endpoints through the API"): kept in
/// the database, read by the dispatcher every round next to the configured ones, so a change takes
/// effect without a restart on every instance sharing the database. Configured endpoints are
/// read-only here; names are unique across both. A secret's value is returned once, when it is
/// added, and never shown, logged or put in an error afterwards.
public struct WebhookEndpointService: Sendable {
    let configured: WebhookSettings
    let storage: any Storage
    let clock: any WallClock
    /// Where generated secrets and secret ids come from.
    let randomBytes: @Sendable (Int) -> [UInt8]

    public init(
        configured: WebhookSettings, storage: any Storage, clock: any WallClock,
        randomBytes: @escaping @Sendable (Int) -> [UInt8] = WebhookEndpointService.systemRandomBytes
    ) {
        self.configured = configured
        self.storage = storage
        self.clock = clock
        self.randomBytes = randomBytes
    }

    public static let systemRandomBytes: @Sendable (Int) -> [UInt8] = { count in
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    /// What a creation asks for; nil filters: all.
    public struct Creation: Sendable, CustomStringConvertible {
        public var name: String
        public var url: String
        public var events: [String]?
        public var environments: [String]?
        /// nil: a secret is generated.
        public var secret: String?
        public var enabled: Bool
        /// The position the endpoint starts after (nil or 0: every event kept).
        public var after: Int?

        public init(
            name: String, url: String, events: [String]? = nil, environments: [String]? = nil, secret: String? = nil,
            enabled: Bool = true, after: Int? = nil
        ) {
            self.name = name
            self.url = url
            self.events = events
            self.environments = environments
            self.secret = secret
            self.enabled = enabled
            self.after = after
        }

        /// Never the secret.
        public var description: String { "creation of webhook endpoint \(name)" }
    }

    /// What an update changes; nil: unchanged (an empty filter list: all).
    public struct Changes: Sendable {
        public var url: String?
        public var events: [String]?
        public var environments: [String]?
        public var enabled: Bool?

        public init(url: String? = nil, events: [String]? = nil, environments: [String]? = nil, enabled: Bool? = nil) {
            self.url = url
            self.events = events
            self.environments = environments
            self.enabled = enabled
        }
    }

    /// Creates the endpoint; returns it and its secret (the only time the value is shown).
    public func create(_ creation: Creation) async throws -> (WebhookEndpointRecord, WebhookEndpointSecret) {
        try Self.checkName(creation.name)
        if configured.endpoint(named: creation.name) != nil {
            throw ServerError(
                .webhookNameTaken, "the configuration file has a webhook endpoint named \(creation.name)")
        }
        let now = clock.now()
        let secret = try newSecret(creation.secret, at: now)
        let record = WebhookEndpointRecord(
            name: creation.name, url: try Self.url(creation.url), eventTypes: try Self.types(creation.events ?? []),
            environments: try Self.environments(creation.environments ?? []), secrets: [secret],
            enabled: creation.enabled, createdAt: now, updatedAt: now)
        let after = creation.after ?? 0
        guard after >= 0 else { throw ServerError(.unknownCursor, "after must be 0 or an event's position") }
        try await storage.transaction { transaction in
            try await transaction.lockWebhookCursors()
            try await EventCursor.validate(after, in: transaction)
            do {
                try await transaction.insertWebhookEndpointRecord(record)
            } catch {
                if let error = error as? StorageError, error.reason == .conflict {
                    throw ServerError(.webhookNameTaken, "a webhook endpoint named \(record.name) exists")
                }
                throw error
            }
            if after > 0 {
                try await transaction.setCursor(WebhookDispatcher.cursorName(record.name), to: String(after))
            }
        }
        return (record, secret)
    }

    public func record(named name: String) async throws -> WebhookEndpointRecord? {
        try await storage.transaction { try await $0.webhookEndpointRecord(named: name) }
    }

    /// Changes the URL, filters or enabled flag; what is already queued keeps going.
    public func update(_ name: String, _ changes: Changes) async throws -> WebhookEndpointRecord {
        let url = try changes.url.map(Self.url)
        let types = try changes.events.map(Self.types)
        let environments = try changes.environments.map(Self.environments)
        return try await change(name) { record in
            if let url { record.url = url }
            if let types { record.eventTypes = types }
            if let environments { record.environments = environments }
            if let enabled = changes.enabled { record.enabled = enabled }
        }
    }

    /// Deletes the endpoint with its queue, its log and its cursor.
    public func delete(_ name: String) async throws {
        try checkNotConfigured(name)
        let deleted = try await storage.transaction { transaction in
            try await transaction.lockWebhookCursors()
            return try await transaction.deleteWebhookEndpointRecord(named: name)
        }
        guard deleted else { throw Self.notFound(name) }
    }

    /// Adds a second secret (rotation: deliveries are signed with both until the old one is
    /// retired); returns it (the only time the value is shown).
    public func addSecret(to name: String, secret value: String?) async throws
        -> (WebhookEndpointRecord, WebhookEndpointSecret)
    {
        let secret = try newSecret(value, at: clock.now())
        let record = try await change(name) { record in
            guard record.secrets.count < 2 else {
                throw ServerError(
                    .webhookSecretLimit,
                    "webhook endpoint \(name) has two secrets already: retire one (DELETE …/secrets/{id}) first")
            }
            record.secrets.append(secret)
        }
        return (record, secret)
    }

    /// Retires one secret: deliveries are signed with the other from then on.
    public func retireSecret(_ id: String, of name: String) async throws -> WebhookEndpointRecord {
        try await change(name) { record in
            guard record.secrets.contains(where: { $0.id == id }) else {
                throw ServerError(.webhookSecretNotFound, "webhook endpoint \(name) has no secret \(id.prefix(40))")
            }
            guard record.secrets.count > 1 else {
                throw ServerError(
                    .webhookSecretRequired,
                    "\(id) is the only secret of webhook endpoint \(name): add its successor (POST …/secrets) first")
            }
            record.secrets.removeAll { $0.id == id }
        }
    }

    /// Reads, changes and writes the endpoint in one transaction, holding the endpoints' lock so
    /// two changes never overwrite each other.
    func change(_ name: String, _ body: @escaping @Sendable (inout WebhookEndpointRecord) throws -> Void) async throws
        -> WebhookEndpointRecord
    {
        try checkNotConfigured(name)
        let now = clock.now()
        return try await storage.transaction { transaction in
            try await transaction.lockWebhookCursors()
            guard var record = try await transaction.webhookEndpointRecord(named: name) else {
                throw Self.notFound(name)
            }
            try body(&record)
            record.updatedAt = now
            try await transaction.updateWebhookEndpointRecord(record)
            return record
        }
    }

    func checkNotConfigured(_ name: String) throws {
        if configured.endpoint(named: name) != nil {
            throw ServerError(
                .webhookConfigured,
                "webhook endpoint \(name) is in the configuration file: change it there (the API can't)")
        }
    }

    static func notFound(_ name: String) -> ServerError {
        ServerError(.webhookNotFound, "no webhook endpoint named \(name.prefix(64)) exists")
    }

    /// The given secret, checked, or a generated one (`whsec_` and 32 random bytes in hex).
    func newSecret(_ given: String?, at now: Date) throws -> WebhookEndpointSecret {
        let value: String
        if let given {
            // The message never repeats the secret.
            guard !given.isEmpty else {
                throw ServerError(.invalidWebhookSecret, "the secret is empty: send none to have one generated")
            }
            guard given.utf8.count >= WebhookSecret.minimumLength else {
                throw ServerError(
                    .invalidWebhookSecret,
                    "the secret is shorter than \(WebhookSecret.minimumLength) characters: use a long random value, or send none to have one generated"
                )
            }
            value = given
        } else {
            value = "whsec_" + Hex.encode(randomBytes(32))
        }
        return WebhookEndpointSecret(id: "sec_" + Hex.encode(randomBytes(8)), value: value, createdAt: now)
    }

    /// 1–64 letters, digits, `-`, `_` or `.`, starting with a letter or digit: it appears in paths,
    /// metric labels and the endpoint's cursor name.
    static func checkName(_ name: String) throws {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
        guard (1...64).contains(name.count), name.allSatisfy(allowed.contains),
            let first = name.first, first.isLetter || first.isNumber
        else {
            throw ServerError(
                .invalidWebhookName,
                "a webhook endpoint's name is 1 to 64 letters, digits, '-', '_' or '.', starting with a letter or digit"
            )
        }
    }

    static func url(_ text: String) throws -> URL {
        // Neither message repeats the URL, whose query may hold a token.
        guard let url = URL(string: text) else { throw ServerError(.invalidWebhookURL, "url is not a URL") }
        guard let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme) else {
            throw ServerError(.invalidWebhookURL, "url must be an http or https URL")
        }
        guard let host = url.host, !host.isEmpty else { throw ServerError(.invalidWebhookURL, "url has no host") }
        return url
    }

    static func types(_ names: [String]) throws -> Set<EventType> {
        var types = Set<EventType>()
        for type in names.map({ EventType($0) }) {
            guard type.isKnown else { throw ServerError(.unknownEventType, WebhookEndpoint.unknownTypeMessage(type)) }
            types.insert(type)
        }
        return types
    }

    static func environments(_ names: [String]) throws -> Set<PurchaseEnvironment> {
        var environments = Set<PurchaseEnvironment>()
        for name in names {
            guard let environment = PurchaseEnvironment(rawValue: name) else {
                throw ServerError(
                    .unknownEnvironment, "unknown environment '\(name.prefix(40))' (expected production or sandbox)")
            }
            environments.insert(environment)
        }
        return environments
    }
}

/// Checks an event cursor (`after`): 0, or the position of an event still kept. A position below
/// the lowest kept was pruned (retention): `cursor-expired`, so a consumer learns it missed events
/// instead of silently reading on; any other unknown position: `unknown-cursor`.
enum EventCursor {
    static func validate(_ position: Int, in transaction: any StorageTransaction) async throws {
        guard position != 0 else { return }
        if position > 0, try await transaction.eventExists(position: position) { return }
        if position > 0, let first = try await transaction.firstEventPosition(), position < first {
            throw ServerError(
                .cursorExpired,
                "events up to position \(first - 1) were pruned (retention), so those after \(position) can't all be read; start again from after=0 (the oldest kept) and reconcile with GET /v1/customers/{id}"
            )
        }
        throw ServerError(.unknownCursor, "no event has position \(position)")
    }
}
