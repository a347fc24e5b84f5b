public import Foundation

/// A compact-serialized JWS split into its three parts, with the header decoded.
///
/// Parsing is strict and bounded: the size limit is checked before any byte is copied, parts must be
/// unpadded-or-padded base64url, and the header must be a JSON object.
struct CompactJWS: Sendable {
    /// The protected header's members that App Store verification uses.
    struct Header: Decodable, Sendable {
        var alg: String?
        var x5c: [String]?
    }

    /// The base64url text of the header, exactly as received.
    var encodedHeader: Substring
    var header: Header
    /// The decoded payload bytes (JSON).
    var payload: Data
    /// The decoded signature bytes.
    var signature: Data
    /// `encodedHeader + "." + encodedPayload`, the bytes the signature covers.
    var signingInput: Substring

    init(parsing token: String, maxLength: Int) throws(SignedDataVerificationError) {
        // `utf8.count` is O(1) for native strings, so an oversized input is refused before any work.
        let length = token.utf8.count
        guard length <= maxLength else {
            throw SignedDataVerificationError(
                .inputTooLarge, "input is \(length) bytes; the limit is \(maxLength) bytes")
        }
        let trimmed = token.trimmingCharacters(in: .whitespacesAndNewlines)
        let parts = trimmed.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw SignedDataVerificationError(
                .malformedJWS, "a compact JWS has 3 dot-separated parts; this input has \(parts.count)")
        }
        guard !parts[0].isEmpty, !parts[1].isEmpty, !parts[2].isEmpty else {
            throw SignedDataVerificationError(.malformedJWS, "a part of the compact JWS is empty")
        }
        guard let headerBytes = Base64URL.decode(parts[0]) else {
            throw SignedDataVerificationError(.malformedJWS, "the header is not valid base64url")
        }
        guard let payload = Base64URL.decode(parts[1]) else {
            throw SignedDataVerificationError(.malformedJWS, "the payload is not valid base64url")
        }
        guard let signature = Base64URL.decode(parts[2]) else {
            throw SignedDataVerificationError(.malformedJWS, "the signature is not valid base64url")
        }
        let header: Header
        do {
            header = try JSONDecoder().decode(Header.self, from: headerBytes)
        } catch {
            throw SignedDataVerificationError(
                .malformedHeader, "the header is not a JSON object with string alg and x5c")
        }
        self.encodedHeader = parts[0]
        self.header = header
        self.payload = payload
        self.signature = signature
        self.signingInput = trimmed[parts[0].startIndex..<parts[1].endIndex]
    }
}

/// base64url (RFC 4648 §5) as JWS uses it.
public enum Base64URL {
    /// Decodes base64url text; padding is optional, any other character fails.
    public static func decode(_ text: Substring) -> Data? {
        var bytes = [UInt8]()
        bytes.reserveCapacity(text.utf8.count + 3)
        var sawPadding = false
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "="):
                sawPadding = true
                continue
            case _ where sawPadding:
                return nil  // data after padding
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                bytes.append(byte)
            case UInt8(ascii: "-"):
                bytes.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"):
                bytes.append(UInt8(ascii: "/"))
            default:
                return nil
            }
        }
        if bytes.count % 4 == 1 { return nil }
        while bytes.count % 4 != 0 { bytes.append(UInt8(ascii: "=")) }
        return Data(base64Encoded: Data(bytes))
    }

    /// Encodes without padding.
    public static func encode(_ data: some DataProtocol) -> String {
        var text = Data(data).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }
}
