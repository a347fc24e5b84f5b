import Foundation
import StoreCore
import TestSupport
import Testing

@testable import StorekeeperStorage

/// How a notification's body is stored (`StoredNotificationBody`): its signed tokens' certificate
/// chains once and their parts decoded, and every body, whatever it holds, read back byte for byte.
@Suite struct StoredNotificationBodyTests {
    /// A body shaped as the App Store's: a signed notification whose payload holds a signed
    /// transaction and signed renewal info, all three with the same certificate chain.
    static func appStoreLikeBody(
        _ random: inout SplitMix64, separator: String = ",", escapingSlashes: Bool = false
    ) -> (body: Data, certificates: [Data]) {
        let certificates = (0..<3).map { index in
            Data((0..<(900 - index * 150)).map { _ in UInt8.random(in: 0...255, using: &random) })
        }
        let written = certificates.map {
            let base64 = $0.base64EncodedString()
            // As Foundation's `JSONSerialization` writes them (the simulator's headers); Apple's don't.
            return escapingSlashes ? base64.replacingOccurrences(of: "/", with: "\\/") : base64
        }
        let chain = "[" + written.map { "\"\($0)\"" }.joined(separator: separator) + "]"
        func token(_ payload: String) -> String {
            let header = #"{"alg":"ES256","x5c":\#(chain)}"#
            let signature = Data((0..<64).map { _ in UInt8.random(in: 0...255, using: &random) })
            return [Data(header.utf8), Data(payload.utf8), signature].map(Base64URL.encode).joined(separator: ".")
        }
        let transaction = token(
            #"{"transactionId":"2000000\#(UInt32.random(in: 0...UInt32.max, using: &random))","bundleId":"com.example","type":"Consumable","environment":"Sandbox"}"#
        )
        let renewal = token(#"{"autoRenewStatus":1,"environment":"Sandbox"}"#)
        let notification = token(
            #"{"notificationType":"ONE_TIME_CHARGE","notificationUUID":"\#(UUID())","data":{"bundleId":"com.example","signedTransactionInfo":"\#(transaction)","signedRenewalInfo":"\#(renewal)"},"version":"2.0"}"#
        )
        return (Data(#"{"signedPayload":"\#(notification)"}"#.utf8), certificates)
    }

    static func occurrences(of needle: Data, in haystack: Data) -> Int {
        var count = 0
        var range = haystack.startIndex..<haystack.endIndex
        while let found = haystack.range(of: needle, in: range) {
            count += 1
            range = found.upperBound..<haystack.endIndex
        }
        return count
    }

    @Test(arguments: [false, true])
    func aSignedNotificationKeepsItsChainOnceAndReadsBackAsReceived(escapingSlashes: Bool) throws {
        var random = SplitMix64(state: 7)
        let (body, certificates) = Self.appStoreLikeBody(&random, escapingSlashes: escapingSlashes)
        let stored = StoredNotificationBody.encode(body)
        #expect(stored.prefix(2) == Data([0x00, 0x01]))
        // Three tokens, one chain: its certificates stored once, decoded.
        for certificate in certificates {
            #expect(Self.occurrences(of: certificate, in: stored) == 1)
            #expect(Self.occurrences(of: Data(certificate.base64EncodedString().utf8), in: stored) == 0)
        }
        #expect(stored.count * 3 < body.count, "\(stored.count) bytes stored for \(body.count)")
        #expect(try StoredNotificationBody.decode(stored) == body)
    }

    /// A chain written otherwise than `["<base64>",…]` (here with spaces) is kept as its text,
    /// once all the same.
    @Test func aChainOfAnotherShapeIsKeptAsItsText() throws {
        var random = SplitMix64(state: 8)
        let (body, certificates) = Self.appStoreLikeBody(&random, separator: ", ")
        let stored = StoredNotificationBody.encode(body)
        let text = Data(certificates.map { $0.base64EncodedString() }.joined(separator: "\", \"").utf8)
        #expect(Self.occurrences(of: text, in: stored) == 1)
        #expect(stored.count * 2 < body.count)
        #expect(try StoredNotificationBody.decode(stored) == body)
    }

    /// A certificate whose base64 is not the one its bytes encode to keeps its chain as text:
    /// without its padding, with one `=` too many, a trailing bit set, one slash left bare among
    /// escaped ones.
    @Test(arguments: ["unpadded", "overpadded", "trailing bit", "bare slash"])
    func aChainWithACertificateNotInCanonicalBase64IsKeptAsItsText(variant: String) throws {
        var random = SplitMix64(state: 21)
        // 902 bytes: padded with one `=`, the character before it with 2 low bits unused.
        let certificate = Data((0..<902).map { _ in UInt8.random(in: 0...255, using: &random) })
        var text = certificate.base64EncodedString().replacingOccurrences(of: "/", with: "\\/")
        switch variant {
        case "unpadded": text.removeLast()
        case "overpadded": text += "="
        case "trailing bit":
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
            let last = text.index(text.endIndex, offsetBy: -2)
            let value = try #require(alphabet.firstIndex(of: text[last]))
            text.replaceSubrange(last...last, with: String(alphabet[value | 1]))
        default:
            let escaped = try #require(text.range(of: "\\/"))
            text.replaceSubrange(escaped, with: "/")
        }
        let header = #"{"alg":"ES256","x5c":["\#(text)"]}"#
        let token = [Data(header.utf8), Data(#"{"a":1}"#.utf8), Data(repeating: 7, count: 64)].map(Base64URL.encode)
            .joined(separator: ".")
        let body = Data(#"{"signedPayload":"\#(token)"}"#.utf8)
        let stored = StoredNotificationBody.encode(body)
        #expect(Self.occurrences(of: Data(text.utf8), in: stored) == 1)
        #expect(try StoredNotificationBody.decode(stored) == body)
    }

    @Test func bodiesWithoutSuchTokensAreStoredAsReceived() throws {
        let bodies = [
            Data(#"{"message":{"data":"eyJ2ZXJzaW9uIjoiMS4wIn0=","messageId":"1"},"subscription":"s"}"#.utf8),
            Data(), Data("{}".utf8), Data(#"{"signedPayload":"eyJhbGciOiJFUzI1NiJ9.e30.c2ln"}"#.utf8),
        ]
        for body in bodies {
            let stored = StoredNotificationBody.encode(body)
            #expect(stored == body)
            #expect(try StoredNotificationBody.decode(stored) == body)
        }
        // No JSON body begins with a zero byte; one that does is marked as received all the same.
        let zero = Data([0x00, 0x01, 0x02])
        #expect(StoredNotificationBody.encode(zero) == Data([0x00, 0x00, 0x00, 0x01, 0x02]))
        #expect(try StoredNotificationBody.decode(StoredNotificationBody.encode(zero)) == zero)
    }

    /// A token's base64url with non-zero trailing bits decodes to the same bytes as the canonical
    /// text, so keeping it decoded would give back another text: it is kept as received.
    @Test func aTokenWhoseTextIsNotCanonicalBase64URLIsKeptAsReceived() throws {
        var random = SplitMix64(state: 11)
        let (body, _) = Self.appStoreLikeBody(&random)
        var text = String(decoding: body, as: UTF8.self)
        let signatureEnd = try #require(text.range(of: "\"}", options: .backwards)).lowerBound
        // The outer signature's last character (64 bytes: 86 characters, the last with 4 unused bits) with them set.
        let last = text.index(before: signatureEnd)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let value = try #require(alphabet.firstIndex(of: text[last]))
        text.replaceSubrange(last...last, with: String(alphabet[(value & ~3) | 1]))
        let nonCanonical = Data(text.utf8)
        let stored = StoredNotificationBody.encode(nonCanonical)
        #expect(try StoredNotificationBody.decode(stored) == nonCanonical)
        // Its nested tokens are still inside the outer token's text, which is kept as received.
        #expect(stored == nonCanonical)
    }

    @Test func everyMutationOfASignedBodyReadsBackAsReceived() throws {
        var random = SplitMix64(state: 2026)
        let (body, _) = Self.appStoreLikeBody(&random)
        let interesting = Array(#"".ey{}[]:,\=-_A0"#.utf8) + [0x00, 0x80, 0xFF]
        var kept = 0
        for _ in 0..<1_500 {
            var bytes = Array(body)
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let position = Int.random(in: 0..<bytes.count, using: &random)
                let byte = interesting.randomElement(using: &random) ?? 0
                switch Int.random(in: 0..<3, using: &random) {
                case 0: bytes[position] = byte
                case 1: bytes.insert(byte, at: position)
                default: bytes.remove(at: position)
                }
            }
            let mutated = Data(bytes)
            let stored = StoredNotificationBody.encode(mutated)
            if stored.count < mutated.count { kept += 1 }
            #expect(try StoredNotificationBody.decode(stored) == mutated)
        }
        // Both paths were taken: about one mutation in nine leaves the outer token whole (with
        // base64url characters in place of others), and it is still kept decoded.
        #expect(kept > 100)
    }

    @Test func randomBytesReadBackAsReceived() throws {
        var random = SplitMix64(state: 5)
        let alphabet = Array("ey.\"".utf8) + Array("eyJhbGciOiJ9x5c".utf8) + [0x00, 0xFF]
        for length in 0..<600 {
            let body = Data((0..<length).map { _ in alphabet.randomElement(using: &random) ?? 0 })
            #expect(try StoredNotificationBody.decode(StoredNotificationBody.encode(body)) == body)
        }
    }

    @Test func aDamagedStoredBodyIsRefusedAsCorrupt() throws {
        var random = SplitMix64(state: 3)
        let stored = StoredNotificationBody.encode(Self.appStoreLikeBody(&random).body)
        // Cut anywhere after its format, it is refused, never misread.
        for length in 1..<stored.count {
            #expect(throws: StorageError.self) { try StoredNotificationBody.decode(stored.prefix(length)) }
        }
        #expect(throws: StorageError.self) { try StoredNotificationBody.decode(stored + Data([0x00])) }
        #expect(throws: StorageError.self) { try StoredNotificationBody.decode(Data([0x00, 0x07])) }
        // A token naming a chain not stored before it.
        let badChain = Data([0x00, 0x01, 0x03, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00])
        do {
            _ = try StoredNotificationBody.decode(badChain)
            Issue.record("a chain that was never stored was read")
        } catch {
            #expect(error.reason == .corrupt)
            #expect(error.detail.contains("chain 5 of 0"))
        }
    }

    /// Whatever the column holds, reading it gives a body or `storage corrupt`, never a crash.
    @Test func arbitraryStoredBytesAreReadOrRefused() {
        var random = SplitMix64(state: 13)
        let parts: [UInt8] = [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x7F, 0x80, 0xFF]
        var refused = 0
        for _ in 0..<3_000 {
            let length = Int.random(in: 0..<40, using: &random)
            let stored = Data([0x00, 0x01] + (0..<length).map { _ in parts.randomElement(using: &random) ?? 0 })
            do {
                _ = try StoredNotificationBody.decode(stored)
            } catch {
                #expect(error.reason == .corrupt)
                refused += 1
            }
        }
        #expect(refused > 0 && refused < 3_000)
    }
}
