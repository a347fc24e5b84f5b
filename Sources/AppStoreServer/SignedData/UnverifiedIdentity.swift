import Foundation

extension ClaimedAppIdentity {
    /// What `token` claims about its app, read **without verifying anything**: only to choose the
    /// verifier (the app and environment) that then checks the token and these very claims. Uses
    /// the payload type's own ``SignedPayload/claimedIdentity``, so a notification is routed by
    /// `data`, `summary`, `externalPurchaseToken` or `appData`, whichever it carries.
    ///
    /// Throws the same errors verification would for a token that is not a compact JWS or whose
    /// payload is not a `Payload`.
    public static func unverified<Payload: SignedPayload>(
        _ token: String, as payloadType: Payload.Type, maxLength: Int = 128 * 1024
    ) throws(SignedDataVerificationError) -> ClaimedAppIdentity {
        let jws = try CompactJWS(parsing: token, maxLength: maxLength)
        let bytes = try jws.decodePayload()
        do {
            return try Payload.unverifiedClaim(fromJSON: bytes)
        } catch {
            throw SignedDataVerificationError(.malformedPayload, "the payload is not a valid \(Payload.self)")
        }
    }

    /// The claimed bundle id, if the payload type carries one and the payload has it.
    public var claimedBundleId: String? {
        if case .carried(let value) = bundleId { return value }
        return nil
    }

    /// The claimed environment, if the payload type carries one and the payload has it.
    public var claimedEnvironment: Environment? {
        if case .carried(let value) = environment { return value }
        return nil
    }
}
