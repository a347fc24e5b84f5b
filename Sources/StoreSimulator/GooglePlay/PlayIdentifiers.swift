import Foundation

/// Makes the simulated Google Play's ids from a seed, so the same seed and scenario give the same
/// ids: order ids shaped like Google's (`GPA.1234-5678-9012-34567`), purchase tokens (24 letters, a
/// dot, then a long URL-safe string, as Google's look) and Pub/Sub message ids (numeric strings).
struct PlayIdentifiers: Sendable {
    private var random: UInt64
    private var messages: UInt64

    init(seed: UInt64) {
        random = seed &* 0xD1B5_4A32_D192_ED03 &+ 0x2545_F491_4F6C_DD1D
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

    /// SplitMix64.
    private mutating func next() -> UInt64 {
        random &+= 0x9E37_79B9_7F4A_7C15
        var z = random
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
