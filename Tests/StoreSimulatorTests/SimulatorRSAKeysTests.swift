import Foundation
import Testing
import _CryptoExtras

@testable import StoreSimulator

/// Simulators in one process share their generated RSA keys; one identity never uses a key twice.
@Suite struct SimulatorRSAKeysTests {
    static func der(_ key: _RSA.Signing.PrivateKey) -> Data { key.publicKey.derRepresentation }

    @Test func oneIdentitysKeysAreDistinct() throws {
        let identity = GooglePlayIdentity(clock: SimulatorClock(start: Date(timeIntervalSince1970: 1_800_000_000)))
        let keys = try (0..<4).map { _ in Self.der(try identity.newKey()) }
        #expect(Set(keys).count == 4)
    }

    @Test func anotherIdentityReusesTheProcesssKeysInOrder() throws {
        let clock = SimulatorClock(start: Date(timeIntervalSince1970: 1_800_000_000))
        let first = GooglePlayIdentity(clock: clock)
        let second = GooglePlayIdentity(clock: clock)
        let firstKeys = try (0..<2).map { _ in Self.der(try first.newKey()) }
        let secondKeys = try (0..<2).map { _ in Self.der(try second.newKey()) }
        #expect(firstKeys == secondKeys)
        #expect(firstKeys[0] == Self.der(try SimulatorRSAKeys.shared.key(at: 0)))
    }
}
