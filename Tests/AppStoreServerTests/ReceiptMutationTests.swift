import AppStoreServer
import Foundation
import TestSupport
import Testing

/// Property: every input — a mutation of a valid receipt, or random bytes — either parses or throws
/// `ReceiptError` (guaranteed by the typed `throws(ReceiptError)`), never traps, and finishes fast.
/// Seeded, so a failure replays; the seed and iteration are in the failure message.
@Suite struct ReceiptMutationTests {
    static let legacyBytes = Array(
        Data(
            base64Encoded: ReceiptFixture.legacyReceipt(
                purchaseInfo:
                    "{\n\t\"transaction-id\" = \"1000000046178818\";\n\t\"original-transaction-id\" = \"1\";\n}"))!)

    /// Valid inputs to mutate: DER, BER with two chunkings, a receipt without purchases, a legacy receipt.
    static let seeds: [[UInt8]] = [
        ReceiptFixture.derReceipt(),
        ReceiptFixture.berReceipt(),
        ReceiptFixture.berReceipt(purchases: Array(ReceiptFixture.purchases.prefix(1)), chunkSize: 2),
        ReceiptFixture.derReceipt(purchases: []),
        legacyBytes,
    ]

    /// A bounded parse of a receipt this size takes microseconds; the bound catches one that runs
    /// away (exponential nesting, a length that loops), not a slow machine. Wall-clock time under a
    /// full parallel suite on 2 cores includes waiting for a core, so the bound is far above any
    /// parse. (`ReceiptTests` uses it too.)
    static let runawayBound = Duration.seconds(10)

    /// Bytes that make interesting lengths and tags: indefinite (0x80), long forms, end-of-contents.
    static let interesting: [UInt8] = [
        0x00, 0x01, 0x04, 0x24, 0x30, 0x31, 0x7F, 0x80, 0x81, 0x82, 0x84, 0x88, 0xA0, 0xFF,
    ]

