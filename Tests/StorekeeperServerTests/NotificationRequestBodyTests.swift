import Foundation
import TestSupport
import Testing

@_spi(Benchmarks) @testable import StorekeeperServer

/// The App Store notification body's signed payload: read directly when Apple's shape, and for
/// every body the answer JSONDecoder gives.
@Suite struct NotificationRequestBodyTests {
    struct Body: Decodable { var signedPayload: String }

    static func decoderAnswer(_ body: Data) -> String? {
        try? JSONDecoder().decode(Body.self, from: body).signedPayload
    }

    static func directAnswer(_ body: Data) -> String? {
        body.withUnsafeBytes { NotificationRequestBody.plainSignedPayload($0) }
    }

    @Test func applesShapeIsReadDirectly() {
        for text in [
            #"{"signedPayload":"eyJhbGciOiJFUzI1NiJ9.eyJ4IjoxfQ.c2ln"}"#,
            " \r\n\t{ \"signedPayload\" :\n\"a.b.c\" }\n",
            #"{"signedPayload":""}"#,
        ] {
            let body = Data(text.utf8)
            #expect(Self.directAnswer(body) != nil, "\(text)")
            #expect(Self.directAnswer(body) == Self.decoderAnswer(body), "\(text)")
            #expect(NotificationRequestBody.signedPayload(body) == Self.decoderAnswer(body), "\(text)")
        }
    }

    @Test func otherShapesGetJSONDecodersAnswer() {
        for text in [
            #"{"signedPayload":"a\/b"}"#, #"{"signedPayload":"\u0061"}"#, #"{"signedPayload":"é"}"#,
            #"{"other":1,"signedPayload":"x"}"#, #"{"signedPayload":"x","other":[1,{"a":null}]}"#,
            #"{"signedPayload":"x","signedPayload":"y"}"#, #"{"signedPayload":1}"#, #"{"signedPayload":null}"#,
            #"{"signedpayload":"x"}"#, #"["signedPayload","x"]"#, #"{"signedPayload":"x"} {}"#,
            #"{"signedPayload":"x""#, #"{"signedPayload":"x"#, "", "{}", "null", "\u{0}",
            "{\"signedPayload\":\"a\u{1}b\"}", "{\"signedPayload\":\"a\u{7F}b\"}",
        ] {
            let body = Data(text.utf8)
            #expect(NotificationRequestBody.signedPayload(body) == Self.decoderAnswer(body), "\(text)")
        }
    }

    /// The eight-bytes-at-a-time test flags a word exactly when one of its bytes is a quote, a
    /// backslash, a control character, DEL or not ASCII: every byte value at every position, among
    /// plain token bytes and among other special ones.
    @Test func aWordNeedsALookExactlyWhenOneOfItsBytesDoes() {
        func special(_ byte: UInt8) -> Bool {
            byte < 0x20 || byte >= 0x7F || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
        }
        for filler in [UInt8(ascii: "A"), UInt8(ascii: "."), UInt8(ascii: "_"), 0x20, 0x7E, 0x00, 0xFF, 0x22] {
            for byte in UInt8.min...UInt8.max {
                for position in 0..<8 {
                    var bytes = [UInt8](repeating: filler, count: 8)
                    bytes[position] = byte
                    let word = bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
                    #expect(
                        NotificationRequestBody.needsALook(word) == (special(byte) || special(filler)),
                        "byte \(byte) at \(position) among \(filler)")
                }
            }
        }
    }

    /// 20,000 bodies cut, spliced and altered from Apple's shape: wherever the direct reading
    /// answers, JSONDecoder answers the same; the body's answer is always JSONDecoder's.
    @Test func mutatedBodiesNeverDisagreeWithJSONDecoder() {
        var random = SplitMix64(state: 11_27)
        let pieces = Array(#"{"signedPayload":"eyJhbGciOiJFUzI1NiJ9.eyJ4IjoxfQ.c2ln"} \#t\#n\#r\\/é,:[]1"#.utf8)
        let base = Array(#"{"signedPayload":"eyJhbGciOiJFUzI1NiJ9.eyJ4IjoxfQ.c2ln"}"#.utf8)
        var direct = 0
        for _ in 0..<20_000 {
            var bytes = base
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let position = Int.random(in: 0...bytes.count, using: &random)
                switch Int.random(in: 0..<4, using: &random) {
                case 0: bytes.insert(pieces.randomElement(using: &random) ?? 0x20, at: position)
                case 1: if position < bytes.count { bytes.remove(at: position) }
                case 2:
                    if position < bytes.count { bytes[position] = pieces.randomElement(using: &random) ?? 0x20 }
                default: bytes.insert(UInt8.random(in: 0...255, using: &random), at: position)
                }
            }
            let body = Data(bytes)
            let expected = Self.decoderAnswer(body)
            if let answer = Self.directAnswer(body) {
                direct += 1
                #expect(answer == expected, "\(bytes)")
            }
            #expect(NotificationRequestBody.signedPayload(body) == expected, "\(bytes)")
        }
        // The direct reading took part: a share of the mutations leave Apple's shape valid.
        #expect(direct > 1_000)
    }
}
