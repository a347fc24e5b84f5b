import Foundation

/// The App Store's notification request body, `{"signedPayload": "<JWS>"}`.
///
/// The body as Apple sends it (that one member, its string plain ASCII without escapes, as a JWS
/// is) is read directly; any other shape goes to JSONDecoder, so every body gets JSONDecoder's
/// answer. JSONDecoder on every 8 KB body was 2 % of the ingest benchmark's process, most of it
/// scanning the token twice (once to index the document, once to copy the string).
enum NotificationRequestBody {
    /// The signed payload, or nil when the body is not such an object.
    static func signedPayload(_ body: Data) -> String? {
        if let payload = body.withUnsafeBytes({ plainSignedPayload(UnsafeRawBufferPointer($0)) }) {
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
        let start = index
        while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
            guard bytes[index] >= 0x20, bytes[index] < 0x7F, bytes[index] != UInt8(ascii: "\\") else { return nil }
            index += 1
        }
        let end = index
        guard consume("\"") else { return nil }
        skipWhitespace()
        guard consume("}") else { return nil }
        skipWhitespace()
        guard index == bytes.count else { return nil }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
    }
}
