import Crypto
import Foundation
import SwiftASN1

/// An App Store Connect private key — the `.p8` file, an unencrypted PKCS#8 PEM P-256 key — with its
/// key id. It signs API tokens and in-app request signatures. Its description, debug description and
/// reflection show only the key id, never key material.
public struct AppStoreSigningKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The key's id in App Store Connect (the `kid` of every JWS it signs), e.g. `2X9R4HXF34`.
    public let keyId: String
    /// The private key itself; never printed.
    let privateKey: P256.Signing.PrivateKey

    /// The largest key file that is read; a `.p8` file is about 250 bytes.
    public static let maximumFileSize = 64 * 1024

    /// Loads a key from its PEM text (the contents of the `.p8` file).
    public init(pemRepresentation: String, keyId: String) throws(AppStoreSigningKeyError) {
        try Self.validate(keyId: keyId)
        self.keyId = keyId
        self.privateKey = try Self.parse(pem: pemRepresentation, subject: "the key")
    }

    /// Loads a key from a `.p8` file.
    public init(contentsOfFile path: String, keyId: String) throws(AppStoreSigningKeyError) {
        try Self.validate(keyId: keyId)
        let subject = "key file \(path)"
        let data = try Self.read(path, subject: subject)
        if data.count > 1, data[data.startIndex] == 0x30, data[data.startIndex + 1] & 0x80 != 0 {
            throw AppStoreSigningKeyError(
                .notPEM, "\(subject) looks like binary DER; expected the PEM .p8 file App Store Connect downloads")
        }
        self.keyId = keyId
        self.privateKey = try Self.parse(pem: String(decoding: data, as: UTF8.self), subject: subject)
    }

    /// `AppStoreSigningKey(keyId: …)`: the key id only.
    public var description: String { "AppStoreSigningKey(keyId: \(keyId))" }
    /// The same as `description`.
    public var debugDescription: String { description }
    /// A mirror with the key id only, so `dump` and reflection show no key material.
    public var customMirror: Mirror { Mirror(self, children: ["keyId": keyId], displayStyle: .struct) }

    static func validate(keyId: String) throws(AppStoreSigningKeyError) {
        guard !keyId.isEmpty else { throw AppStoreSigningKeyError(.invalidKeyId, "the key id is empty") }
        guard !keyId.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 }) else {
            throw AppStoreSigningKeyError(.invalidKeyId, "the key id contains whitespace or control characters")
        }
    }

    static func read(_ path: String, subject: String) throws(AppStoreSigningKeyError) -> Data {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw AppStoreSigningKeyError(.unreadableFile, "\(subject) does not exist")
        }
        guard !isDirectory.boolValue else {
            throw AppStoreSigningKeyError(.unreadableFile, "\(subject) is a directory")
        }
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        let size = (attributes?[.size] as? NSNumber)?.intValue ?? 0
        guard size <= maximumFileSize else {
            throw AppStoreSigningKeyError(
                .unreadableFile, "\(subject) is \(size) bytes; a .p8 key is under \(maximumFileSize) bytes")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw AppStoreSigningKeyError(.unreadableFile, "\(subject) cannot be read (permissions?)")
        }
        return data
    }

    static func parse(pem text: String, subject: String) throws(AppStoreSigningKeyError) -> P256.Signing.PrivateKey {
        let normalized = text.replacingOccurrences(of: "\r\n", with: "\n")
        guard let documents = try? PEMDocument.parseMultiple(pemString: normalized), !documents.isEmpty else {
            throw AppStoreSigningKeyError(
                .notPEM, "\(subject) is not PEM; expected an App Store Connect .p8 file (-----BEGIN PRIVATE KEY-----)")
        }
        guard documents.count == 1, let document = documents.first else {
            throw AppStoreSigningKeyError(
                .notPEM, "\(subject) holds \(documents.count) PEM blocks; expected one PRIVATE KEY")
        }
        try checkLabel(document.discriminator, subject: subject)
        try checkAlgorithm(ofPKCS8: document.derBytes, subject: subject)
        do {
            return try P256.Signing.PrivateKey(derRepresentation: document.derBytes)
        } catch {
            throw AppStoreSigningKeyError(.malformedKey, "\(subject) holds a P-256 PKCS#8 key that does not parse")
        }
    }

    /// Accepts only `PRIVATE KEY` (unencrypted PKCS#8), saying what was found instead.
    static func checkLabel(_ label: String, subject: String) throws(AppStoreSigningKeyError) {
        switch label {
        case "PRIVATE KEY":
            return
        case "ENCRYPTED PRIVATE KEY":
            throw AppStoreSigningKeyError(
                .notPKCS8, "\(subject) is an encrypted PKCS#8 key; App Store Connect .p8 keys are unencrypted")
        case "EC PRIVATE KEY":
            throw AppStoreSigningKeyError(
                .notPKCS8,
                "\(subject) is a SEC1 EC PRIVATE KEY; expected PKCS#8 PRIVATE KEY (openssl pkcs8 -topk8 -nocrypt converts it)"
            )
        case "RSA PRIVATE KEY":
            throw AppStoreSigningKeyError(
                .unsupportedKeyType, "\(subject) is an RSA key; App Store Connect keys are P-256 (ES256)")
        case "PUBLIC KEY", "EC PUBLIC KEY", "RSA PUBLIC KEY", "CERTIFICATE":
            throw AppStoreSigningKeyError(.notPKCS8, "\(subject) holds a \(label), not a private key")
        default:
            throw AppStoreSigningKeyError(.notPKCS8, "\(subject) holds a PEM block that is not a PRIVATE KEY")
        }
    }

    /// Reads the PKCS#8 `privateKeyAlgorithm` and refuses anything but an EC key on P-256.
    static func checkAlgorithm(ofPKCS8 der: [UInt8], subject: String) throws(AppStoreSigningKeyError) {
        let algorithm: ASN1ObjectIdentifier
        let parameter: ASN1ObjectIdentifier?
        do {
            (algorithm, parameter) = try DER.sequence(DER.parse(der), identifier: .sequence) {
                (nodes: inout ASN1NodeCollection.Iterator) throws -> (ASN1ObjectIdentifier, ASN1ObjectIdentifier?) in
                _ = try Int(derEncoded: &nodes)  // version
                guard let algorithmNode = nodes.next() else {
                    throw ASN1Error.invalidASN1Object(reason: "no privateKeyAlgorithm")
                }
                let identifiers = try DER.sequence(algorithmNode, identifier: .sequence) {
                    (fields: inout ASN1NodeCollection.Iterator) throws -> (ASN1ObjectIdentifier, ASN1ObjectIdentifier?)
                    in
                    let algorithm = try ASN1ObjectIdentifier(derEncoded: &fields)
                    var parameter: ASN1ObjectIdentifier?
                    if let node = fields.next(), node.identifier == .objectIdentifier {
                        parameter = try ASN1ObjectIdentifier(derEncoded: node)
                    }
                    while fields.next() != nil {}
                    return (algorithm, parameter)
                }
                while nodes.next() != nil {}  // the key itself and any attributes: not read here
                return identifiers
            }
        } catch {
            throw AppStoreSigningKeyError(.malformedKey, "\(subject) is not a well-formed PKCS#8 structure")
        }
        let name: String
        switch (algorithm, parameter) {
        case (KeyOID.ecPublicKey, .some(KeyOID.p256)): return
        case (KeyOID.ecPublicKey, .some(KeyOID.p384)): name = "an EC key on P-384"
        case (KeyOID.ecPublicKey, .some(KeyOID.p521)): name = "an EC key on P-521"
        case (KeyOID.ecPublicKey, .some(KeyOID.secp256k1)): name = "an EC key on secp256k1"
        case (KeyOID.ecPublicKey, _): name = "an EC key on a curve other than P-256"
        case (KeyOID.rsaEncryption, _), (KeyOID.rsassaPSS, _): name = "an RSA key"
        case (KeyOID.ed25519, _): name = "an Ed25519 key"
        case (KeyOID.ed448, _): name = "an Ed448 key"
        default: name = "a key of algorithm \(algorithm)"
        }
        throw AppStoreSigningKeyError(
            .unsupportedKeyType, "\(subject) is \(name); App Store Connect keys are P-256 (ES256)")
    }
}

/// Object identifiers of the key algorithms a PKCS#8 file may name.
private enum KeyOID {
    static let ecPublicKey: ASN1ObjectIdentifier = [1, 2, 840, 10045, 2, 1]
    static let p256: ASN1ObjectIdentifier = [1, 2, 840, 10045, 3, 1, 7]
    static let p384: ASN1ObjectIdentifier = [1, 3, 132, 0, 34]
    static let p521: ASN1ObjectIdentifier = [1, 3, 132, 0, 35]
    static let secp256k1: ASN1ObjectIdentifier = [1, 3, 132, 0, 10]
    static let rsaEncryption: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 1, 1]
    static let rsassaPSS: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 1, 10]
    static let ed25519: ASN1ObjectIdentifier = [1, 3, 101, 112]
    static let ed448: ASN1ObjectIdentifier = [1, 3, 101, 113]
}
