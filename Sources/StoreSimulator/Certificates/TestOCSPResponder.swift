public import AppStoreServer
import Crypto
public import Foundation
import SwiftASN1
import Synchronization
public import X509

/// An OCSP responder (RFC 6960) for a ``TestCertificateChain``: answers for the leaf (signed by the
/// intermediate) and the intermediate (signed by the root), with a status that tests can change.
///
/// It is also an ``OCSPTransport``, so a verifier can query it in-process; the store simulator
/// serves the same answers over HTTP.
///
/// Like Apple's responder, it identifies itself by key hash (`responderID` `byKey`: the SHA-1 of the
/// signing key's `subjectPublicKey`), which Apple's App Store Server Libraries and swift-certificates
/// both match against the issuer.
public final class TestOCSPResponder: OCSPTransport {
    /// What the responder says about a certificate.
    public enum Status: Sendable, Hashable {
        case good
        case revoked(at: Date)
        case unknown
    }

    /// Why a request could not be answered.
    public struct RequestError: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    let chain: TestCertificateChain
    let clock: any WallClock
    let otherClock: (any WallClock)?
    private let state = Mutex<(statuses: [[UInt8]: Status], queries: Int, forges: Bool)>(([:], 0, false))

    /// - Parameters:
    ///   - clock: the clock answers are dated on.
    ///   - alsoCurrentOn: another clock the answers must be current on (the store simulator's real
    ///     clock, when `clock` is the simulated one): `thisUpdate` and `producedAt` are before the
    ///     earlier of both nows, `nextUpdate` a day after the later one.
    public init(
        chain: TestCertificateChain, clock: any WallClock = SystemWallClock(), alsoCurrentOn: (any WallClock)? = nil
    ) {
        self.chain = chain
        self.clock = clock
        self.otherClock = alsoCurrentOn
    }

    /// Sets the status reported for `certificate` (good by default).
    public func setStatus(_ status: Status, for certificate: Certificate) {
        state.withLock { $0.statuses[Array(certificate.serialNumber.bytes)] = status }
    }

    /// Sign answers with a key that is not the issuer's (a forged responder).
    public var forgesSignatures: Bool {
        get { state.withLock { $0.forges } }
        set { state.withLock { $0.forges = newValue } }
    }

    /// How many requests were answered.
    public var queryCount: Int { state.withLock { $0.queries } }

    public func send(request: [UInt8], to uri: String) async throws -> [UInt8] {
        try respond(to: request)
    }

    /// Parses a DER OCSP request and returns the DER OCSP response for its first certificate.
    public func respond(to request: [UInt8]) throws -> [UInt8] {
        let certID = try Self.firstCertID(in: request)
        let serial = try Self.serialNumber(ofCertID: certID)
        // A forged answer names the real issuer's key but is signed with another one.
        let (status, signerKey, issuerKey): (Status, P256.Signing.PrivateKey, P256.Signing.PublicKey) =
            try state.withLock { state in
                state.queries += 1
                let status = state.statuses[serial] ?? .good
                if serial == Array(chain.leaf.serialNumber.bytes) {
                    let key = chain.intermediateKey
                    return (status, state.forges ? P256.Signing.PrivateKey() : key, key.publicKey)
                }
                if serial == Array(chain.intermediate.serialNumber.bytes) {
                    let key = chain.rootKey
                    return (status, state.forges ? P256.Signing.PrivateKey() : key, key.publicKey)
                }
                throw RequestError(description: "no certificate with that serial number in this chain")
            }
        let nows = [clock.now()] + (otherClock.map { [$0.now()] } ?? [])
        return try Self.response(
            certID: certID, status: status, signerKey: signerKey, responderKeyHash: Self.keyHash(issuerKey),
            earliest: nows.min() ?? clock.now(), latest: nows.max() ?? clock.now())
    }

    /// RFC 6960 `KeyHash`: the SHA-1 of the key's `subjectPublicKey` BIT STRING contents (for P-256,
    /// the uncompressed point).
    static func keyHash(_ key: P256.Signing.PublicKey) -> [UInt8] {
        Array(Insecure.SHA1.hash(data: key.x963Representation))
    }

    // MARK: DER

