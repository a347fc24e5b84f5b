package import Foundation
package import _CryptoExtras

/// A compact JWS/JWT split into its parts, with header and claims decoded as JSON objects. Shared
/// (at package level) by the push authenticator and the simulator's token endpoint.
package struct CompactJWT {
    /// Why a string is not a compact JWT.
    package struct Malformed: Error, CustomStringConvertible {
        /// What was wrong (never the token itself).
        package var description: String
    }

    /// The decoded protected header.
    package var header: [String: Any]
    /// The decoded claims.
    package var claims: [String: Any]
    /// `base64url(header) + "." + base64url(claims)`, the bytes the signature covers.
    package var signingInput: Data
    /// The decoded signature (empty for an unsigned token).
    package var signature: Data

    /// The header's `alg`, if it is a string.
    package var algorithm: String? { header["alg"] as? String }
    /// The header's `kid`, if it is a string.
    package var keyID: String? { header["kid"] as? String }

    /// Splits and decodes `token`; the signature part may be empty (an `alg: none` token), so callers
    /// check the algorithm before relying on it.
    package init(parsing token: String) throws(Malformed) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw Malformed(description: "not three dot-separated parts") }
        guard let headerData = Base64URL.decode(parts[0]), let claimsData = Base64URL.decode(parts[1]) else {
            throw Malformed(description: "a part is not base64url")
        }
        guard let signature = Base64URL.decode(parts[2]) else {
            throw Malformed(description: "the signature is not base64url")
        }
        guard let header = (try? JSONSerialization.jsonObject(with: headerData)) as? [String: Any] else {
            throw Malformed(description: "the header is not a JSON object")
        }
        guard let claims = (try? JSONSerialization.jsonObject(with: claimsData)) as? [String: Any] else {
            throw Malformed(description: "the claims are not a JSON object")
        }
        self.header = header
        self.claims = claims
        self.signingInput = Data((parts[0] + "." + parts[1]).utf8)
        self.signature = signature
    }

    /// Encodes `header` and `claims` (JSON objects) and signs them RS256 (RSASSA-PKCS1-v1_5 with SHA-256).
    package static func signRS256(
        header: [String: Any], claims: [String: Any], key: _RSA.Signing.PrivateKey
    ) throws -> String {
        let input = try encodedPart(header) + "." + encodedPart(claims)
        let signature = try key.signature(for: Data(input.utf8), padding: .insecurePKCS1v1_5)
        return input + "." + Base64URL.encode(signature.rawRepresentation)
    }

    /// base64url of the JSON object (keys sorted, so output is reproducible).
    package static func encodedPart(_ object: [String: Any]) throws -> String {
        Base64URL.encode(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    /// Whether `signature` is a valid RS256 signature of `signingInput` under `key`.
    package func hasValidRS256Signature(for key: _RSA.Signing.PublicKey) -> Bool {
        guard signature.count == key.keySizeInBits / 8 else { return false }
        return key.isValidSignature(
            _RSA.Signing.RSASignature(rawRepresentation: signature), for: signingInput, padding: .insecurePKCS1v1_5)
    }

    /// A numeric claim (`exp`, `iat`) as seconds since 1970; nil if absent or not a number.
    package func numericDate(_ name: String) -> Date? {
        let value = claims[name]
        guard !(value is Bool) else { return nil }
        let seconds: Double
        switch value {
        case let integer as Int: seconds = Double(integer)
        case let double as Double where double.isFinite: seconds = double
        default: return nil
        }
        return Date(timeIntervalSince1970: seconds)
    }
}
