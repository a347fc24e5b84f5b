import AppStoreServer
import Crypto
import Foundation

/// Checks App Store Server API bearer tokens the way Apple does: an ES256 JWT whose `kid` names a
/// registered key, `aud` `appstoreconnect-v1`, `bid` a known app, and `iat`/`exp` valid on the
/// simulated clock with a lifetime of at most an hour.
struct APIAuthenticator: Sendable {
    struct Header: Decodable {
        var alg: String?
        var kid: String?
        var typ: String?
    }

    struct Claims: Decodable {
        var iss: String?
        var iat: Double?
        var exp: Double?
        var aud: String?
        var bid: String?
    }

    enum Failure: Error, Equatable {
        case unauthenticated(String)
    }

    /// Returns the bundle id the token is for.
    static func authenticate(
        authorization: String?, keys: [String: P256.Signing.PublicKey], now: Date
    ) throws(Failure) -> String {
        guard let authorization, authorization.hasPrefix("Bearer ") else {
            throw .unauthenticated("missing bearer token")
        }
        let token = authorization.dropFirst("Bearer ".count)
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Base64URL.decode(parts[0]),
            let claimsData = Base64URL.decode(parts[1]), let signatureData = Base64URL.decode(parts[2]),
            let header = try? JSONDecoder().decode(Header.self, from: headerData),
            let claims = try? JSONDecoder().decode(Claims.self, from: claimsData)
        else { throw .unauthenticated("malformed token") }
        guard header.alg == "ES256", let kid = header.kid, let key = keys[kid] else {
            throw .unauthenticated("unknown key or algorithm")
        }
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureData),
            key.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8))
        else { throw .unauthenticated("bad signature") }
        guard claims.aud == "appstoreconnect-v1" else { throw .unauthenticated("wrong audience") }
        guard let iat = claims.iat, let exp = claims.exp, let bid = claims.bid, claims.iss != nil else {
            throw .unauthenticated("missing claims")
        }
        let nowSeconds = now.timeIntervalSince1970
        guard iat <= nowSeconds + 60, exp > nowSeconds, exp > iat, exp - iat <= 3_600 else {
            throw .unauthenticated("expired or not yet valid")
        }
        return bid
    }
}
