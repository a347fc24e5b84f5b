public import Foundation

/// The App Store's notification request body, `{"signedPayload": "<JWS>"}`.
///
/// The body as Apple sends it (that one member, its string plain ASCII without escapes, as a JWS
/// is) is read directly; any other shape goes to JSONDecoder, so every body gets JSONDecoder's
/// answer. JSONDecoder on every 8 KB body was 2 % of the ingest benchmark's process, most of it
/// scanning the token twice (once to index the document, once to copy the string).
@_spi(Benchmarks) public enum NotificationRequestBody {
    /// The signed payload, or nil when the body is not such an object.
    public static func signedPayload(_ body: Data) -> String? {
        if let payload = body.withUnsafeBytes(plainSignedPayload) {
            return payload
        }
        struct Body: Decodable { var signedPayload: String }
        return try? JSONDecoder().decode(Body.self, from: body).signedPayload
    }

    /// The payload of `{"signedPayload":"…"}` with JSON whitespace anywhere between tokens and a
    /// string of printable ASCII other than `"` and `\`; nil for anything else.
    static func plainSignedPayload(_ bytes: UnsafeRawBufferPointer) -> String? {
        var index = 0
        func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }
        func consume(_ literal: StaticString) -> Bool {
            let count = literal.utf8CodeUnitCount
            guard bytes.count - index >= count else { return false }
            for offset in 0..<count where bytes[index + offset] != literal.utf8Start[offset] { return false }
            index += count
            return true
        }
        skipWhitespace()
        guard consume("{") else { return nil }
        skipWhitespace()
        guard consume("\"signedPayload\"") else { return nil }
        skipWhitespace()
        guard consume(":") else { return nil }
        skipWhitespace()
        guard consume("\"") else { return nil }
        // The token's bytes, eight at a time while none of them needs a look (a byte at a time it
        // was 10 µs for a typical 8.6 KB body, 1.1 % of the ingest benchmark's process).
        let start = index
        var end = start
        while bytes.count - end >= 8, !Self.needsALook(bytes.loadUnaligned(fromByteOffset: end, as: UInt64.self)) {
            end += 8
        }
        while end < bytes.count {
            let byte = bytes[end]
            if byte == UInt8(ascii: "\"") { break }
            guard byte >= 0x20, byte < 0x7F, byte != UInt8(ascii: "\\") else { return nil }
            end += 1
        }
        index = end
        guard consume("\"") else { return nil }
        skipWhitespace()
        guard consume("}") else { return nil }
        skipWhitespace()
        guard index == bytes.count else { return nil }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
    }

    /// Whether any of the eight bytes of `word` is a quote, a backslash, a control character or not
    /// ASCII (or DEL): each test sets the high bit of the bytes it matches (a byte below `n` has
    /// its high bit set by `byte - n` only if it had none, and `x ^ c` is zero where `x == c`).
    static func needsALook(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        func below(_ limit: UInt8, _ value: UInt64) -> UInt64 { (value &- ones &* UInt64(limit)) & ~value & highs }
        func equal(_ byte: UInt8, _ value: UInt64) -> UInt64 { below(1, value ^ (ones &* UInt64(byte))) }
        let special =
            (word & highs) | below(0x20, word) | equal(UInt8(ascii: "\""), word) | equal(UInt8(ascii: "\\"), word)
            | equal(0x7F, word)
        return special != 0
    }
}
