public import AppStoreServer
public import Crypto
public import Foundation
import SwiftASN1
public import X509

/// A root → intermediate → leaf chain of P-256 certificates shaped like Apple's App Store signing
/// chain, for tests, the store simulator and the demo. Every property can be bent to build the
/// chains a verifier must refuse.
public struct TestCertificateChain: Sendable {
    /// How to shape the chain.
    public struct Options: Sendable {
        /// Validity of the root.
        public var rootValidity: ClosedRange<Date>
        /// Validity of the intermediate.
        public var intermediateValidity: ClosedRange<Date>
        /// Validity of the leaf.
        public var leafValidity: ClosedRange<Date>
        /// Put Apple's WWDR marker (1.2.840.113635.100.6.2.1) on the intermediate.
        public var intermediateHasAppleMarker: Bool
        /// Put Apple's receipt-signer marker (1.2.840.113635.100.6.11.1) on the leaf.
        public var leafHasAppleMarker: Bool
        /// Make the intermediate a CA (basic constraints); false builds a chain RFC 5280 refuses.
        public var intermediateIsCA: Bool
        /// An OCSP responder URL to put in the leaf's and intermediate's authority information access.
        public var ocspResponderURL: String?
        /// Prefix of the subjects' common names.
        public var name: String

        /// A chain valid from a year before `now` to ten years after it (the leaf for two years).
        public init(now: Date = Date(), name: String = "Storekeeper Test") {
            let year: TimeInterval = 365 * 24 * 3600
            self.rootValidity = now.addingTimeInterval(-year)...now.addingTimeInterval(20 * year)
            self.intermediateValidity = now.addingTimeInterval(-year)...now.addingTimeInterval(10 * year)
            self.leafValidity = now.addingTimeInterval(-year)...now.addingTimeInterval(2 * year)
            self.intermediateHasAppleMarker = true
            self.leafHasAppleMarker = true
            self.intermediateIsCA = true
            self.ocspResponderURL = nil
            self.name = name
        }
    }

    public let root: Certificate
    public let rootKey: P256.Signing.PrivateKey
    public let intermediate: Certificate
    public let intermediateKey: P256.Signing.PrivateKey
    public let leaf: Certificate
    public let leafKey: P256.Signing.PrivateKey

    /// Makes a new chain with fresh keys.
    public init(options: Options = Options()) throws {
        let rootKey = P256.Signing.PrivateKey()
        let rootName = try DistinguishedName {
            CountryName("US")
            OrganizationName("Storekeeper")
            CommonName("\(options.name) Root CA")
        }
        let root = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: .init(rootKey.publicKey),
            notValidBefore: options.rootValidity.lowerBound,
            notValidAfter: options.rootValidity.upperBound,
            issuer: rootName,
            subject: rootName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: .init(rootKey.publicKey))
            },
            issuerPrivateKey: .init(rootKey)
        )
        let intermediateKey = P256.Signing.PrivateKey()
        let intermediate = try Self.issue(
            name: "\(options.name) Intermediate CA",
            key: intermediateKey.publicKey,
            validity: options.intermediateValidity,
            issuer: root,
            issuerKey: rootKey,
            isCA: options.intermediateIsCA,
            marker: options.intermediateHasAppleMarker ? AppleCertificateMarkers.wwdrIntermediate : nil,
            ocspResponderURL: options.ocspResponderURL
        )
        let leafKey = P256.Signing.PrivateKey()
        let leaf = try Self.issue(
            name: "\(options.name) Signer",
            key: leafKey.publicKey,
            validity: options.leafValidity,
            issuer: intermediate,
            issuerKey: intermediateKey,
            isCA: false,
            marker: options.leafHasAppleMarker ? AppleCertificateMarkers.receiptSigner : nil,
            ocspResponderURL: options.ocspResponderURL
        )
        self.init(
            root: root, rootKey: rootKey, intermediate: intermediate, intermediateKey: intermediateKey, leaf: leaf,
            leafKey: leafKey)
    }

    init(
        root: Certificate, rootKey: P256.Signing.PrivateKey, intermediate: Certificate,
        intermediateKey: P256.Signing.PrivateKey, leaf: Certificate, leafKey: P256.Signing.PrivateKey
    ) {
        self.root = root
        self.rootKey = rootKey
        self.intermediate = intermediate
        self.intermediateKey = intermediateKey
        self.leaf = leaf
        self.leafKey = leafKey
    }

    /// The same root and intermediate with a new leaf: another validity, key or marker.
    public func withNewLeaf(
        validity: ClosedRange<Date>, hasAppleMarker: Bool = true, ocspResponderURL: String? = nil
    ) throws -> TestCertificateChain {
        let leafKey = P256.Signing.PrivateKey()
        let leaf = try Self.issue(
            name: "Storekeeper Test Signer",
            key: leafKey.publicKey,
            validity: validity,
            issuer: intermediate,
            issuerKey: intermediateKey,
            isCA: false,
            marker: hasAppleMarker ? AppleCertificateMarkers.receiptSigner : nil,
            ocspResponderURL: ocspResponderURL
        )
        return TestCertificateChain(
            root: root, rootKey: rootKey, intermediate: intermediate, intermediateKey: intermediateKey, leaf: leaf,
            leafKey: leafKey)
    }

    /// The DER encoding of a certificate.
    public static func der(_ certificate: Certificate) -> [UInt8] {
        var serializer = DER.Serializer()
        // Serializing a certificate we built or parsed cannot fail.
        try? serializer.serialize(certificate)
        return serializer.serializedBytes
    }

    /// `x5c` as App Store payloads carry it: leaf, intermediate, root, base64 DER.
    public var x5c: [String] {
        [leaf, intermediate, root].map { Data(Self.der($0)).base64EncodedString() }
    }

    /// Writes the root as DER to `path` so a verifier can load it as an allowed root.
    public func writeRoot(to path: String) throws {
        try Data(Self.der(root)).write(to: URL(fileURLWithPath: path))
    }

    /// Trusted roots holding only this chain's root (explicitly allowed, as the pin requires).
    public var trustedRoots: TrustedRoots { TrustedRoots(certificates: [root]) }

    private static func issue(
        name: String,
        key: P256.Signing.PublicKey,
        validity: ClosedRange<Date>,
        issuer: Certificate,
        issuerKey: P256.Signing.PrivateKey,
        isCA: Bool,
        marker: ASN1ObjectIdentifier?,
        ocspResponderURL: String?
    ) throws -> Certificate {
        let subject = try DistinguishedName {
            CountryName("US")
            OrganizationName("Storekeeper")
            CommonName(name)
        }
        var extensions = try Certificate.Extensions {
            if isCA {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            } else {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
            }
            SubjectKeyIdentifier(hash: .init(key))
            AuthorityKeyIdentifier(keyIdentifier: try issuer.extensions.subjectKeyIdentifier?.keyIdentifier)
        }
        if let ocspResponderURL {
            try extensions.append(
                Certificate.Extension(
                    AuthorityInformationAccess([
                        .init(method: .ocspServer, location: .uniformResourceIdentifier(ocspResponderURL))
                    ]),
                    critical: false))
        }
        if let marker {
            // Apple's markers are non-critical extensions whose value is DER NULL.
            try extensions.append(Certificate.Extension(oid: marker, critical: false, value: [0x05, 0x00]))
        }
        return try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: .init(key),
            notValidBefore: validity.lowerBound,
            notValidAfter: validity.upperBound,
            issuer: issuer.subject,
            subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: extensions,
            issuerPrivateKey: .init(issuerKey)
        )
    }
}
