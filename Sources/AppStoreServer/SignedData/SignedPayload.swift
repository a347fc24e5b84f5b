public import Foundation

/// A payload type Apple signs as a JWS, and what it claims about the app it belongs to.
public protocol SignedPayload: Decodable, Sendable {
    /// The date the chain is validated at when online checks are off: `signedDate`, or
    /// `receiptCreationDate` for an app transaction.
    var verificationDate: Date? { get }
    /// The app identity the payload carries, checked against the verifier's configuration.
    var claimedIdentity: ClaimedAppIdentity { get }
    /// What a payload of this type claims about its app, read from its JSON before anything is
    /// verified, for a caller that wants the claim alone (``ClaimedAppIdentity/unverified(_:as:maxLength:)``;
    /// to verify next, ``UnverifiedSignedData`` decodes once for both): by default the whole payload
    /// decoded; a type may read only the fields its claim is made of.
    static func unverifiedClaim(fromJSON json: Data) throws -> ClaimedAppIdentity
}

extension SignedPayload {
    public static func unverifiedClaim(fromJSON json: Data) throws -> ClaimedAppIdentity {
        try AppStoreJSON.makeDecoder().decode(Self.self, from: json).claimedIdentity
    }
}

/// What a payload says about the app it belongs to. A field a payload type does not carry is
/// `.notCarried` and is not checked; a carried field that is missing is checked (and mismatches).
public struct ClaimedAppIdentity: Sendable, Hashable {
    /// One identity field of a payload.
    public enum Claim<Value: Sendable & Hashable>: Sendable, Hashable {
        /// This payload type does not carry the field; the check does not apply.
        case notCarried
        /// The payload's value (nil when the payload omits it).
        case carried(Value?)
    }

    public var bundleId: Claim<String>
    public var appAppleId: Claim<Int64>
    public var environment: Claim<Environment>

    public init(
        bundleId: Claim<String> = .notCarried,
        appAppleId: Claim<Int64> = .notCarried,
        environment: Claim<Environment> = .notCarried
    ) {
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
    }
}
