public import Foundation

/// base64url (RFC 4648 §5) as JWS uses it.
///
/// Decoding is table-driven over UTF-8 bytes: going through Foundation's `Data(base64Encoded:)`
/// (translate, pad, copy) cost six times as much when measured (Benchmarks/README.md). Shared by both store modules..
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
        let remainder = count % 4
        guard remainder != 1 else { return nil }
        let outputCount = count / 4 * 3 + (remainder == 0 ? 0 : remainder - 1)
        var failed = false
        let table = decodingTable
        let output = [UInt8](unsafeUninitializedCapacity: outputCount) { buffer, initialized in
            var out = 0
            var input = 0
            var accumulator: UInt32 = 0
            var bits = 0
            while input < count {
                let value = table[Int(bytes[input])]
                guard value != 0xFF else {
                    failed = true
                    break
                }
                accumulator = ((accumulator << 6) | UInt32(value)) & 0xFFFF
                bits += 6
                if bits >= 8 {
                    bits -= 8
                    if out < outputCount {
                        buffer[out] = UInt8(truncatingIfNeeded: accumulator >> UInt32(bits))
                        out += 1
                    }
                }
                input += 1
            }
            initialized = out
        }
        guard !failed, output.count == outputCount else { return nil }
        return Data(output)
    }

    /// Value of each byte in the base64url alphabet; 0xFF for bytes outside it.
    private static let decodingTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, byte) in Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8).enumerated()
        {
            table[Int(byte)] = UInt8(value)
        }
        return table
    }()

    /// Encodes without padding.
    public static func encode(_ data: some DataProtocol) -> String {
        var text = Data(data).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }
}
