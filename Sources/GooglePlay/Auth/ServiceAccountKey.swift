public import Foundation
package import _CryptoExtras

/// A Google Cloud service account's JSON key, as downloaded from the Cloud console: the account's
/// email, the id and PKCS#8 PEM of its RSA private key, and the OAuth 2.0 token URL to exchange
/// signed assertions at.
///
/// Its `description` names the account and key id only; the private key never appears in any
/// description, error or log.
public struct ServiceAccountKey: Sendable, CustomStringConvertible {
    /// The JSON key's `type`; always `service_account`.
    public var type: String
    /// `project_id`, when present.
    public var projectID: String?
    /// `private_key_id`: sent as the assertion's `kid`.
    public var privateKeyID: String
    /// `client_email`: the account, sent as the assertion's `iss`.
    public var clientEmail: String
    /// `client_id`, when present.
    public var clientID: String?
    /// `token_uri`: where assertions are exchanged for access tokens (and the assertion's `aud`).
    public var tokenURI: String
    /// The RSA private key.
    package let privateKey: _RSA.Signing.PrivateKey

    /// The account and key id, without key material.
    public var description: String { "ServiceAccountKey(\(clientEmail), key id \(privateKeyID))" }

    /// Google's token endpoint, used when a key has no `token_uri`.
    public static let defaultTokenURI = "https://oauth2.googleapis.com/token"

    private struct Wire: Decodable {
        var type: String?
        var project_id: String?
        var private_key_id: String?
        var private_key: String?
        var client_email: String?
        var client_id: String?
        var token_uri: String?
    }

    /// Parses a JSON key.
    public init(jsonData: Data) throws(ServiceAccountKeyError) {
        let wire: Wire
        do {
            wire = try JSONDecoder().decode(Wire.self, from: jsonData)
        } catch {
            throw ServiceAccountKeyError(.malformedJSON, "the key is not a JSON object with string fields")
        }
        guard let type = wire.type else { throw ServiceAccountKeyError(.missingField, "no \"type\"") }
        guard type == "service_account" else {
            throw ServiceAccountKeyError(.wrongType, "\"type\" is \"\(type.prefix(40))\", not \"service_account\"")
        }
        guard let email = wire.client_email, !email.isEmpty else {
            throw ServiceAccountKeyError(.missingField, "no \"client_email\"")
        }
        guard let keyID = wire.private_key_id, !keyID.isEmpty else {
            throw ServiceAccountKeyError(.missingField, "no \"private_key_id\"")
        }
        guard let pem = wire.private_key, !pem.isEmpty else {
            throw ServiceAccountKeyError(.missingField, "no \"private_key\"")
        }
        let tokenURI = wire.token_uri ?? Self.defaultTokenURI
        guard let url = URL(string: tokenURI), let scheme = url.scheme?.lowercased(),
            scheme == "https" || scheme == "http", url.host != nil
        else {
            throw ServiceAccountKeyError(.invalidTokenURI, "\"token_uri\" is not an http(s) URL")
        }
        do {
            // The error from the PEM parser is not forwarded: it could quote key material.
            self.privateKey = try _RSA.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw ServiceAccountKeyError(
                .invalidPrivateKey, "\"private_key\" is not a PEM RSA private key of at least 2048 bits")
        }
        self.type = type
        self.projectID = wire.project_id
        self.privateKeyID = keyID
        self.clientEmail = email
        self.clientID = wire.client_id
        self.tokenURI = tokenURI
    }

    /// Reads and parses the JSON key file at `path`.
    public init(contentsOfFile path: String) throws(ServiceAccountKeyError) {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ServiceAccountKeyError(.unreadable, "cannot read the key file at \(path)")
        }
        try self.init(jsonData: data)
    }
}

/// Why a service account JSON key could not be used. Never contains key material.
public typealias ServiceAccountKeyError = CheckFailure<ServiceAccountKeyErrorReason>

/// The check that failed.
public enum ServiceAccountKeyErrorReason: String, FailureReason, CaseIterable {
    /// The file could not be read.
    case unreadable
    /// Not a JSON object with string members.
    case malformedJSON = "malformed-json"
    /// A required member is absent or empty.
    case missingField = "missing-field"
    /// `type` is not `service_account`.
    case wrongType = "wrong-type"
    /// `private_key` is not a PEM RSA key (PKCS#8 or PKCS#1) of at least 2048 bits.
    case invalidPrivateKey = "invalid-private-key"
    /// `token_uri` is not an http(s) URL.
    case invalidTokenURI = "invalid-token-uri"
}
