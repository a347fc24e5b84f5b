/// Standard base64 (RFC 4648 §4) for receipts, which often pick up line breaks in transit: ASCII
/// whitespace anywhere is skipped; `=` padding is optional but, when present, only at the end; any
/// other character outside the alphabet fails. Non-zero trailing bits are ignored, as Foundation does.
enum ReceiptBase64 {
    /// Decodes `text` after checking its length against `maxTextBytes`.
    static func decode(_ text: String, maxTextBytes: Int) throws(ReceiptError) -> [UInt8] {
        // `utf8.count` is O(1) for native strings, so an oversized input is refused before any work.
        let length = text.utf8.count
        guard length <= maxTextBytes else {
            throw ReceiptError(.tooLarge, "the base64 text is \(length) bytes; the limit is \(maxTextBytes) bytes")
        }
        let decoded: [UInt8]?
        if let fast = text.utf8.withContiguousStorageIfAvailable({ decode(bytes: $0) }) {
            decoded = fast
        } else {
            decoded = Array(text.utf8).withUnsafeBufferPointer { decode(bytes: $0) }
        }
        guard let decoded else {
            throw ReceiptError(.notBase64, "the text is not standard base64")
        }
        return decoded
    }

    private static func decode(bytes: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count / 4 * 3 + 3)
        var accumulator: UInt32 = 0
        var bits = 0
        var symbols = 0
        var padding = 0
        for byte in bytes {
            if isWhitespace(byte) { continue }
            if byte == UInt8(ascii: "=") {
                padding += 1
                continue
            }
            // A data symbol after padding, or an unknown symbol.
            guard padding == 0, let value = value(of: byte) else { return nil }
            accumulator = ((accumulator << 6) | UInt32(value)) & 0xFFFF
            bits += 6
            symbols += 1
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        // One symbol left over cannot hold a byte; padding, when present, must complete the last quantum.
        let remainder = symbols % 4
        guard remainder != 1 else { return nil }
        if padding > 0 {
            guard remainder != 0, padding == 4 - remainder else { return nil }
        }
        return output
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    private static func value(of byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return byte - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return byte - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): return 62
        case UInt8(ascii: "/"): return 63
        default: return nil
        }
    }
}
