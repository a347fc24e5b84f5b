import Crypto
import Foundation
import Synchronization

/// Certificate chains that already passed every certificate check, so that steady-state
/// verification costs one ECDSA verification plus decoding.
///
/// Keyed by the exact DER bytes of leaf and intermediate; an entry is reused only for effective
/// dates inside the validity of every certificate of its chain, and only until it is `timeToLive`
/// old (which also bounds how stale an online revocation answer may get). At most `capacity`
/// entries; when full, expired entries go first, then the oldest.
final class VerifiedChainCache: Sendable {
    struct Key: Hashable, Sendable {
        var leaf: Data
        var intermediate: Data
    }

    struct Entry: Sendable {
        var leafKey: P256.Signing.PublicKey
        /// The intersection of the chain's validity periods.
        var validFrom: Date
        var validUntil: Date
        var storedAt: Date
    }

    let capacity: Int
    let timeToLive: TimeInterval
    private let entries: Mutex<[Key: Entry]>

    init(capacity: Int, timeToLive: TimeInterval) {
        self.capacity = max(0, capacity)
        self.timeToLive = timeToLive
        self.entries = Mutex([:])
    }

    /// The leaf key of a validated chain usable at `effectiveDate`, if one is cached and fresh at `now`.
    func leafKey(for key: Key, effectiveDate: Date, now: Date) -> P256.Signing.PublicKey? {
        entries.withLock { entries in
            guard let entry = entries[key] else { return nil }
            guard now.timeIntervalSince(entry.storedAt) < timeToLive, now >= entry.storedAt else {
                entries[key] = nil
                return nil
            }
            guard entry.validFrom <= effectiveDate, effectiveDate <= entry.validUntil else { return nil }
            return entry.leafKey
        }
    }

    func insert(_ entry: Entry, for key: Key) {
        guard capacity > 0 else { return }
        entries.withLock { entries in
            if entries[key] == nil, entries.count >= capacity {
                let now = entry.storedAt
                entries = entries.filter { now.timeIntervalSince($0.value.storedAt) < timeToLive }
                if entries.count >= capacity, let oldest = entries.min(by: { $0.value.storedAt < $1.value.storedAt }) {
                    entries[oldest.key] = nil
                }
            }
            entries[key] = entry
        }
    }

    var count: Int { entries.withLock { $0.count } }
}
