import Foundation

/// A compact JWS read but not verified: split into its parts, its payload decoded as `Payload`.
/// Routing reads the identity it claims to pick the verifier of that app and environment, and that
/// verifier checks it (``SignedDataVerifier/verifyKeepingJSON(_:)``) without decoding the payload a
/// second time. The payload was decoding twice on the notification path (the ingest profile:
/// about 2 % of the process). Nothing in it is to be trusted until verified.
public struct UnverifiedSignedData<Payload: SignedPayload>: Sendable {
    let jws: CompactJWS
    /// The payload's JSON, as signed.
    let payloadJSON: Data
    /// The decoded payload, or why it isn't one: thrown where verification checks the payload,
    /// after the signature's encoding and the header, so that errors come in the same order as
    /// when verification reads the token itself.
    let payload: Result<Payload, SignedDataVerificationError>
    /// The token's length in bytes, checked again against the verifier's own limit.
    let byteCount: Int

    /// Splits `token` and decodes its payload; throws what is wrong with the token's form.
    public init(
        parsing token: String, as payloadType: Payload.Type = Payload.self, maxLength: Int = 128 * 1024
    ) throws(SignedDataVerificationError) {
        jws = try CompactJWS(parsing: token, maxLength: maxLength)
        payloadJSON = try jws.decodePayload()
        do {
            payload = .success(try AppStoreJSON.makeDecoder().decode(Payload.self, from: payloadJSON))
        } catch {
            payload = .failure(
                SignedDataVerificationError(
                    .malformedPayload,
                    "the payload is not a valid \(Payload.self): \(SignedDataVerifier.describe(error))"))
        }
        byteCount = token.utf8.count
    }

    /// What the payload says about its app, unverified: which verifier to ask. Throws
    /// `malformedPayload` if the payload is not a `Payload`.
    public func claimedIdentity() throws(SignedDataVerificationError) -> ClaimedAppIdentity {
        try payload.get().claimedIdentity
    }
}
