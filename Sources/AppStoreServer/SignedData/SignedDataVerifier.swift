import Crypto
public import Foundation
import SwiftASN1
@_spi(FixedExpiryValidationTime) import X509

/// Verifies JWS-signed App Store data — notifications, transactions, renewal infos, app
/// transactions, retention-messaging requests — and decodes it.
///
/// Checks run in a fixed order and the first failure is reported as a specific
/// ``SignedDataVerificationError``: format and header; certificate parsing; the chain leaf →
/// intermediate → one of the configured roots (never `x5c[2]`) under RFC 5280 at the effective date;
/// Apple's marker extensions; the leaf's P-256 key and the ES256 signature; then bundle id, app Apple
/// id and environment against the configuration. Validated chains are cached, so steady state costs
/// one ECDSA verification plus decoding.
public struct SignedDataVerifier: Sendable {
    /// What the verifier trusts and expects.
    public struct Configuration: Sendable {
        /// The roots a chain must end in.
        public var trustedRoots: TrustedRoots
        /// The bundle id payloads must carry; nil skips the check.
        public var bundleId: String?
        /// The app's Apple id; required when `environment` is production, where it is checked.
        public var appAppleId: Int64?
        /// The environment payloads must come from; nil skips the check.
        public var environment: Environment?
        /// The date the chain is validated at. Online checks always use the current time.
        public var effectiveDate: EffectiveDate
        /// Check revocation by OCSP with hard failure, validating the chain at the current time.
        public var onlineChecks: Bool
        /// Inputs longer than this are refused before they are parsed. Real payloads are under 20 KiB.
        public var maxInputBytes: Int
        /// How many validated chains to keep.
        public var chainCacheCapacity: Int
        /// How long a validated chain (and, online, its revocation answer) is reused.
        public var chainCacheTimeToLive: TimeInterval

        public init(
            trustedRoots: TrustedRoots,
            bundleId: String? = nil,
            appAppleId: Int64? = nil,
            environment: Environment? = nil,
            effectiveDate: EffectiveDate = .signingDate,
            onlineChecks: Bool = false,
            maxInputBytes: Int = 128 * 1024,
            chainCacheCapacity: Int = 64,
            chainCacheTimeToLive: TimeInterval = 15 * 60
        ) {
            self.trustedRoots = trustedRoots
            self.bundleId = bundleId
            self.appAppleId = appAppleId
            self.environment = environment
            self.effectiveDate = effectiveDate
            self.onlineChecks = onlineChecks
            self.maxInputBytes = maxInputBytes
            self.chainCacheCapacity = chainCacheCapacity
            self.chainCacheTimeToLive = chainCacheTimeToLive
        }
    }

    /// The date a chain is validated at.
    public enum EffectiveDate: Sendable, Hashable {
        /// The payload's `signedDate` (`receiptCreationDate` for an app transaction), or the current
        /// time when the payload has none — Apple's rule for offline verification.
        case signingDate
        /// The current time.
        case currentTime
        /// A fixed date (to re-check old payloads, or in tests).
        case fixed(Date)
    }

