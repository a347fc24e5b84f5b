public import Foundation

/// base64url (RFC 4648 §5) as JWS uses it.
///
/// Decoding is table-driven over UTF-8 bytes: going through Foundation's `Data(base64Encoded:)`
/// (translate, pad, copy) cost six times as much when measured (Benchmarks/README.md). Shared by
/// both store modules, and by storage, which keeps some tokens decoded.
public enum Base64URL {
    /// Decodes base64url text. Trailing `=` padding is optional; any other character outside the
    /// alphabet, or `=` before the end, fails. Non-zero trailing bits are ignored, as Foundation does.
    public static func decode(_ text: some StringProtocol) -> Data? {
        if let decoded = text.utf8.withContiguousStorageIfAvailable({ decode(bytes: $0) }) {
            return decoded
        }
        return Array(text.utf8).withUnsafeBufferPointer { decode(bytes: $0) }
    }

    private static func decode(bytes: UnsafeBufferPointer<UInt8>) -> Data? {
        var count = bytes.count
        while count > 0, bytes[count - 1] == UInt8(ascii: "=") { count -= 1 }
        guard count % 4 != 1 else { return nil }
        return decodingTable.withUnsafeBufferPointer { table in
            decodeUnpadded(UnsafeBufferPointer(rebasing: bytes[..<count]), table: table).map { Data($0) }
        }
    }

    /// Value of each byte in the base64url alphabet; 0xFF for bytes outside it.
    private static let decodingTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, byte) in encodingAlphabet.enumerated() {
            table[Int(byte)] = UInt8(value)
        }
        return table
    }()

    /// Decodes base64url text only if it is the one encoding of its bytes that ``encode(_:)``
    /// gives back: no padding, zero trailing bits. For whoever keeps the bytes in place of the
    /// text and must give the same text back.
    public static func decodeCanonical(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        let remainder = text.count % 4
        guard remainder != 1, let last = text.last else { return text.isEmpty ? [] : nil }
        return decodingTable.withUnsafeBufferPointer { table in
            // The bits of the last character that no output byte takes must be zero (a byte outside
            // the alphabet, 0xFF, has them set; with no unused bits, the decoding refuses it).
            let unusedBits: UInt8 = remainder == 2 ? 0x0F : remainder == 3 ? 0x03 : 0
            guard table[Int(last)] & unusedBits == 0 else { return nil }
            return decodeUnpadded(text, table: table)
        }
    }

    /// Decodes base64 (RFC 4648 §4, a JWS header's `x5c` certificates) only if it is the one
    /// encoding of its bytes: padded to a multiple of four characters, zero trailing bits. For
    /// storage, which keeps certificates decoded and must give the same text back; table-driven
    /// like the rest (a byte-wise translation to base64url first was most of that encoding's cost).
    public static func decodeCanonicalPadded(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard text.count % 4 == 0 else { return nil }
        var count = text.count
        // At most two: a third `=` stays in the text, outside the alphabet, and fails it.
        while count > 0, text.count - count < 2, text[count - 1] == UInt8(ascii: "=") { count -= 1 }
        let unpadded = UnsafeBufferPointer(rebasing: text[..<count])
        guard let last = unpadded.last else { return [] }
        return standardDecodingTable.withUnsafeBufferPointer { table in
            let remainder = count % 4
            let unusedBits: UInt8 = remainder == 2 ? 0x0F : remainder == 3 ? 0x03 : 0
            guard table[Int(last)] & unusedBits == 0 else { return nil }
            return decodeUnpadded(unpadded, table: table)
        }
    }

    /// ``decodingTable`` for the standard alphabet: `+` and `/` in place of `-` and `_`.
    private static let standardDecodingTable: [UInt8] = {
        var table = decodingTable
        table[Int(UInt8(ascii: "-"))] = 0xFF
        table[Int(UInt8(ascii: "_"))] = 0xFF
        table[Int(UInt8(ascii: "+"))] = 62
        table[Int(UInt8(ascii: "/"))] = 63
        return table
    }()

    /// Decodes `text`, without padding and not one character past a group of four, four characters
    /// at a time; the last character's unused bits are ignored. Nil if a byte is outside the
    /// alphabet (0xFF in the table: top bits that no character's value has).
    private static func decodeUnpadded(_ text: UnsafeBufferPointer<UInt8>, table: UnsafeBufferPointer<UInt8>)
        -> [UInt8]?
    {
        let remainder = text.count % 4
        let outputCount = text.count / 4 * 3 + (remainder == 0 ? 0 : remainder - 1)
        var failed = false
        let output = [UInt8](unsafeUninitializedCapacity: outputCount) { buffer, initialized in
            var input = 0
            var out = 0
            while input + 4 <= text.count {
                let a = table[Int(text[input])]
                let b = table[Int(text[input + 1])]
                let c = table[Int(text[input + 2])]
                let d = table[Int(text[input + 3])]
                guard (a | b | c | d) & 0xC0 == 0 else {
                    failed = true
                    break
                }
                let group = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                buffer[out] = UInt8(truncatingIfNeeded: group >> 16)
                buffer[out + 1] = UInt8(truncatingIfNeeded: group >> 8)
                buffer[out + 2] = UInt8(truncatingIfNeeded: group)
                input += 4
                out += 3
            }
            if !failed && remainder > 1 {
                let a = table[Int(text[input])]
                let b = table[Int(text[input + 1])]
                let c = remainder == 3 ? table[Int(text[input + 2])] : 0
                if (a | b | c) & 0xC0 != 0 {
                    failed = true
                } else {
                    let group = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6
                    buffer[out] = UInt8(truncatingIfNeeded: group >> 16)
                    out += 1
                    if remainder == 3 {
                        buffer[out] = UInt8(truncatingIfNeeded: group >> 8)
                        out += 1
                    }
                }
            }
            initialized = out
        }
        return failed ? nil : output
    }

    /// Encodes without padding.
    public static func encode(_ data: some DataProtocol) -> String {
        var output: [UInt8] = []
        if data.withContiguousStorageIfAvailable({ append($0, to: &output) }) == nil {
            Array(data).withUnsafeBufferPointer { append($0, to: &output) }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Appends the base64url encoding of `bytes`, without padding, to `output`. Table-driven:
    /// Foundation's base64 with its `+` and `/` then replaced was most of the App Store
    /// simulator's signing in the ingest benchmark's profile.
    public static func append(_ bytes: UnsafeBufferPointer<UInt8>, to output: inout [UInt8]) {
        let alphabet = encodingAlphabet
        output.reserveCapacity(output.count + (bytes.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= bytes.count {
            let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            output.append(alphabet[Int(group >> 18)])
            output.append(alphabet[Int(group >> 12 & 0x3F)])
            output.append(alphabet[Int(group >> 6 & 0x3F)])
            output.append(alphabet[Int(group & 0x3F)])
            index += 3
        }
        switch bytes.count - index {
        case 1:
            let group = UInt32(bytes[index]) << 16
            output.append(alphabet[Int(group >> 18)])
            output.append(alphabet[Int(group >> 12 & 0x3F)])
        case 2:
            let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            output.append(alphabet[Int(group >> 18)])
            output.append(alphabet[Int(group >> 12 & 0x3F)])
            output.append(alphabet[Int(group >> 6 & 0x3F)])
        default: break
        }
    }

    private static let encodingAlphabet: [UInt8] = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
}
