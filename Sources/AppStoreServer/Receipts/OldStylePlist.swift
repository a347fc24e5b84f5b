/// A strict parser for the subset of the old-style (NeXTSTEP) property list syntax that legacy
/// transaction receipts use: one dictionary of quoted strings,
///
/// ```
/// { "key" = "value"; "other-key" = "value"; }
/// ```
///
/// with whitespace between tokens and these escapes inside strings: `\"` `\\` `\n` `\t` `\r` `\a`
/// `\b` `\f` `\v`, `\U` followed by 4 hex digits, and 1 to 3 octal digits for an ASCII character.
/// Anything else — unquoted strings, comments, nested dictionaries or arrays, `<data>`, a missing
/// `;`, a duplicate key, text after the closing brace — is refused. One forward pass, no recursion,
/// so work is linear in the input and there is no nesting to exhaust.
struct OldStylePlist {
    private let bytes: [UInt8]
    private var index = 0

    /// Parses `bytes`; the error is a short description of the first problem, with its byte offset.
    static func dictionary(_ bytes: [UInt8]) throws(Failure) -> [String: String] {
        var parser = OldStylePlist(bytes: bytes)
        return try parser.parseDocument()
    }

    /// Why the text is not such a dictionary.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    private mutating func parseDocument() throws(Failure) -> [String: String] {
        skipWhitespace()
        try expect(UInt8(ascii: "{"), "an opening '{'")
        var dictionary: [String: String] = [:]
        while true {
            skipWhitespace()
            if peek == UInt8(ascii: "}") {
                index += 1
                break
            }
            let keyOffset = index
            let key = try parseString(what: "a quoted key or '}'")
            skipWhitespace()
            try expect(UInt8(ascii: "="), "'=' after a key")
            skipWhitespace()
            let value = try parseString(what: "a quoted string value")
            skipWhitespace()
            try expect(UInt8(ascii: ";"), "';' after a value")
            guard dictionary.updateValue(value, forKey: key) == nil else {
                throw Failure(description: "duplicate key at byte \(keyOffset)")
            }
        }
        skipWhitespace()
        guard index == bytes.count else {
            throw Failure(description: "unexpected text after the closing '}' at byte \(index)")
        }
        return dictionary
    }

    private var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while let byte = peek, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D {
            index += 1
        }
    }

    private mutating func expect(_ byte: UInt8, _ what: String) throws(Failure) {
        guard peek == byte else { throw Failure(description: "expected \(what) at byte \(index)") }
        index += 1
    }

    private mutating func parseString(what: String) throws(Failure) -> String {
        try expect(UInt8(ascii: "\""), what)
        let start = index - 1
        var scalars = String.UnicodeScalarView()
        var utf8: [UInt8] = []
        func flush() throws(Failure) {
            guard !utf8.isEmpty else { return }
            guard let text = String(validating: utf8, as: UTF8.self) else {
                throw Failure(description: "the string at byte \(start) is not valid UTF-8")
            }
            scalars.append(contentsOf: text.unicodeScalars)
            utf8.removeAll(keepingCapacity: true)
        }
        while true {
            guard let byte = peek else { throw Failure(description: "unterminated string at byte \(start)") }
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                try flush()
                return String(scalars)
            case UInt8(ascii: "\\"):
                let scalar = try parseEscape()
                try flush()
                scalars.append(scalar)
            default:
                utf8.append(byte)
            }
        }
    }

    /// The character after a backslash (already consumed).
    private mutating func parseEscape() throws(Failure) -> Unicode.Scalar {
        let offset = index - 1
        guard let byte = peek else { throw Failure(description: "unterminated escape at byte \(offset)") }
        index += 1
        switch byte {
        case UInt8(ascii: "\""): return "\""
        case UInt8(ascii: "\\"): return "\\"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "a"): return "\u{07}"
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "v"): return "\u{0B}"
        case UInt8(ascii: "U"):
            var value: UInt32 = 0
            for _ in 0..<4 {
                guard let digit = peek.flatMap(Self.hexValue) else {
                    throw Failure(description: "\\U needs 4 hex digits at byte \(offset)")
                }
                value = value << 4 | UInt32(digit)
                index += 1
            }
            guard let scalar = Unicode.Scalar(value) else {
                throw Failure(description: "\\U escape at byte \(offset) is not a Unicode scalar")
            }
            return scalar
        case UInt8(ascii: "0")...UInt8(ascii: "7"):
            var value = UInt32(byte - UInt8(ascii: "0"))
            for _ in 0..<2 {
                guard let next = peek, next >= UInt8(ascii: "0"), next <= UInt8(ascii: "7") else { break }
                value = value << 3 | UInt32(next - UInt8(ascii: "0"))
                index += 1
            }
            // Octal escapes above 0o177 are NeXTSTEP-encoded characters; receipts have none.
            guard value < 0x80, let scalar = Unicode.Scalar(value) else {
                throw Failure(description: "octal escape at byte \(offset) is not an ASCII character")
            }
            return scalar
        default:
            throw Failure(description: "unsupported escape at byte \(offset)")
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
