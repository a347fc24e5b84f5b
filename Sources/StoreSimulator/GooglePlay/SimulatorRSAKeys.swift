import Synchronization
import _CryptoExtras

/// The 2048-bit RSA keys the simulated Google identities sign with or hand out (service-account
/// keys, push-signing keys, the unpublished key of forged push tokens).
///
/// Generating one takes 0.06–0.5 s of a core on the 2-core development machine, on whichever
/// thread asks: the test suite, which starts a simulator for most of its end-to-end tests, spent
/// 15.7 % of its CPU generating RSA keys (`perf record` of `swift test`), on the cooperative pool
/// the servers under test answer on. So the identities of one process share the keys generated so
/// far: each takes them in the same order (its first key, its second, …), which keeps one
/// identity's keys distinct from each other (an unpublished key is never one of its JWKS, a new
/// service-account key is really new), while the next identity reuses them instead of generating
/// its own. Keys only ever leave the process in the key files and tokens an identity hands out.
final class SimulatorRSAKeys: Sendable {
    static let shared = SimulatorRSAKeys()

    private let keys = Mutex<[_RSA.Signing.PrivateKey]>([])

    /// The process's key number `index` (from 0), generated when no identity has asked for it yet.
    /// An identity asks for its keys in order, so `index` is at most the number generated so far.
    func key(at index: Int) throws -> _RSA.Signing.PrivateKey {
        if let known = keys.withLock({ index < $0.count ? $0[index] : nil }) { return known }
        // Generated outside the lock: another identity may generate the same key meanwhile, and
        // then both use the one stored first.
        let generated = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        return keys.withLock { keys in
            if keys.count == index { keys.append(generated) }
            return index < keys.count ? keys[index] : generated
        }
    }
}
