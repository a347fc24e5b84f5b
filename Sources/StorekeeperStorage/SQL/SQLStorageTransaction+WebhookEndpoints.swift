import Foundation
import SQLKit
import Storekeeper

// Webhook endpoints created through the API, and pruning old events and attempts (migration 13).
extension SQLStorageTransaction {
    private static let endpointColumns = "name, url, events, environments, secrets, enabled, created_at, updated_at"

    private static let listEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        encoder.dateEncodingStrategy = .millisecondsSince1970
        return encoder
    }()

    private static let listDecoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        return decoder
    }()

    private func endpointRecord(from row: any SQLRow) throws -> WebhookEndpointRecord {
        let reader = RowReader(row: row, table: "webhook_endpoints")
        func list<Value: Decodable>(_ column: String, as type: Value.Type) throws -> Value {
            do {
                return try Self.listDecoder.decode(Value.self, from: Data(try reader.string(column).utf8))
            } catch {
                if let error = error as? StorageError { throw error }
                throw StorageError(.corrupt, "webhook_endpoints.\(column) is not the JSON list it should be")
            }
        }
        let rawURL = try reader.string("url")
        guard let url = URL(string: rawURL) else {
            throw StorageError(.corrupt, "webhook_endpoints.url is not a URL")
        }
        return WebhookEndpointRecord(
            name: try reader.string("name"), url: url,
            eventTypes: Set(try list("events", as: [String].self).map { EventType($0) }),
            environments: Set(
                try list("environments", as: [String].self).compactMap { PurchaseEnvironment(rawValue: $0) }),
            secrets: try list("secrets", as: [WebhookEndpointSecret].self), enabled: try reader.bool("enabled"),
            createdAt: try reader.date("created_at"), updatedAt: try reader.date("updated_at"))
    }

    private static func columns(of record: WebhookEndpointRecord) throws -> (
        events: String, environments: String, secrets: String
    ) {
        func json(_ value: some Encodable) throws -> String {
            String(decoding: try listEncoder.encode(value), as: UTF8.self)
        }
        return (
            try json(record.eventTypes.map(\.rawValue).sorted()),
            try json(record.environments.map(\.rawValue).sorted()), try json(record.secrets)
        )
    }

    func webhookEndpointRecords() async throws -> [WebhookEndpointRecord] {
        try await rows("SELECT \(unsafeRaw: Self.endpointColumns) FROM webhook_endpoints ORDER BY name")
            .map(endpointRecord(from:))
    }

    func webhookEndpointRecord(named name: String) async throws -> WebhookEndpointRecord? {
        try await row(
            "SELECT \(unsafeRaw: Self.endpointColumns) FROM webhook_endpoints WHERE name = \(bind: name)"
        ).map(endpointRecord(from:))
    }

    func insertWebhookEndpointRecord(_ record: WebhookEndpointRecord) async throws {
        let (events, environments, secrets) = try Self.columns(of: record)
        // DO NOTHING instead of a failing insert: on PostgreSQL a failed statement aborts the transaction.
        let inserted = try await rows(
            """
            INSERT INTO webhook_endpoints (\(unsafeRaw: Self.endpointColumns))
            VALUES (\(bind: record.name), \(bind: record.url.absoluteString), \(bind: events), \(bind: environments),
                    \(bind: secrets), \(bind: record.enabled), \(bind: StoredTime.milliseconds(record.createdAt)),
                    \(bind: StoredTime.milliseconds(record.updatedAt)))
            ON CONFLICT DO NOTHING RETURNING name
            """)
        guard inserted.isEmpty else { return }
        throw StorageError(.conflict, "a webhook endpoint named \(record.name) exists")
    }

    func updateWebhookEndpointRecord(_ record: WebhookEndpointRecord) async throws {
        let (events, environments, secrets) = try Self.columns(of: record)
        try await run(
            """
            UPDATE webhook_endpoints SET url = \(bind: record.url.absoluteString), events = \(bind: events),
                environments = \(bind: environments), secrets = \(bind: secrets), enabled = \(bind: record.enabled),
                updated_at = \(bind: StoredTime.milliseconds(record.updatedAt))
            WHERE name = \(bind: record.name)
            """)
    }

    func deleteWebhookEndpointRecord(named name: String) async throws -> Bool {
        let deleted = try await rows("DELETE FROM webhook_endpoints WHERE name = \(bind: name) RETURNING name")
        guard !deleted.isEmpty else { return false }
        for statement in Self.deleteEndpointRows(name) { try await run(statement) }
        return true
    }

    /// What a deleted endpoint leaves, each by an index led by the endpoint: a later endpoint of the
    /// same name starts afresh, without this one's queue, log or cursor.
    static func deleteEndpointRows(_ name: String) -> [SQLQueryString] {
        [
            "DELETE FROM webhook_deliveries WHERE endpoint = \(bind: name)",
            "DELETE FROM webhook_attempts WHERE endpoint = \(bind: name)",
            "DELETE FROM cursors WHERE name = \(bind: "webhook.\(name)")",
        ]
    }

    // MARK: Pruning

    func lockWebhookCursors() async throws {
        try await lock("webhooks:cursors")
    }

    func firstEventPosition() async throws -> Int? {
        guard
            let found = try await row(
                "SELECT position FROM events WHERE position > 0 ORDER BY position LIMIT 1")
        else { return nil }
        return try RowReader(row: found, table: "events").int("position")
    }

    func firstPendingDeliveryPosition() async throws -> Int? {
        // The lowest pending delivery is its customer's earliest, which always has a next attempt
        // (`recordDeliveryAttempts`); asked for, as the partial index's predicate has it
        // (migration 23).
        guard
            let found = try await row(
                """
                SELECT position FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at IS NOT NULL
                ORDER BY position LIMIT 1
                """)
        else { return nil }
        return try RowReader(row: found, table: "webhook_deliveries").int("position")
    }

    func pruneEvents(occurredBefore cutoff: Date, through position: Int, limit: Int) async throws -> Int {
        guard limit > 0, position > 0 else { return 0 }
        // The lowest positions first, through their index; only the run of them old enough goes.
        let oldest = try await rows(
            """
            SELECT position, occurred_at FROM events WHERE position > 0 AND position <= \(bind: position)
            ORDER BY position LIMIT \(bind: limit)
            """
        ).map { row in
            let reader = RowReader(row: row, table: "events")
            return (position: try reader.int("position"), occurredAt: try reader.date("occurred_at"))
        }
        let prunable = oldest.prefix { $0.occurredAt < cutoff }
        guard let first = prunable.first?.position, let last = prunable.last?.position else { return 0 }
        for statement in Self.deleteEvents(from: first, through: last) { try await run(statement) }
        return prunable.count
    }

    /// The events from `first` through `last` and their delivery rows, each through an index by position.
    static func deleteEvents(from first: Int, through last: Int) -> [SQLQueryString] {
        [
            "DELETE FROM webhook_deliveries WHERE position >= \(bind: first) AND position <= \(bind: last)",
            "DELETE FROM events WHERE position >= \(bind: first) AND position <= \(bind: last)",
        ]
    }

    /// The attempts through `seq`, by the primary key.
    static func deleteAttempts(through seq: Int) -> SQLQueryString {
        "DELETE FROM webhook_attempts WHERE seq <= \(bind: seq)"
    }

    func pruneDeliveryAttempts(attemptedBefore cutoff: Date, limit: Int) async throws -> Int {
        guard limit > 0 else { return 0 }
        let oldest = try await rows(
            "SELECT seq, attempted_at FROM webhook_attempts WHERE seq > 0 ORDER BY seq LIMIT \(bind: limit)"
        ).map { row in
            let reader = RowReader(row: row, table: "webhook_attempts")
            return (seq: try reader.int("seq"), attemptedAt: try reader.date("attempted_at"))
        }
        let prunable = oldest.prefix { $0.attemptedAt < cutoff }
        guard let last = prunable.last?.seq else { return 0 }
        try await run(Self.deleteAttempts(through: last))
        return prunable.count
    }
}
