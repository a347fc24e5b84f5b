import Foundation
import Hummingbird
import Storekeeper
import StorekeeperStorage

/// `GET /v1/events`: the event feed, read with a stable cursor (`after`: the last position seen),
/// and `/v1/webhooks`: the configured endpoints, their delivery log, redelivery and replay.
struct EventRoutes {
    let storage: any Storage
    let dispatcher: WebhookDispatcher

    struct Page: Encodable {
        var events: [FeedEntry]
        /// The cursor to pass as `after` for the next page (the last position here, or `after`).
        var next: Int
        /// Whether more events follow `next` now.
        var hasMore: Bool
    }

    struct FeedEntry: Encodable {
        var position: Int
        var event: Event
    }

    struct EndpointListing: Encodable {
        var webhooks: [EndpointSummary]
    }

    struct EndpointSummary: Encodable {
        var name: String
        var url: String
        var events: [EventType]
        var environments: [PurchaseEnvironment]
        var secrets: Int
        var pending: Int
        var delivered: Int
        var dead: Int
        var nextAttemptAt: Date?
        /// `configuration` (read-only through the API) or `api`.
        var source: String
        var enabled: Bool
        /// An API-managed endpoint's secrets: ids and dates, never the values.
        var secretIds: [SecretSummary]?
        var createdAt: Date?
        var updatedAt: Date?
    }

    struct SecretSummary: Encodable {
        var id: String
        var createdAt: Date
    }

    struct AttemptListing: Encodable {
        var attempts: [DeliveryAttempt]
    }

    struct DeliveryListing: Encodable {
        var deliveries: [DeliveryEntry]
    }

    struct DeliveryEntry: Encodable {
        var position: Int
        var eventId: UUID
        var type: EventType
        var status: EventDelivery.Status
        var attempts: Int
        var nextAttemptAt: Date?
        var lastStatusCode: Int?
        var lastError: String?
        var deliveredAt: Date?
    }

    struct Redelivery: Decodable {
        var eventId: String
    }

    struct Replay: Decodable {
        var after: Int
    }

    struct Accepted: Encodable {
        var webhook: String
        var queued: String
    }

    func register(on group: RouterGroup<BasicRequestContext>) {
        group.get("events") { request, _ in
            let query = request.uri.queryParameters
            let after = try Self.cursor(query.get("after"))
            let limit = try PageLimit.parse(query.get("limit"))
            let types = try Self.types(query.getAll("type"))
            var customer: CustomerID?
            if let raw = query.get("customer") {
                if let problem = CustomerID.problem(with: raw) { throw ServerError(.invalidCustomerID, problem) }
                customer = CustomerID(raw)
            }
            _ = try await dispatcher.sequence()
            let filter = customer
            let found = try await storage.transaction { transaction in
                try await EventCursor.validate(after, in: transaction)
                return try await transaction.events(after: after, customer: filter, types: types, limit: limit + 1)
            }
            let page = try found.prefix(limit).map { stored in
                FeedEntry(
                    position: stored.position ?? 0,
                    event: try EventWriter.decoder.decode(Event.self, from: stored.body))
            }
            return try JSONResponse.make(
                Page(events: page, next: page.last?.position ?? after, hasMore: found.count > limit))
        }
        group.get("webhooks") { _, _ in
            var summaries: [EndpointSummary] = []
            for endpoint in dispatcher.settings.endpoints {
                summaries.append(try await summary(of: endpoint, record: nil))
            }
            let configured = Set(dispatcher.settings.endpoints.map(\.name))
            let records = try await storage.transaction { try await $0.webhookEndpointRecords() }
            for record in records where !configured.contains(record.name) {
                summaries.append(try await summary(of: try WebhookEndpoint(record: record), record: record))
            }
            return try JSONResponse.make(EndpointListing(webhooks: summaries))
        }
        group.get("webhooks/:name/attempts") { request, context in
            let endpoint = try await endpoint(context)
            let limit = try PageLimit.parse(request.uri.queryParameters.get("limit"))
            var eventID: UUID?
            if let raw = request.uri.queryParameters.get("event") {
                guard let id = UUID(uuidString: raw) else {
                    throw ServerError(.invalidQuery, "event must be an event id")
                }
                eventID = id
            }
            let filter = eventID
            let attempts = try await storage.transaction {
                try await $0.deliveryAttempts(endpoint: endpoint.name, eventID: filter, limit: limit)
            }
            return try JSONResponse.make(AttemptListing(attempts: attempts))
        }
        group.get("webhooks/:name/deliveries") { request, context in
            let endpoint = try await endpoint(context)
            let limit = try PageLimit.parse(request.uri.queryParameters.get("limit"))
            var status: EventDelivery.Status?
            if let raw = request.uri.queryParameters.get("status") {
                guard let known = EventDelivery.Status(rawValue: raw) else {
                    let names = EventDelivery.Status.allCases.map(\.rawValue).joined(separator: ", ")
                    throw ServerError(.invalidQuery, "status must be one of \(names)")
                }
                status = known
            }
            let filter = status
            let found = try await storage.transaction {
                try await $0.deliveries(endpoint: endpoint.name, status: filter, limit: limit)
            }
            return try JSONResponse.make(
                DeliveryListing(
                    deliveries: found.map {
                        DeliveryEntry(
                            position: $0.position, eventId: $0.eventID, type: $0.eventType, status: $0.status,
                            attempts: $0.attempts, nextAttemptAt: $0.nextAttemptAt, lastStatusCode: $0.lastStatusCode,
                            lastError: $0.lastError, deliveredAt: $0.deliveredAt)
                    }))
        }
        group.post("webhooks/:name/redeliver") { request, context in
            let endpoint = try await endpoint(context)
            let body = try await decode(Redelivery.self, request)
            guard let id = UUID(uuidString: body.eventId) else {
                throw ServerError(.malformedBody, "eventId must be an event id (a UUID)")
            }
            try await dispatcher.redeliver(id, to: endpoint.name)
            return try JSONResponse.make(
                Accepted(webhook: endpoint.name, queued: "event \(id.uuidString.lowercased())"), status: .accepted)
        }
        group.post("webhooks/:name/replay") { request, context in
            let endpoint = try await endpoint(context)
            let body = try await decode(Replay.self, request)
            guard body.after >= 0 else { throw ServerError(.unknownCursor, "after must be 0 or an event's position") }
            try await dispatcher.replay(to: endpoint.name, after: body.after)
            return try JSONResponse.make(
                Accepted(webhook: endpoint.name, queued: "every event after position \(body.after)"), status: .accepted)
        }
    }

