import AppStoreServer
import Foundation
import TestSupport
import Testing

@Suite struct Base64URLTests {
    @Test func decodesWhatFoundationEncodesForEveryLengthAndPadding() {
        var random = SplitMix64(state: 42)
        for length in 0..<200 {
            let bytes = Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &random) })
            let standard = bytes.base64EncodedString()
            let url = standard.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            #expect(Base64URL.decode(Substring(url)) == bytes, "padded, length \(length)")
            let unpadded = url.replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.decode(Substring(unpadded)) == bytes, "unpadded, length \(length)")
            #expect(Base64URL.encode(bytes) == unpadded)
        }
    }

    @Test(arguments: ["A", "AAAAA", "AB=C", "A*BC", "AB+C", "AB/C", "AB C", "é", "QQ==Q", "\u{0}AAA"])
    func refusesWhatIsNotBase64URL(text: String) {
        #expect(Base64URL.decode(Substring(text)) == nil)
    }

    @Test func acceptsOptionalPaddingAndEmptyInput() {
        #expect(Base64URL.decode("QQ") == Data([0x41]))
        #expect(Base64URL.decode("QQ==") == Data([0x41]))
        #expect(Base64URL.decode("") == Data())
        #expect(Base64URL.decode("_-8") == Data([0xFF, 0xEF]))
    }
}
