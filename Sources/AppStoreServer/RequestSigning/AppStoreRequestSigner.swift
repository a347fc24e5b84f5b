import Foundation

/// Signs the JWS that StoreKit requests carry (promotional offers, introductory offer eligibility,
/// Advanced Commerce in-app requests). Every token has the header `alg` ES256, `kid`, `typ` JWT and
/// the base claims `iss`, `iat`, `aud`, `bid`, `nonce` (a fresh lowercase UUID), plus the feature's
/// own claims — and nothing else.
public struct AppStoreRequestSigner: Sendable {
    private let key: AppStoreSigningKey
    private let issuerId: String
    private let bundleId: String
    private let clock: any WallClock
    private let nonces: RequestNonceGenerator

    /// A signer with an App Store Connect key, the issuer id of its team and the app's bundle id.
    public init(
        key: AppStoreSigningKey, issuerId: String, bundleId: String, clock: any WallClock = SystemWallClock(),
        nonces: RequestNonceGenerator = .system
    ) throws(RequestSigningError) {
        guard !issuerId.isEmpty else { throw RequestSigningError(.invalidConfiguration, "the issuer id is empty") }
        guard !bundleId.isEmpty else { throw RequestSigningError(.invalidConfiguration, "the bundle id is empty") }
        self.key = key
        self.issuerId = issuerId
        self.bundleId = bundleId
        self.clock = clock
        self.nonces = nonces
    }

    /// The `aud` of each feature.
    enum Audience: String {
        case promotionalOffer = "promotional-offer"
        case introductoryOfferEligibility = "introductory-offer-eligibility"
        case advancedCommerce = "advanced-commerce-api"
    }

    /// Signs the base claims for `audience` plus `featureClaims`.
    func sign(audience: Audience, featureClaims: [String: JWSClaim]) throws(RequestSigningError) -> String {
        var claims: [String: JWSClaim] = [
            "iss": .string(issuerId),
            "iat": .integer(ES256JWS.numericDate(clock.now())),
            "aud": .string(audience.rawValue),
            "bid": .string(bundleId),
            "nonce": .string(RequestNonceGenerator.format(nonces.next())),
        ]
        claims.merge(featureClaims) { base, _ in base }
        return try ES256JWS.sign(header: ES256JWS.appStoreHeader(keyId: key.keyId), claims: claims, with: key)
    }
}
