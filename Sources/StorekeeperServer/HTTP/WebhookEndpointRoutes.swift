import Foundation
import Hummingbird
import Storekeeper

/// Managing webhook endpoints through the API (docs/events.md, "Endpoints through the API"):
/// `POST /v1/webhooks`, `GET|PATCH|DELETE /v1/webhooks/{name}`, `POST /v1/webhooks/{name}/secrets`
/// and `DELETE /v1/webhooks/{name}/secrets/{secretId}`. Changes need the `secret` API key (the
/// key middleware refuses the others); a secret's value is in the answer that adds it, nowhere else.
struct WebhookEndpointRoutes {
    let service: WebhookEndpointService
    let events: EventRoutes

    struct Creation: Decodable {
        var name: String
        var url: String
        var events: [String]?
        var environments: [String]?
        var secret: String?
        var enabled: Bool?
        var after: Int?
    }

    struct Update: Decodable {
        var url: String?
        var events: [String]?
        var environments: [String]?
        var enabled: Bool?
        /// Secrets don't change here; present only to refuse them with a pointer to the right route.
        var secret: String?
        var secrets: [String]?
    }

    struct NewSecret: Decodable {
        var secret: String?
    }

    struct Shown: Encodable {
        var webhook: EventRoutes.EndpointSummary
    }

    /// The one answer that carries a secret's value.
    struct WithSecret: Encodable {
        var webhook: EventRoutes.EndpointSummary
        var secret: SecretValue
    }

    struct SecretValue: Encodable {
        var id: String
        var value: String
        var createdAt: Date
    }

    func register(on group: RouterGroup<BasicRequestContext>) {
        group.post("webhooks") { request, _ in
            let body = try await Self.decodeQuietly(Creation.self, request)
            let (record, secret) = try await service.create(
                .init(
                    name: body.name, url: body.url, events: body.events, environments: body.environments,
                    secret: body.secret, enabled: body.enabled ?? true, after: body.after))
            return try JSONResponse.make(try await withSecret(record, secret), status: .created)
        }
        group.get("webhooks/:name") { _, context in
            let name = try endpointName(context)
            let endpoint = try await events.endpoint(context)
            let record =
                events.dispatcher.settings.endpoint(named: name) == nil
                ? try await service.record(named: name) : nil
            return try JSONResponse.make(Shown(webhook: try await events.summary(of: endpoint, record: record)))
        }
        group.patch("webhooks/:name") { request, context in
            let name = try endpointName(context)
            let body = try await Self.decodeQuietly(Update.self, request)
            if body.secret != nil || body.secrets != nil {
                throw ServerError(
                    .invalidWebhookSecret,
                    "secrets are not changed by PATCH: add one with POST /v1/webhooks/\(name)/secrets, retire one with DELETE /v1/webhooks/\(name)/secrets/{secretId}"
                )
            }
            let record = try await service.update(
                name, .init(url: body.url, events: body.events, environments: body.environments, enabled: body.enabled))
            return try JSONResponse.make(Shown(webhook: try await summary(record)))
        }
        group.delete("webhooks/:name") { _, context in
            try await service.delete(try endpointName(context))
            return Response(status: .noContent)
        }
        group.post("webhooks/:name/secrets") { request, context in
            let name = try endpointName(context)
            let body = try await Self.decodeQuietly(NewSecret.self, request)
            let (record, secret) = try await service.addSecret(to: name, secret: body.secret)
            return try JSONResponse.make(try await withSecret(record, secret), status: .created)
        }
        group.delete("webhooks/:name/secrets/:secretId") { _, context in
            let name = try endpointName(context)
            let id = context.parameters.get("secretId") ?? ""
            let record = try await service.retireSecret(id, of: name)
            return try JSONResponse.make(Shown(webhook: try await summary(record)))
        }
    }

    /// Decodes a body that may hold a secret: a refusal names the field at fault, never the text
    /// around it (a JSON syntax error's message quotes the body).
    static func decodeQuietly<Value: Decodable>(_ type: Value.Type, _ request: Request) async throws -> Value {
        let data = Data(buffer: try await request.body.collect(upTo: 64 * 1024))
        let body = data.isEmpty ? Data("{}".utf8) : data
        do {
            return try JSONDecoder().decode(Value.self, from: body)
        } catch {
            var detail = ""
            if let error = error as? DecodingError {
                switch error {
                case .keyNotFound(let key, _): detail = ": \(key.stringValue) is missing"
                case .typeMismatch(_, let context), .valueNotFound(_, let context):
                    detail = ": \(context.codingPath.map(\.stringValue).joined(separator: ".")) has the wrong type"
                default: detail = ""
                }
            }
            throw ServerError(.malformedBody, "the body is not the expected JSON object\(detail)")
        }
    }

    func endpointName(_ context: BasicRequestContext) throws -> String {
        context.parameters.get("name") ?? ""
    }

    func summary(_ record: WebhookEndpointRecord) async throws -> EventRoutes.EndpointSummary {
        try await events.summary(of: try WebhookEndpoint(record: record), record: record)
    }

    func withSecret(_ record: WebhookEndpointRecord, _ secret: WebhookEndpointSecret) async throws -> WithSecret {
        WithSecret(
            webhook: try await summary(record),
            secret: SecretValue(id: secret.id, value: secret.value, createdAt: secret.createdAt))
    }
}
