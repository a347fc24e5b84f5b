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

    /// Storage keeps a token's parts decoded only where the text is the one its bytes encode to.
    @Test func decodesCanonicallyOnlyTheTextItsBytesEncodeTo() {
        var random = SplitMix64(state: 9)
        for length in 0..<120 {
            let bytes = Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &random) })
            let text = Array(Base64URL.encode(bytes).utf8)
            #expect(text.withUnsafeBufferPointer(Base64URL.decodeCanonical) == Array(bytes), "length \(length)")
            // The last character with an unused bit set decodes (leniently) to the same bytes.
            if length % 3 != 0, let last = text.last {
                let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
                let value = alphabet.firstIndex(of: last) ?? 0
                var lenient = text
                lenient[lenient.count - 1] = alphabet[value | 1]
                #expect(Base64URL.decode(String(decoding: lenient, as: UTF8.self)) == bytes)
                #expect(lenient.withUnsafeBufferPointer(Base64URL.decodeCanonical) == nil, "length \(length)")
            }
        }
        for text in ["QQ==", "A", "AAAAA", "AB+C", "AB/C", "A.BC", "AAAA\u{0}AAA", "QR"] {
            #expect(Array(text.utf8).withUnsafeBufferPointer(Base64URL.decodeCanonical) == nil, "\(text)")
        }
        #expect(Array("QQ".utf8).withUnsafeBufferPointer(Base64URL.decodeCanonical) == [0x41])
    }

    /// An `x5c` certificate's padded base64, decoded only where the text is the one Foundation
    /// writes for its bytes.
    @Test func decodesPaddedBase64CanonicallyOnlyTheTextItsBytesEncodeTo() {
        var random = SplitMix64(state: 10)
        for length in 0..<120 {
            let bytes = Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &random) })
            let text = Array(bytes.base64EncodedString().utf8)
            #expect(text.withUnsafeBufferPointer(Base64URL.decodeCanonicalPadded) == Array(bytes), "length \(length)")
            // Without its padding, with a trailing bit set, or in the URL alphabet: refused.
            let unpadded = Array(text.prefix { $0 != UInt8(ascii: "=") })
            if unpadded.count != text.count {
                #expect(unpadded.withUnsafeBufferPointer(Base64URL.decodeCanonicalPadded) == nil, "length \(length)")
                let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
                var lenient = text
                let last = unpadded.count - 1
                lenient[last] = alphabet[(alphabet.firstIndex(of: lenient[last]) ?? 0) | 1]
                #expect(Data(base64Encoded: Data(lenient)) != nil)
                #expect(lenient.withUnsafeBufferPointer(Base64URL.decodeCanonicalPadded) == nil, "length \(length)")
            }
            let url = text.map {
                $0 == UInt8(ascii: "+") ? UInt8(ascii: "-") : $0 == UInt8(ascii: "/") ? UInt8(ascii: "_") : $0
            }
            if url != text {
                #expect(url.withUnsafeBufferPointer(Base64URL.decodeCanonicalPadded) == nil, "length \(length)")
            }
        }
        for text in ["Q===", "====", "QQ=", "QQ=A", "AB-C", "AB_C", "A.BC", "AAAA\u{0}AAA", "QR=="] {
            #expect(Array(text.utf8).withUnsafeBufferPointer(Base64URL.decodeCanonicalPadded) == nil, "\(text)")
        }
        #expect(Array("QQ==".utf8).withUnsafeBufferPointer(Base64URL.decodeCanonicalPadded) == [0x41])
        #expect(Array("+/8=".utf8).withUnsafeBufferPointer(Base64URL.decodeCanonicalPadded) == [0xFB, 0xFF])
    }
}
