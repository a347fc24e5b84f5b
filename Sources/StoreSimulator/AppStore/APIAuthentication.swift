import AppStoreServer
import Crypto
import Foundation

/// Checks App Store Server API bearer tokens the way Apple does: an ES256 JWT whose `kid` names a
/// registered key, `aud` `appstoreconnect-v1`, `iss` present, `bid` a known app, an `exp` in the
/// future and a lifetime of at most an hour. `iat` is optional, as at Apple (Apple's own App Store
/// Server Library sends none): without it the hour counts from now.
///
/// Times are judged on the real clock — a client cannot know the simulated time — and, for a client
/// that shares the simulator's clock (the demo's server), on the simulated clock: a token valid on
/// either is accepted.
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
    ///
    /// - Parameter now: the times the token may be valid at (the real and the simulated now).
    static func authenticate(
        authorization: String?, keys: [String: P256.Signing.PublicKey], now: [Date]
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
        guard let exp = claims.exp, let bid = claims.bid, claims.iss != nil else {
            throw .unauthenticated("missing claims")
        }
        guard now.contains(where: { isCurrent(iat: claims.iat, exp: exp, at: $0.timeIntervalSince1970) }) else {
            throw .unauthenticated("expired or not yet valid")
        }
        return bid
    }

    /// Tolerated difference between the client's clock and the one the token is judged on.
    static let skew: Double = 60

    /// Whether a token issued at `iat` (nil: not given) and expiring at `exp` is valid at `now`, with
    /// a lifetime of at most an hour (seconds since 1970).
    static func isCurrent(iat: Double?, exp: Double, at now: Double) -> Bool {
        guard exp > now else { return false }
        guard let iat else { return exp - now <= 3_600 + skew }
        return iat <= now + skew && exp > iat && exp - iat <= 3_600
    }
}
