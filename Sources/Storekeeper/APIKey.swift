public import Foundation

/// An API key's stored form: only a hash of the secret is kept.
public struct APIKeyRecord: Sendable, Hashable, Codable {
    /// What a key may do.
    public enum Scope: String, Sendable, Hashable, Codable, CaseIterable {
        /// The app's backend: everything under /v1/customers.
        case secret
        /// Reads only (GET).
        case readOnly = "read_only"
        /// What an app-facing gateway needs, nothing more: purchase submissions, app transactions
        /// and the signing endpoints (offers, introductory offer eligibility, Advanced Commerce).
        case appGateway = "app_gateway"
    }

    /// A short public id, shown in listings and logs instead of the secret.
    public var id: String
    public var name: String
    /// Hex SHA-256 of the secret.
    public var secretHash: String
    public var scope: Scope
    public var createdAt: Date

    public init(id: String, name: String, secretHash: String, scope: Scope, createdAt: Date) {
        self.id = id
        self.name = name
        self.secretHash = secretHash
        self.scope = scope
        self.createdAt = createdAt
    }
}
