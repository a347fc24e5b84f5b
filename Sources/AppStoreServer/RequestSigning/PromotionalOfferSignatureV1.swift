public import Foundation

/// A promotional offer signature in the original format (StoreKit 1 `SKPaymentDiscount`, StoreKit 2
/// `Product.SubscriptionOffer.Signature`): what the app needs, as JSON `{keyId, nonce, timestamp,
/// signature}`.
public struct PromotionalOfferSignatureV1: Codable, Hashable, Sendable {
    /// The App Store Connect key id that signed.
    public let keyId: String
    /// The one-time nonce, a lowercase UUID string.
    public let nonce: String
    /// When the signature was made, in milliseconds since 1970 (the offer is valid for 24 hours).
    public let timestamp: Int64
    /// The ECDSA P-256/SHA-256 signature, DER, in standard base64.
    public let signature: String

    /// Creates a value.
    public init(keyId: String, nonce: String, timestamp: Int64, signature: String) {
        self.keyId = keyId
        self.nonce = nonce
        self.timestamp = timestamp
        self.signature = signature
    }
}

/// Signs promotional offers in the original format: ECDSA P-256/SHA-256 over the UTF-8 of bundle id,
/// key id, product id, offer id, app account token, nonce and timestamp, joined by U+2063 INVISIBLE
/// SEPARATOR (see `message(...)`).
public struct PromotionalOfferV1Signer: Sendable {
    private let key: AppStoreSigningKey
    private let bundleId: String
    private let clock: any WallClock
    private let nonces: RequestNonceGenerator

    /// The separator between the fields of the signed message, U+2063 INVISIBLE SEPARATOR.
    public static let separator: Character = "\u{2063}"

    /// A signer for the app `bundleId`, with the key downloaded for in-app purchases.
    public init(
        key: AppStoreSigningKey, bundleId: String, clock: any WallClock = SystemWallClock(),
        nonces: RequestNonceGenerator = .system
    ) throws(RequestSigningError) {
        try RequestSigningError.requireNonEmpty(bundleId, "the bundle id")
        self.key = key
        self.bundleId = bundleId
        self.clock = clock
        self.nonces = nonces
    }

    /// Signs the offer `offerId` of the subscription `productId`, with a fresh nonce and the current
    /// time. `appAccountToken`, when given, must be the one the app passes to the purchase.
    public func sign(
        productId: String, offerId: String, appAccountToken: UUID? = nil
    ) throws(RequestSigningError) -> PromotionalOfferSignatureV1 {
        let nonce = nonces.next()
        let timestamp = Int64((clock.now().timeIntervalSince1970 * 1000).rounded(.down))
        let message = try Self.message(
            bundleId: bundleId, keyId: key.keyId, productId: productId, offerId: offerId,
            appAccountToken: appAccountToken, nonce: nonce, timestamp: timestamp)
        let signature: Data
        do {
            signature = try key.privateKey.signature(for: message).derRepresentation
        } catch {
            throw RequestSigningError(.signingFailed, "ECDSA signing failed with key \(key.keyId)")
        }
        return PromotionalOfferSignatureV1(
            keyId: key.keyId, nonce: RequestNonceGenerator.format(nonce), timestamp: timestamp,
            signature: signature.base64EncodedString())
    }

    /// The exact bytes signed: the UTF-8 of `bundleId`, `keyId`, `productId`, `offerId`,
    /// `appAccountToken` (lowercase UUID, or empty when nil), `nonce` (lowercase UUID) and `timestamp`
    /// (decimal milliseconds), joined by U+2063. A field containing U+2063 is refused: it would let two
    /// different offers sign the same message.
    public static func message(
        bundleId: String, keyId: String, productId: String, offerId: String, appAccountToken: UUID?, nonce: UUID,
        timestamp: Int64
    ) throws(RequestSigningError) -> Data {
        let fields: [(String, String)] = [
            ("bundle id", bundleId), ("key id", keyId), ("product id", productId), ("offer id", offerId),
            ("app account token", appAccountToken.map(RequestNonceGenerator.format) ?? ""),
            ("nonce", RequestNonceGenerator.format(nonce)), ("timestamp", String(timestamp)),
        ]
        for (name, value) in fields {
            guard !value.unicodeScalars.contains("\u{2063}") else {
                throw RequestSigningError(.invalidInput, "the \(name) contains U+2063, the field separator")
            }
            if name != "app account token" { try RequestSigningError.requireNonEmpty(value, "the \(name)") }
        }
        return Data(fields.map(\.1).joined(separator: String(separator)).utf8)
    }
}
