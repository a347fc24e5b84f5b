/// Why a signed App Store payload was refused. Each case names the one check that failed, in the
/// order the verifier runs them, so callers (and the CLI) can say exactly what was wrong.
public typealias SignedDataVerificationError = CheckFailure<SignedDataVerificationReason>

/// The check that failed.
public enum SignedDataVerificationReason: String, FailureReason, CaseIterable {
    /// The input is larger than the configured limit; nothing else was read.
    case inputTooLarge = "input-too-large"
    /// Not a compact JWS: not exactly three base64url parts, or a part does not decode.
    case malformedJWS = "malformed-jws"
    /// The protected header is not a JSON object with the required members.
    case malformedHeader = "malformed-header"
    /// The header's `alg` is not `ES256`.
    case unsupportedAlgorithm = "unsupported-algorithm"
    /// The header's `x5c` does not hold exactly three certificates.
    case wrongCertificateCount = "wrong-certificate-count"
    /// The leaf or intermediate certificate does not parse.
    case malformedCertificate = "malformed-certificate"
    /// The payload is not JSON of the expected shape, or lacks the date to verify it at.
    case malformedPayload = "malformed-payload"
    /// The chain leaf → intermediate → configured root does not validate at the effective date.
    case untrustedChain = "untrusted-chain"
    /// The intermediate lacks Apple's WWDR intermediate marker (OID 1.2.840.113635.100.6.2.1).
    case missingIntermediateMarker = "missing-intermediate-marker"
    /// The leaf lacks Apple's receipt-signing marker (OID 1.2.840.113635.100.6.11.1).
    case missingLeafMarker = "missing-leaf-marker"
    /// The leaf's public key is not a P-256 key.
    case unsupportedLeafKey = "unsupported-leaf-key"
    /// The signature is not a 64-byte raw r‖s ES256 signature.
    case malformedSignature = "malformed-signature"
    /// The signature does not verify over the signing input with the leaf's key.
    case invalidSignature = "invalid-signature"
    /// The payload's bundle id is not the configured one.
    case bundleIdMismatch = "bundle-id-mismatch"
    /// The payload's app Apple id is not the configured one (checked in production).
    case appAppleIdMismatch = "app-apple-id-mismatch"
    /// The payload's environment is not the configured one.
    case environmentMismatch = "environment-mismatch"
    /// OCSP reports a certificate of the chain revoked, or the OCSP answer is unusable.
    case revocationCheckFailed = "revocation-check-failed"
    /// The OCSP responder could not be reached. Retryable: the payload may well be genuine.
    case revocationCheckUnavailable = "revocation-check-unavailable"
}

extension CheckFailure where R == SignedDataVerificationReason {
    /// Whether trying again later may succeed (only a network failure of the online revocation check).
    public var isRetryable: Bool { reason == .revocationCheckUnavailable }
}
