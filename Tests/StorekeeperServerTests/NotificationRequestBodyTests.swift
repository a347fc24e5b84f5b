import Foundation
import TestSupport
import Testing

@testable import StorekeeperServer

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
