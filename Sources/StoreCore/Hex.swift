/// Lowercase hexadecimal, two digits per byte: digests, signatures and random tokens as text.
///
/// Written by hand because Foundation's `String(format: "%02x")` per byte (one formatted string
/// each, then joined) was 6 % of the `customer-read` benchmark's CPU, hashing each request's API key.
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let bytes = Array(bytes)
        return String(unsafeUninitializedCapacity: bytes.count * 2) { buffer in
            var index = 0
            for byte in bytes {
                buffer[index] = digits[Int(byte >> 4)]
                buffer[index + 1] = digits[Int(byte & 0x0F)]
                index += 2
            }
            return index
        }
    }
}