    func endpoint(_ context: BasicRequestContext) async throws -> WebhookEndpoint {
        let name = context.parameters.get("name") ?? ""
        guard let endpoint = try await dispatcher.endpoint(named: name) else {
            throw ServerError(.webhookNotFound, "no webhook endpoint named \(name) is configured")
        }
        return endpoint
    }

    /// What the API shows of an endpoint: never a secret's value.
    func summary(of endpoint: WebhookEndpoint, record: WebhookEndpointRecord?) async throws -> EndpointSummary {
        let name = endpoint.name
        let (counts, next) = try await storage.transaction {
            (try await $0.deliveryCounts(endpoint: name), try await $0.nextDeliveryDue(endpoint: name))
        }
        return EndpointSummary(
            name: name, url: Self.redacted(endpoint.url), events: endpoint.eventTypes.sorted(),
            environments: endpoint.environments.sorted { $0.rawValue < $1.rawValue },
            secrets: endpoint.secrets.count, pending: counts[.pending] ?? 0,
            delivered: counts[.delivered] ?? 0, dead: counts[.dead] ?? 0, nextAttemptAt: next,
            source: record == nil ? "configuration" : "api", enabled: record?.enabled ?? true,
            secretIds: record?.secrets.map { SecretSummary(id: $0.id, createdAt: $0.createdAt) },
            createdAt: record?.createdAt, updatedAt: record?.updatedAt)
    }

    /// The URL without credentials or query, which may hold a token.
    static func redacted(_ url: URL) -> String {
        guard var parts = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return "***" }
        parts.user = nil
        parts.password = nil
        if parts.query != nil { parts.query = "***" }
        return parts.string ?? "***"
    }

    static func cursor(_ raw: String?) throws -> Int {
        guard let raw else { return 0 }
        guard let value = Int(raw), value >= 0 else {
            throw ServerError(.unknownCursor, "after must be 0 or an event's position, not '\(raw.prefix(40))'")
        }
        return value
    }

    /// `type` may repeat and each may list several, comma-separated.
    static func types(_ raw: [String]) throws -> Set<EventType> {
        var types = Set<EventType>()
        for name in raw.flatMap({ $0.split(separator: ",") }) {
            let type = EventType(String(name).trimmingCharacters(in: .whitespaces))
            guard type.isKnown else {
                throw ServerError(.unknownEventType, WebhookEndpoint.unknownTypeMessage(type))
            }
            types.insert(type)
        }
        return types
    }
}
