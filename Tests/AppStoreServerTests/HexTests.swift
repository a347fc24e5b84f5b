import Crypto
import Foundation
import StoreCore
import Testing

/// `Hex.encode`: lowercase, two digits per byte, what `String(format: "%02x")` wrote before.
@Suite struct HexTests {
    @Test func encodesEveryByteAsTwoLowercaseDigits() {
        #expect(Hex.encode([UInt8]()) == "")
        #expect(Hex.encode([0x00, 0x01, 0x0A, 0x7F, 0x80, 0xAB, 0xFF]) == "00010a7f80abff")
        let every = (0...255).map { UInt8($0) }
        #expect(Hex.encode(every) == every.map { String(format: "%02x", $0) }.joined())
        // SHA-256("abc"), FIPS 180-2.
        #expect(
            Hex.encode(SHA256.hash(data: Data("abc".utf8)))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