    /// A configuration that cannot verify correctly.
    public struct ConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String
    }

    public let configuration: Configuration
    private let rootStore: CertificateStore
    private let cache: VerifiedChainCache
    private let clock: any WallClock
    private let ocspTransport: (any OCSPTransport)?

    /// - Parameters:
    ///   - ocspTransport: how OCSP requests are sent when `onlineChecks` is on (see ``HTTPOCSPTransport``).
    ///   - clock: the current time, for online checks and cache expiry.
    public init(
        configuration: Configuration,
        ocspTransport: (any OCSPTransport)? = nil,
        clock: any WallClock = SystemWallClock()
    ) throws(ConfigurationError) {
        if configuration.environment == .production, configuration.appAppleId == nil {
            throw ConfigurationError(description: "an app Apple id is required to verify production payloads")
        }
        if configuration.onlineChecks, ocspTransport == nil {
            throw ConfigurationError(description: "online checks need an OCSP transport")
        }
        self.configuration = configuration
        self.rootStore = CertificateStore(configuration.trustedRoots.certificates)
        self.cache = VerifiedChainCache(
            capacity: configuration.chainCacheCapacity, timeToLive: configuration.chainCacheTimeToLive)
        self.clock = clock
        self.ocspTransport = ocspTransport
    }

    /// How the validated-chain cache has served lookups (for metrics and tests).
    public var chainCacheStatistics: ChainCacheStatistics { cache.statistics }

    /// Verifies `token` and decodes its payload as `Payload`.
    public func verify<Payload: SignedPayload>(
        _ token: String, as payloadType: Payload.Type = Payload.self
    ) async throws(SignedDataVerificationError) -> Payload {
        try await verifyKeepingJSON(token, as: payloadType).payload
    }

    /// Verifies `token` and decodes its payload as `Payload`; also returns the payload's JSON as
    /// signed, for a caller that keeps it (re-encoding the decoded value costs more than the decode).
    public func verifyKeepingJSON<Payload: SignedPayload>(
        _ token: String, as payloadType: Payload.Type = Payload.self
    ) async throws(SignedDataVerificationError) -> (payload: Payload, json: Data) {
        try await verifyKeepingJSON(
            UnverifiedSignedData(parsing: token, as: payloadType, maxLength: configuration.maxInputBytes))
    }

    /// ``verifyKeepingJSON(_:as:)`` of a token already read (to pick this verifier by the identity
    /// it claims): its payload is not decoded again.
    public func verifyKeepingJSON<Payload: SignedPayload>(
        _ unverified: UnverifiedSignedData<Payload>
    ) async throws(SignedDataVerificationError) -> (payload: Payload, json: Data) {
        // Read under another limit, perhaps: this verifier's own applies.
        guard unverified.byteCount <= configuration.maxInputBytes else {
            throw SignedDataVerificationError(
                .inputTooLarge,
                "input is \(unverified.byteCount) bytes; the limit is \(configuration.maxInputBytes) bytes")
        }
        let (jws, payloadBytes) = (unverified.jws, unverified.payloadJSON)
        let signatureBytes = try jws.decodeSignature()

        // A header seen before with a validated chain needs no decoding (see VerifiedChainCache).
        let key: VerifiedChainCache.Key
        if let known = cache.key(forHeader: jws.encodedHeader) {
            key = known
        } else {
            key = try chainKey(from: jws.decodeHeader())
        }

        let payload = try unverified.payload.get()
        let now = clock.now()
        let effectiveDate: Date
        switch configuration.onlineChecks ? .currentTime : configuration.effectiveDate {
        case .signingDate: effectiveDate = payload.verificationDate ?? now
        case .currentTime: effectiveDate = now
        case .fixed(let date): effectiveDate = date
        }

        let leafKey: P256.Signing.PublicKey
        if let cached = cache.leafKey(for: key, effectiveDate: effectiveDate, now: now) {
            leafKey = cached
        } else {
            let entry = try await validateChain(
                leafDER: key.leaf, intermediateDER: key.intermediate, effectiveDate: effectiveDate, now: now)
            cache.insert(entry, for: key, header: jws.encodedHeader)
            leafKey = entry.leafKey
        }

        guard signatureBytes.count == 64,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes)
        else {
            throw SignedDataVerificationError(
                .malformedSignature,
                "the signature is \(signatureBytes.count) bytes; ES256 signatures are 64 bytes (r‖s)")
        }
        guard leafKey.isValidSignature(signature, for: Data(jws.signingInput.utf8)) else {
            throw SignedDataVerificationError(
                .invalidSignature, "the signature does not verify with the leaf certificate's key")
        }

        try checkIdentity(payload.claimedIdentity)
        return (payload, payloadBytes)
    }

    /// Checks `alg` and `x5c` and returns the chain's cache key: the DER bytes of leaf and intermediate.
    private func chainKey(from header: CompactJWS.Header) throws(SignedDataVerificationError) -> VerifiedChainCache.Key
    {
        guard let algorithm = header.alg else {
            throw SignedDataVerificationError(.malformedHeader, "the header has no alg")
        }
        guard algorithm == "ES256" else {
            throw SignedDataVerificationError(
                .unsupportedAlgorithm, "alg is \(algorithm); App Store data is signed with ES256")
        }
        guard let x5c = header.x5c else {
            throw SignedDataVerificationError(.malformedHeader, "the header has no x5c certificate chain")
        }
        guard x5c.count == 3 else {
            throw SignedDataVerificationError(
                .wrongCertificateCount, "x5c holds \(x5c.count) certificates; App Store data carries exactly 3")
        }
        guard let leafDER = Data(base64Encoded: x5c[0]) else {
            throw SignedDataVerificationError(.malformedCertificate, "x5c[0] (leaf) is not valid base64")
        }
        guard let intermediateDER = Data(base64Encoded: x5c[1]) else {
            throw SignedDataVerificationError(.malformedCertificate, "x5c[1] (intermediate) is not valid base64")
        }
        return VerifiedChainCache.Key(leaf: leafDER, intermediate: intermediateDER)
    }

    /// Validates leaf → intermediate → a configured root at `effectiveDate`, then Apple's markers,
    /// then (online) revocation, and returns the cache entry for the chain.
    private func validateChain(
        leafDER: Data, intermediateDER: Data, effectiveDate: Date, now: Date
    ) async throws(SignedDataVerificationError) -> VerifiedChainCache.Entry {
        let leaf: Certificate
        let intermediate: Certificate
        do {
            leaf = try Certificate(derEncoded: Array(leafDER))
        } catch {
            throw SignedDataVerificationError(.malformedCertificate, "x5c[0] (leaf) is not an X.509 certificate")
        }
        do {
            intermediate = try Certificate(derEncoded: Array(intermediateDER))
        } catch {
            throw SignedDataVerificationError(
                .malformedCertificate, "x5c[1] (intermediate) is not an X.509 certificate")
        }

        var verifier = Verifier(rootCertificates: rootStore) {
            RFC5280Policy(fixedExpiryValidationTime: effectiveDate)
            PinnedPathPolicy(intermediate: intermediate)
        }
        let chain: ValidatedCertificateChain
        switch await verifier.validate(leaf: leaf, intermediates: CertificateStore([intermediate])) {
        case .validCertificate(let validated):
            chain = validated
        case .couldNotValidate:
            throw SignedDataVerificationError(
                .untrustedChain,
                "the chain does not validate at \(Self.format(effectiveDate)): "
                    + diagnoseChain(leaf: leaf, intermediate: intermediate, at: effectiveDate))
        }

        guard intermediate.extensions[oid: AppleCertificateMarkers.wwdrIntermediate] != nil else {
            throw SignedDataVerificationError(
                .missingIntermediateMarker,
                "the intermediate certificate lacks Apple's marker extension 1.2.840.113635.100.6.2.1")
        }
        guard leaf.extensions[oid: AppleCertificateMarkers.receiptSigner] != nil else {
            throw SignedDataVerificationError(
                .missingLeafMarker, "the leaf certificate lacks Apple's marker extension 1.2.840.113635.100.6.11.1")
        }
        guard let leafKey = P256.Signing.PublicKey(leaf.publicKey) else {
            throw SignedDataVerificationError(.unsupportedLeafKey, "the leaf certificate's key is not a P-256 key")
        }

        if configuration.onlineChecks, let ocspTransport {
            try await checkRevocation(of: leaf, intermediate: intermediate, transport: ocspTransport, now: now)
        }

        let certificates = Array(chain)
        return VerifiedChainCache.Entry(
            leafKey: leafKey,
            validFrom: certificates.map(\.notValidBefore).max() ?? effectiveDate,
            validUntil: certificates.map(\.notValidAfter).min() ?? effectiveDate,
            storedAt: now
        )
    }

    /// Says in a few words why leaf → intermediate → root failed (the policy's own reasons embed
    /// whole certificate dumps).
    private func diagnoseChain(leaf: Certificate, intermediate: Certificate, at date: Date) -> String {
        for (name, certificate) in [("leaf", leaf), ("intermediate", intermediate)] {
            if date > certificate.notValidAfter {
                return "the \(name) certificate expired at \(Self.format(certificate.notValidAfter))"
            }
            if date < certificate.notValidBefore {
                return "the \(name) certificate is not valid before \(Self.format(certificate.notValidBefore))"
            }
        }
        if case .isCertificateAuthority = try? intermediate.extensions.basicConstraints {
        } else {
            return "the intermediate certificate is not a CA"
        }
        guard intermediate.publicKey.isValidSignature(leaf.signature, for: leaf) else {
            return "the leaf certificate is not signed by the intermediate in x5c[1]"
        }
        let issuers = configuration.trustedRoots.certificates.filter {
            $0.subject == intermediate.issuer
                && $0.publicKey.isValidSignature(intermediate.signature, for: intermediate)
        }
        guard let root = issuers.first else {
            return "the intermediate certificate (issuer \(intermediate.issuer)) is not issued by a trusted root"
        }
        if date > root.notValidAfter || date < root.notValidBefore {
            return "the trusted root is not valid at that date"
        }
        return "RFC 5280 path validation failed"
    }

    /// OCSP for leaf and intermediate with hard failure; a responder that cannot be reached is a
    /// distinct, retryable error.
    private func checkRevocation(
        of leaf: Certificate, intermediate: Certificate, transport: any OCSPTransport, now: Date
    ) async throws(SignedDataVerificationError) {
        let recording = RecordingOCSPRequester(transport: transport)
        // RFC 5280 again (cheap, and it is what handles the critical extensions); then OCSP per link.
        var verifier = Verifier(rootCertificates: rootStore) {
            RFC5280Policy(fixedExpiryValidationTime: now)
            PinnedPathPolicy(intermediate: intermediate)
            OCSPVerifierPolicy(failureMode: .hard, requester: recording, fixedExpiryValidationTime: now)
        }
        switch await verifier.validate(leaf: leaf, intermediates: CertificateStore([intermediate])) {
        case .validCertificate:
            return
        case .couldNotValidate(let failures):
            if let networkFailure = recording.firstUnreachableFailure {
                throw SignedDataVerificationError(
                    .revocationCheckUnavailable, "the OCSP responder could not be reached: \(networkFailure)")
            }
            let why = failures.first.map { String(describing: $0.policyFailureReason) } ?? "the chain was refused"
            throw SignedDataVerificationError(.revocationCheckFailed, "OCSP: \(why)")
        }
    }

    private func checkIdentity(_ claimed: ClaimedAppIdentity) throws(SignedDataVerificationError) {
        if let expected = configuration.bundleId, case .carried(let actual) = claimed.bundleId, actual != expected {
            throw SignedDataVerificationError(
                .bundleIdMismatch, "bundle id is \(actual.map { "\"\($0)\"" } ?? "missing"); expected \"\(expected)\"")
        }
        if configuration.environment == .production, let expected = configuration.appAppleId,
            case .carried(let actual) = claimed.appAppleId, actual != expected
        {
            throw SignedDataVerificationError(
                .appAppleIdMismatch, "app Apple id is \(actual.map(String.init) ?? "missing"); expected \(expected)")
        }
        if let expected = configuration.environment, case .carried(let actual) = claimed.environment, actual != expected
        {
            throw SignedDataVerificationError(
                .environmentMismatch, "environment is \(actual?.rawValue ?? "missing"); expected \(expected.rawValue)")
        }
    }

    private static func format(_ date: Date) -> String {
        date.formatted(.iso8601)
    }

    /// A decoding error in one line, naming the field, without echoing the input.
    static func describe(_ error: any Error) -> String {
        guard let decodingError = error as? DecodingError else { return "not JSON" }
        switch decodingError {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .keyNotFound(_, let context),
            .dataCorrupted(let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? context.debugDescription : "\(path): \(context.debugDescription)"
        @unknown default:
            return "not JSON of the expected shape"
        }
    }
}
