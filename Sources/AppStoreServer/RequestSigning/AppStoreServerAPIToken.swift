public import Foundation

/// A signed bearer token (JWT) for the App Store Server API. Its description shows only its
/// validity period: the token is a credential until it expires.
public struct AppStoreServerAPIToken: Hashable, Sendable, CustomStringConvertible, CustomReflectable {
    /// The compact JWS to send as `Authorization: Bearer <jwt>`.
    public let jwt: String
    /// The `iat` claim.
    public let issuedAt: Date
    /// The `exp` claim.
    public let expiresAt: Date

    /// The value of the `Authorization` header.
    public var authorizationHeaderValue: String { "Bearer " + jwt }

    /// The validity period only: the token itself is a credential.
    public var description: String {
        "AppStoreServerAPIToken(issuedAt: \(issuedAt), expiresAt: \(expiresAt))"
    }
    /// A mirror without the token, for `dump` and reflection.
    public var customMirror: Mirror {
        Mirror(self, children: ["issuedAt": issuedAt, "expiresAt": expiresAt], displayStyle: .struct)
    }

    /// The longest lifetime Apple accepts: `exp` at most 60 minutes after `iat`.
    public static let maximumLifetime: TimeInterval = 60 * 60

    /// Signs a token issued at `date`: header `alg` ES256, `kid`, `typ` JWT; claims `iss`, `iat`,
    /// `exp` (`iat` + `lifetime`, whole seconds), `aud` `appstoreconnect-v1`, `bid`.
    public static func sign(
        key: AppStoreSigningKey, issuerId: String, bundleId: String, issuedAt date: Date,
        lifetime: TimeInterval = 20 * 60
    ) throws(RequestSigningError) -> AppStoreServerAPIToken {
        try validate(issuerId: issuerId, bundleId: bundleId, lifetime: lifetime)
        let iat = ES256JWS.numericDate(date)
        let exp = iat + Int64(lifetime.rounded(.down))
        let claims: [String: JWSClaim] = [
            "iss": .string(issuerId),
            "iat": .integer(iat),
            "exp": .integer(exp),
            "aud": .string("appstoreconnect-v1"),
            "bid": .string(bundleId),
        ]
        let jwt = try ES256JWS.sign(header: ES256JWS.appStoreHeader(keyId: key.keyId), claims: claims, with: key)
        return AppStoreServerAPIToken(
            jwt: jwt,
            issuedAt: Date(timeIntervalSince1970: TimeInterval(iat)),
            expiresAt: Date(timeIntervalSince1970: TimeInterval(exp)))
    }

    static func validate(issuerId: String, bundleId: String, lifetime: TimeInterval) throws(RequestSigningError) {
        guard !issuerId.isEmpty else { throw RequestSigningError(.invalidConfiguration, "the issuer id is empty") }
        guard !bundleId.isEmpty else { throw RequestSigningError(.invalidConfiguration, "the bundle id is empty") }
        guard lifetime >= 1, lifetime <= maximumLifetime else {
            throw RequestSigningError(
                .invalidConfiguration,
                "an App Store Server API token lives 1 s to \(Int(maximumLifetime)) s (60 minutes); \(lifetime) s asked"
            )
        }
    }
}
