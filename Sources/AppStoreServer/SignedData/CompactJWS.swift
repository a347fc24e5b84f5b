import Foundation

/// A compact-serialized JWS split into its three parts. Decoding is left to the caller, part by
/// part, so a token whose header is already known (see `VerifiedChainCache`) never has its header
/// decoded again.
///
/// The size limit is checked before any byte is read. Splitting works on UTF-8 bytes: Foundation's
/// `trimmingCharacters` and the generic `split` over Characters cost 2/3 of a whole verification
/// when measured (Benchmarks/README.md).
struct CompactJWS: Sendable {
    /// The protected header's members that App Store verification uses.
    struct Header: Decodable, Sendable {
        var alg: String?
        var x5c: [String]?
    }

    /// The three base64url parts, exactly as received.
    var encodedHeader: Substring
    var encodedPayload: Substring
    var encodedSignature: Substring
    /// `encodedHeader + "." + encodedPayload`, the bytes the signature covers.
    var signingInput: Substring

    init(parsing token: String, maxLength: Int) throws(SignedDataVerificationError) {
        // `utf8.count` is O(1) for native strings, so an oversized input is refused before any work.
        let length = token.utf8.count
        guard length <= maxLength else {
            throw SignedDataVerificationError(
                .inputTooLarge, "input is \(length) bytes; the limit is \(maxLength) bytes")
        }
        let trimmed = Self.trimmingASCIIWhitespace(token)
        let dots = Self.dotOffsets(in: trimmed)
        guard dots.count == 2 else {
            let parts = dots.count > 2 ? "more than 3" : "\(dots.count + 1)"
            throw SignedDataVerificationError(
                .malformedJWS, "a compact JWS has 3 dot-separated parts; this input has \(parts)")
        }
        let utf8 = trimmed.utf8
        let firstDot = utf8.index(utf8.startIndex, offsetBy: dots[0])
        let secondDot = utf8.index(utf8.startIndex, offsetBy: dots[1])
        let header = trimmed[trimmed.startIndex..<firstDot]
        let payload = trimmed[trimmed.index(after: firstDot)..<secondDot]
        let signature = trimmed[trimmed.index(after: secondDot)..<trimmed.endIndex]
        guard !header.isEmpty, !payload.isEmpty, !signature.isEmpty else {
            throw SignedDataVerificationError(.malformedJWS, "a part of the compact JWS is empty")
        }
        self.encodedHeader = header
        self.encodedPayload = payload
        self.encodedSignature = signature
        self.signingInput = trimmed[trimmed.startIndex..<secondDot]
    }

    func decodeHeader() throws(SignedDataVerificationError) -> Header {
        guard let bytes = Base64URL.decode(encodedHeader) else {
            throw SignedDataVerificationError(.malformedJWS, "the header is not valid base64url")
        }
        do {
            return try JSONDecoder().decode(Header.self, from: bytes)
        } catch {
            throw SignedDataVerificationError(
                .malformedHeader, "the header is not a JSON object with string alg and x5c")
        }
    }

    func decodePayload() throws(SignedDataVerificationError) -> Data {
        guard let bytes = Base64URL.decode(encodedPayload) else {
            throw SignedDataVerificationError(.malformedJWS, "the payload is not valid base64url")
        }
        return bytes
    }

    func decodeSignature() throws(SignedDataVerificationError) -> Data {
        guard let bytes = Base64URL.decode(encodedSignature) else {
            throw SignedDataVerificationError(.malformedJWS, "the signature is not valid base64url")
        }
        return bytes
    }

    /// UTF-8 offsets of the first three dots (a third means too many parts).
    static func dotOffsets(in text: Substring) -> [Int] {
        func scan(_ bytes: UnsafeBufferPointer<UInt8>) -> [Int] {
            var offsets: [Int] = []
            offsets.reserveCapacity(3)
            var offset = 0
            while offset < bytes.count, offsets.count < 3 {
                if bytes[offset] == UInt8(ascii: ".") { offsets.append(offset) }
                offset += 1
            }
            return offsets
        }
        return text.utf8.withContiguousStorageIfAvailable(scan) ?? Array(text.utf8).withUnsafeBufferPointer(scan)
    }

    /// Drops ASCII whitespace at both ends (tokens pasted from files end in a newline).
    static func trimmingASCIIWhitespace(_ text: String) -> Substring {
        func isSpace(_ byte: UInt8) -> Bool {
            byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D || byte == 0x0B || byte == 0x0C
        }
        let utf8 = text.utf8
        var start = utf8.startIndex
        var end = utf8.endIndex
        while start != end, isSpace(utf8[start]) { utf8.formIndex(after: &start) }
        while start != end, isSpace(utf8[utf8.index(before: end)]) { utf8.formIndex(before: &end) }
        return text[start..<end]
    }
}
