import Foundation

/// Makes the simulated Google Play's ids from a seed, so the same seed and scenario give the same
/// ids: order ids shaped like Google's (`GPA.1234-5678-9012-34567`), purchase tokens (24 letters, a
/// dot, then a long URL-safe string, as Google's look) and Pub/Sub message ids (numeric strings).
struct PlayIdentifiers: Sendable {
    private var random: SeededRandom
    private var messages: UInt64

    init(seed: UInt64) {
        random = SeededRandom(state: seed &* 0xD1B5_4A32_D192_ED03 &+ 0x2545_F491_4F6C_DD1D)
        messages = 10_000_000_000_000_000 + (seed % 1_000) * 1_000_000_000
    }

    mutating func orderId() -> String {
        "GPA." + digits(4) + "-" + digits(4) + "-" + digits(4) + "-" + digits(5)
    }

    mutating func purchaseToken() -> String {
        let letters = Array("abcdefghijklmnopqrstuvwxyz")
        let urlSafe = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        var token = String((0..<24).map { _ in letters[Int(next() % UInt64(letters.count))] })
        token += ".AO-J1O"
        token += String((0..<96).map { _ in urlSafe[Int(next() % UInt64(urlSafe.count))] })
        return token
    }

    mutating func messageId() -> String {
        messages += 1
        return String(messages)
    }

    private mutating func digits(_ count: Int) -> String {
        String((0..<count).map { _ in Character(String(next() % 10)) })
    }

    private mutating func next() -> UInt64 { random.next() }
}
