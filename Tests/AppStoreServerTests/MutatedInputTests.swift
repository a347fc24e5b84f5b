import AppStoreServer
import Foundation
import TestSupport
import Testing

@Suite struct MutatedInputTests {
    /// Every mutation of a genuine token is refused with a specific reason (or, if it happens to
    /// leave the signed bytes intact, verifies to the same payload) — never a crash or a hang.
    @Test(arguments: [1 as UInt64, 2, 3])
    func mutatedTokensAreRefusedCleanly(seed: UInt64) async throws {
        let fixture = try VerifierFixture()
        let verifier = try fixture.verifier()
        let token = try fixture.signer.sign(fixture.transaction())
        let original = Array(token.utf8)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ {}\"\u{0}".utf8)
        var random = SplitMix64(state: seed)
        var reasons: [SignedDataVerificationError.Reason: Int] = [:]
        for _ in 0..<700 {
            var bytes = original
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                let position = Int.random(in: 0..<bytes.count, using: &random)
                switch Int.random(in: 0..<5, using: &random) {
                case 0: bytes[position] = alphabet.randomElement(using: &random)!
                case 1: bytes.remove(at: position)
                case 2: bytes.insert(alphabet.randomElement(using: &random)!, at: position)
                case 3: bytes.removeSubrange(position...)
                default: bytes[position] ^= UInt8.random(in: 1...255, using: &random)
                }
                if bytes.isEmpty { bytes = [UInt8(ascii: ".")] }
            }
            let mutated = String(decoding: bytes, as: UTF8.self)
            do {
                let transaction = try await verifier.verify(mutated, as: JWSTransaction.self)
                // Possible only when the mutation left the signed bytes as they were (e.g. padding).
                #expect(transaction == fixture.transaction(), "a mutated token verified to another payload")
            } catch {
                reasons[error.reason, default: 0] += 1
            }
        }
        // The mutations reach many checks, not one early exit.
        #expect(reasons.keys.count >= 4, "\(reasons)")
    }
}
