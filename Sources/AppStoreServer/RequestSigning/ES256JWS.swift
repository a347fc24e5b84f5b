import Crypto
import Foundation

/// A JSON value of a JWS header or claim: the only kinds App Store requests use.
enum JWSClaim: Encodable, Hashable, Sendable {
    case string(String)
    case integer(Int64)
    case bool(Bool)

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        }
    }
}

/// Builds an ES256 compact JWS from exactly the header members and claims given:
/// `base64url(header JSON) "." base64url(claims JSON) "." base64url(r‖s)`, the signature the raw
/// 64-byte form JWS requires (RFC 7518 §3.4), not DER. Members are written with sorted keys, so
/// the same inputs give the same header and payload bytes.
enum ES256JWS {
    static func sign(
        header: [String: JWSClaim], claims: [String: JWSClaim], with key: AppStoreSigningKey
    ) throws(RequestSigningError) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let headerJSON: Data
        let claimsJSON: Data
        do {
            headerJSON = try encoder.encode(header)
            claimsJSON = try encoder.encode(claims)
        } catch {
            throw RequestSigningError(.signingFailed, "the JWS header or claims could not be encoded as JSON")
        }
        let signingInput = Base64URL.encode(headerJSON) + "." + Base64URL.encode(claimsJSON)
        let signature: P256.Signing.ECDSASignature
        do {
            signature = try key.privateKey.signature(for: Data(signingInput.utf8))
        } catch {
            throw RequestSigningError(.signingFailed, "ES256 signing failed with key \(key.keyId)")
        }
        return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
    }

    /// The header every App Store JWS carries: `alg` ES256, the key's `kid`, `typ` JWT — nothing else.
    static func appStoreHeader(keyId: String) -> [String: JWSClaim] {
        ["alg": .string("ES256"), "kid": .string(keyId), "typ": .string("JWT")]
    }

    /// Whole seconds since 1970, rounded down: the JWT `NumericDate` of `date`.
    static func numericDate(_ date: Date) -> Int64 {
        Int64(date.timeIntervalSince1970.rounded(.down))
    }
}
