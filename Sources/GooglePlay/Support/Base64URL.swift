package import Foundation

/// base64url without padding (RFC 7515 §2), as used by JWTs and JWKS. Shared with the simulator.
package enum Base64URL {
    /// Encodes `bytes` as unpadded base64url.
    package static func encode(_ bytes: some DataProtocol) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Decodes unpadded base64url; nil for anything else (padding, `+`, `/`, whitespace).
    package static func decode(_ string: some StringProtocol) -> Data? {
        guard string.utf8.allSatisfy({ isAlphabet($0) }), string.utf8.count % 4 != 1 else { return nil }
        var base64 = string.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        return Data(base64Encoded: base64)
    }

    private static func isAlphabet(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default: false
        }
    }
}

/// `application/x-www-form-urlencoded` encoding and decoding (shared with the simulator).
package enum FormURLEncoding {
    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// Encodes the pairs in order, percent-encoding everything but unreserved characters.
    package static func encode(_ pairs: [(String, String)]) -> String {
        pairs.map { name, value in escape(name) + "=" + escape(value) }.joined(separator: "&")
    }

    /// Decodes a form body into its fields (the last occurrence of a name wins); nil if malformed.
    package static func decode(_ body: String) -> [String: String]? {
        var fields: [String: String] = [:]
        for pair in body.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard
                let name = parts[0].replacingOccurrences(of: "+", with: " ").removingPercentEncoding,
                let value = (parts.count > 1 ? String(parts[1]) : "").replacingOccurrences(of: "+", with: " ")
                    .removingPercentEncoding
            else { return nil }
            fields[name] = value
        }
        return fields
    }

    private static func escape(_ string: String) -> String {
        string.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }
}
