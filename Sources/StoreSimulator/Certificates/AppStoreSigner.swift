import AppStoreServer
import Crypto
public import Foundation

/// Signs payloads the way the App Store does: compact JWS, ES256, raw r‖s signature, the chain in
/// `x5c`. The header and signature can be bent to build the tokens a verifier must refuse.
public struct AppStoreSigner: Sendable {
    public let chain: TestCertificateChain

    public init(chain: TestCertificateChain) {
        self.chain = chain
    }

    /// The protected header of a token.
    public struct Header: Sendable {
        /// `alg`; nil leaves it out.
        public var alg: String?
        /// `x5c`; nil leaves it out.
        public var x5c: [String]?

        public init(alg: String? = "ES256", x5c: [String]?) {
            self.alg = alg
            self.x5c = x5c
        }
    }

    /// The header App Store tokens carry: ES256 and this chain.
    public var standardHeader: Header { Header(x5c: chain.x5c) }

    /// Signs `payload`, encoded as App Store JSON (dates in milliseconds).
    public func sign(_ payload: some Encodable) throws -> String {
        try sign(payloadJSON: AppStoreJSON.makeEncoder().encode(payload))
    }

    /// Signs raw payload bytes under `header` (the standard one by default).
    public func sign(payloadJSON: Data, header: Header? = nil) throws -> String {
        let header = header ?? standardHeader
        var members: [String: Any] = [:]
        if let alg = header.alg { members["alg"] = alg }
        if let x5c = header.x5c { members["x5c"] = x5c }
        let headerJSON = try JSONSerialization.data(withJSONObject: members, options: [.sortedKeys])
        return try sign(headerJSON: headerJSON, payloadJSON: payloadJSON)
    }

    /// Signs arbitrary header and payload bytes with the leaf key.
    public func sign(headerJSON: Data, payloadJSON: Data) throws -> String {
        let signingInput = Base64URL.encode(headerJSON) + "." + Base64URL.encode(payloadJSON)
        let signature = try chain.leafKey.signature(for: Data(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
    }
}
