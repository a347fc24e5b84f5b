import Foundation

/// Makes the simulator's ids: numeric strings shaped like Apple's (transaction ids from
/// 2000000000000001 up), and notification UUIDs from a seeded generator (1000 seeds, a million ids each), so that a run with the
/// same seed and the same scenario produces the same ids.
struct IdentifierGenerator: Sendable {
    private var transactions: UInt64
    private var webOrderLineItems: UInt64
    private var appTransactions: UInt64
    private var random: SeededRandom

    init(seed: UInt64) {
        let offset = (seed % 1_000) * 1_000_000
        transactions = UInt64(2e15) + offset
        webOrderLineItems = UInt64(2e15) + UInt64(5e14) + offset
        appTransactions = UInt64(7e15) + offset
        random = SeededRandom(state: seed &+ 0x9E37_79B9_7F4A_7C15)
    }

    mutating func transactionId() -> String {
        transactions += 1
        return String(transactions)
    }

    mutating func webOrderLineItemId() -> String {
        webOrderLineItems += 1
        return String(webOrderLineItems)
    }

    mutating func appTransactionId() -> String {
        appTransactions += 1
        return String(appTransactions)
    }

    /// A version 4 UUID from SplitMix64.
    mutating func uuid() -> UUID {
        var bytes = [UInt8]()
        for _ in 0..<2 {
            var value = nextRandom()
            for _ in 0..<8 {
                bytes.append(UInt8(truncatingIfNeeded: value))
                value >>= 8
            }
        }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }

    private mutating func nextRandom() -> UInt64 { random.next() }
}