    static func mutate(_ input: [UInt8], using random: inout SplitMix64) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            if bytes.isEmpty { bytes = [0x30] }
            let position = Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<8, using: &random) {
            case 0: bytes[position] ^= UInt8(1) << UInt8.random(in: 0...7, using: &random)
            case 1: bytes[position] = UInt8.random(in: 0...255, using: &random)
            case 2: bytes.remove(at: position)
            case 3: bytes.insert(UInt8.random(in: 0...255, using: &random), at: position)
            case 4: bytes.removeSubrange(position...)
            case 5:
                // A random length: short, long-form or indefinite, possibly with random length octets.
                bytes[position] = interesting[Int.random(in: 0..<interesting.count, using: &random)]
                for offset in 1...Int.random(in: 1...4, using: &random) where position + offset < bytes.count {
                    bytes[position + offset] = UInt8.random(in: 0...255, using: &random)
                }
            case 6:
                // Duplicate a slice in place (repeated nodes, bigger sets).
                let end = min(bytes.count, position + Int.random(in: 1...64, using: &random))
                bytes.insert(contentsOf: bytes[position..<end], at: position)
            default:
                bytes[position] = interesting[Int.random(in: 0..<interesting.count, using: &random)]
            }
        }
        return bytes
    }

    /// Runs every parser on `bytes` and records the outcome.
    static func parseAll(_ bytes: [UInt8], into outcomes: inout [String: Int]) {
        do {
            let receipt = try StoreKitReceipt(bytes: bytes)
            outcomes["parsed", default: 0] += 1
            _ = try? receipt.requireTransactionId()
        } catch {
            outcomes[error.reason.rawValue, default: 0] += 1
        }
        _ = try? AppReceipt(bytes: bytes)
        _ = try? LegacyTransactionReceipt(bytes: bytes)
    }

    @Test(arguments: [1 as UInt64, 2, 3, 4])
    func mutatedReceiptsParseOrThrowReceiptError(seed: UInt64) {
        var random = SplitMix64(state: seed)
        var outcomes: [String: Int] = [:]
        var slowest = Duration.zero
        let clock = ContinuousClock()
        for iteration in 0..<2500 {
            let base = Self.seeds[iteration % Self.seeds.count]
            let input = Self.mutate(base, using: &random)
            let elapsed = clock.measure { Self.parseAll(input, into: &outcomes) }
            slowest = max(slowest, elapsed)
            #expect(elapsed < Self.runawayBound, "seed \(seed) iteration \(iteration) took \(elapsed)")
        }
        // The mutations reach many steps, not one early exit, and some still parse.
        #expect(outcomes.keys.count >= 6, "\(outcomes)")
        #expect(outcomes["parsed", default: 0] > 0, "\(outcomes)")
        #expect(slowest < Self.runawayBound)
    }

    /// Mutations inside the content only, wrapped in a valid envelope, so they reach the attribute
    /// sets and values instead of stopping at the outer structure.
    @Test(arguments: [5 as UInt64, 6])
    func mutatedPayloadsInAValidEnvelope(seed: UInt64) {
        var random = SplitMix64(state: seed)
        let payloads = [
            ReceiptFixture.derAttributeSet(ReceiptFixture.payloadAttributes(purchases: ReceiptFixture.purchases)),
            ReceiptFixture.derAttributeSet(ReceiptFixture.inAppAttributes(ReceiptFixture.purchases[2])),
        ]
        var outcomes: [String: Int] = [:]
        let clock = ContinuousClock()
        for iteration in 0..<2500 {
            var payload = Self.mutate(payloads[0], using: &random)
            if iteration % 2 == 1 {
                // Mutate one in-app set and put it back among intact attributes.
                var attributes = ReceiptFixture.payloadAttributes(purchases: [ReceiptFixture.purchases[0]])
                attributes.append((17, Self.mutate(payloads[1], using: &random)))
                payload = ReceiptFixture.derAttributeSet(attributes)
            }
            let input = ReceiptFixture.derEnvelope(payload: payload)
            let elapsed = clock.measure { Self.parseAll(input, into: &outcomes) }
            #expect(elapsed < Self.runawayBound, "seed \(seed) iteration \(iteration) took \(elapsed)")
        }
        #expect(outcomes["malformed-attribute", default: 0] > 100, "\(outcomes)")
        #expect(outcomes["malformed-payload", default: 0] > 100, "\(outcomes)")
        #expect(outcomes["parsed", default: 0] > 20, "\(outcomes)")
    }

    @Test(arguments: [11 as UInt64, 12])
    func randomBytesParseOrThrowReceiptError(seed: UInt64) {
        var random = SplitMix64(state: seed)
        var outcomes: [String: Int] = [:]
        let clock = ContinuousClock()
        for iteration in 0..<3000 {
            var input = (0..<Int.random(in: 0...700, using: &random)).map { _ in
                UInt8.random(in: 0...255, using: &random)
            }
            // Half start like a receipt, so the random part is read deeper than the first byte.
            if iteration % 2 == 0, !input.isEmpty {
                input[0] = iteration % 4 == 0 ? 0x30 : UInt8(ascii: "{")
                if input.count > 1, iteration % 8 == 0 { input[1] = 0x80 }
            }
            let elapsed = clock.measure { Self.parseAll(input, into: &outcomes) }
            #expect(elapsed < Self.runawayBound, "seed \(seed) iteration \(iteration) took \(elapsed)")
        }
        #expect(outcomes["parsed", default: 0] == 0, "\(outcomes)")
        #expect(outcomes.keys.count >= 2, "\(outcomes)")
    }

    @Test(arguments: [21 as UInt64, 22])
    func mutatedBase64TextParsesOrThrowsReceiptError(seed: UInt64) {
        var random = SplitMix64(state: seed)
        let texts = [
            ReceiptFixture.wrapped(Data(ReceiptFixture.derReceipt()).base64EncodedString()),
            ReceiptFixture.legacyReceipt(purchaseInfo: "{\"transaction-id\" = \"5\";}"),
        ]
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=\r\n -_*".utf8)
        var outcomes: [String: Int] = [:]
        for iteration in 0..<1500 {
            var bytes = Array(texts[iteration % texts.count].utf8)
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                guard !bytes.isEmpty else { break }
                let position = Int.random(in: 0..<bytes.count, using: &random)
                let symbol = alphabet[Int.random(in: 0..<alphabet.count, using: &random)]
                switch Int.random(in: 0..<4, using: &random) {
                case 0: bytes[position] = symbol
                case 1: bytes.remove(at: position)
                case 2: bytes.insert(symbol, at: position)
                default: bytes.removeSubrange(position...)
                }
            }
            do {
                _ = try StoreKitReceipt(base64: String(decoding: bytes, as: UTF8.self))
                outcomes["parsed", default: 0] += 1
            } catch {
                outcomes[error.reason.rawValue, default: 0] += 1
            }
        }
        #expect(outcomes["not-base64", default: 0] > 0, "\(outcomes)")
        #expect(outcomes.keys.count >= 4, "\(outcomes)")
    }
}
