import Crypto
import Foundation
import SwiftASN1
public import X509

/// The root certificates a verifier trusts, loaded from files.
///
/// Apple Root CA - G3 is recognised by its pinned SHA-256 fingerprint. Any other root is refused
/// unless it is passed as explicitly allowed — the way tests and the store simulator trust their own
/// test roots without a production configuration ever trusting one by accident.
public struct TrustedRoots: Sendable {
    /// SHA-256 of Apple Root CA - G3's DER encoding.
    public static let appleRootCAG3Fingerprint =
        "63343ABFB89A6A03EBB57E9B3F5FA7BE7C4F5C756F3017B3A8C488C3653E9179"

    /// Why a root could not be loaded.
    public struct LoadError: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// The trusted certificates, Apple's and explicitly allowed ones alike.
    public let certificates: [Certificate]

    /// Trusts `certificates` as given. Prefer the file-loading initializer, which enforces the pin.
    public init(certificates: [Certificate]) {
        self.certificates = certificates
    }

    /// Loads roots from DER or PEM files.
    ///
    /// - Parameters:
    ///   - appleRootFiles: files that must hold Apple Root CA - G3 (the fingerprint is checked).
    ///   - allowedRootFiles: other roots to trust on purpose (a test chain, the store simulator's).
    public init(appleRootFiles: [String], allowedRootFiles: [String] = []) throws(LoadError) {
        var certificates: [Certificate] = []
        for path in appleRootFiles {
            let (certificate, fingerprint) = try Self.load(path)
            guard fingerprint == Self.appleRootCAG3Fingerprint else {
                throw LoadError(
                    description:
                        "\(path) is not Apple Root CA - G3 (SHA-256 \(fingerprint)); allow it explicitly to trust another root"
                )
            }
            certificates.append(certificate)
        }
        for path in allowedRootFiles {
            certificates.append(try Self.load(path).certificate)
        }
        guard !certificates.isEmpty else {
            throw LoadError(
                description: "no trusted root configured: give the path of Apple Root CA - G3 (AppleRootCA-G3.cer)")
        }
        self.certificates = certificates
    }

    /// Parses a DER or PEM certificate file and returns it with its upper-case hex SHA-256 fingerprint.
    static func load(_ path: String) throws(LoadError) -> (certificate: Certificate, fingerprint: String) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw LoadError(description: "cannot read root certificate file \(path)")
        }
        let der: [UInt8]
        if let text = String(data: data, encoding: .utf8), text.contains("-----BEGIN CERTIFICATE-----") {
            guard let document = try? PEMDocument(pemString: text) else {
                throw LoadError(description: "\(path) is not a valid PEM certificate")
            }
            der = document.derBytes
        } else {
            der = Array(data)
        }
        guard let certificate = try? Certificate(derEncoded: der) else {
            throw LoadError(description: "\(path) is not a DER or PEM X.509 certificate")
        }
        return (certificate, Self.fingerprint(der))
    }

    static func fingerprint(_ der: [UInt8]) -> String {
        SHA256.hash(data: der).map { byte in
            let hex = String(byte, radix: 16, uppercase: true)
            return hex.count == 1 ? "0" + hex : hex
        }.joined()
    }
}