    /// The CertID node of the first Request of an OCSPRequest, as encoded.
    static func firstCertID(in request: [UInt8]) throws -> ASN1Node {
        // OCSPRequest ::= SEQUENCE { tbsRequest TBSRequest, ... }
        // TBSRequest ::= SEQUENCE { version [0], requestorName [1], requestList SEQUENCE OF Request, ... }
        // Request ::= SEQUENCE { reqCert CertID, ... }
        let root = try DER.parse(request)
        guard case .constructed(let top) = root.content, let tbs = top.first(where: { _ in true }),
            case .constructed(let tbsChildren) = tbs.content,
            let requestList = tbsChildren.first(where: { $0.identifier == .sequence }),
            case .constructed(let requests) = requestList.content,
            let firstRequest = requests.first(where: { _ in true }),
            case .constructed(let requestChildren) = firstRequest.content,
            let certID = requestChildren.first(where: { _ in true })
        else {
            throw RequestError(description: "not an OCSP request")
        }
        return certID
    }

    static func serialNumber(ofCertID certID: ASN1Node) throws -> [UInt8] {
        // CertID ::= SEQUENCE { hashAlgorithm, issuerNameHash, issuerKeyHash, serialNumber INTEGER }
        guard case .constructed(let children) = certID.content,
            let serial = Array(children).last, case .primitive(let bytes) = serial.content
        else {
            throw RequestError(description: "malformed CertID")
        }
        return Array(Certificate.SerialNumber(bytes: bytes).bytes)
    }

    static func response(
        certID: ASN1Node, status: Status, signerKey: P256.Signing.PrivateKey, responderKeyHash: [UInt8],
        earliest: Date, latest: Date
    ) throws -> [UInt8] {
        var tbs = DER.Serializer()
        try tbs.appendConstructedNode(identifier: .sequence) { data in
            // responderID: byKey [2] EXPLICIT KeyHash (OCTET STRING)
            try data.serialize(
                explicitlyTaggedWithTagNumber: 2, tagClass: .contextSpecific
            ) { tagged in
                try tagged.serialize(ASN1OctetString(contentBytes: ArraySlice(responderKeyHash)))
            }
            try data.serialize(generalizedTime(earliest.addingTimeInterval(-60)))  // producedAt
            try data.appendConstructedNode(identifier: .sequence) { responses in
                try responses.appendConstructedNode(identifier: .sequence) { single in
                    single.serialize(certID)
                    switch status {
                    case .good:
                        single.appendPrimitiveNode(identifier: .init(tagWithNumber: 0, tagClass: .contextSpecific)) {
                            _ in
                        }
                    case .revoked(let date):
                        try single.appendConstructedNode(
                            identifier: .init(tagWithNumber: 1, tagClass: .contextSpecific)
                        ) {
                            try $0.serialize(generalizedTime(date))
                        }
                    case .unknown:
                        single.appendPrimitiveNode(identifier: .init(tagWithNumber: 2, tagClass: .contextSpecific)) {
                            _ in
                        }
                    }
                    try single.serialize(generalizedTime(earliest.addingTimeInterval(-3600)))  // thisUpdate
                    try single.serialize(  // nextUpdate
                        generalizedTime(latest.addingTimeInterval(86_400)), explicitlyTaggedWithTagNumber: 0,
                        tagClass: .contextSpecific)
                }
            }
        }
        let tbsBytes = tbs.serializedBytes
        let signature = try signerKey.signature(for: tbsBytes).derRepresentation

        var basic = DER.Serializer()
        try basic.appendConstructedNode(identifier: .sequence) { coder in
            coder.serializeRawBytes(tbsBytes)
            try coder.appendConstructedNode(identifier: .sequence) {
                try $0.serialize(ASN1ObjectIdentifier("1.2.840.10045.4.3.2"))  // ecdsa-with-SHA256
            }
            try coder.serialize(ASN1BitString(bytes: ArraySlice(signature)))
        }

        var response = DER.Serializer()
        try response.appendConstructedNode(identifier: .sequence) { coder in
            coder.appendPrimitiveNode(identifier: .enumerated) { $0.append(0) }  // successful
            try coder.serialize(explicitlyTaggedWithTagNumber: 0, tagClass: .contextSpecific) { tagged in
                try tagged.appendConstructedNode(identifier: .sequence) { bytes in
                    try bytes.serialize(ASN1ObjectIdentifier("1.3.6.1.5.5.7.48.1.1"))  // id-pkix-ocsp-basic
                    try bytes.serialize(ASN1OctetString(contentBytes: ArraySlice(basic.serializedBytes)))
                }
            }
        }
        return response.serializedBytes
    }

    static func generalizedTime(_ date: Date) throws -> GeneralizedTime {
        let components = Calendar(identifier: .gregorian).dateComponents(
            in: .gmt, from: date)
        return try GeneralizedTime(
            year: components.year ?? 1970, month: components.month ?? 1, day: components.day ?? 1,
            hours: components.hour ?? 0, minutes: components.minute ?? 0, seconds: components.second ?? 0,
            fractionalSeconds: 0)
    }
}
