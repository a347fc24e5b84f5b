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
///
/// In front of it, an index from the exact header text of tokens whose chain was validated to that
/// chain's key: the same header bytes always carry the same `x5c`, so a hit skips decoding the
/// header and its certificates (a fifth of a verification when measured). A header not in the index
/// is decoded and looked up by its certificates' DER bytes as usual.
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

    struct State {
        var entries: [Key: Entry] = [:]
        var keysByHeader: [String: Key] = [:]
        var hits = 0
        var misses = 0
    }

    let capacity: Int
    let timeToLive: TimeInterval
    private let state = Mutex(State())

    init(capacity: Int, timeToLive: TimeInterval) {
        self.capacity = max(0, capacity)
        self.timeToLive = timeToLive
    }

    /// The chain key a previously validated token with exactly this header text had.
    func key(forHeader header: Substring) -> Key? {
        let header = String(header)
        return state.withLock { state in
            guard let key = state.keysByHeader[header] else { return nil }
            guard state.entries[key] != nil else {
                state.keysByHeader[header] = nil
                return nil
            }
            return key
        }
    }

    /// The leaf key of a validated chain usable at `effectiveDate`, if one is cached and fresh at `now`.
    func leafKey(for key: Key, effectiveDate: Date, now: Date) -> P256.Signing.PublicKey? {
        state.withLock { state in
            guard let entry = state.entries[key] else {
                state.misses += 1
                return nil
            }
            guard now.timeIntervalSince(entry.storedAt) < timeToLive, now >= entry.storedAt else {
                state.entries[key] = nil
                state.misses += 1
                return nil
            }
            guard entry.validFrom <= effectiveDate, effectiveDate <= entry.validUntil else {
                state.misses += 1
                return nil
            }
            state.hits += 1
            return entry.leafKey
        }
    }

    func insert(_ entry: Entry, for key: Key, header: Substring) {
        guard capacity > 0 else { return }
        let header = String(header)
        state.withLock { state in
            // Headers differ only in members other than x5c; a few per chain at most.
            if state.keysByHeader.count >= capacity * 4 { state.keysByHeader.removeAll(keepingCapacity: true) }
            state.keysByHeader[header] = key
            if state.entries[key] == nil, state.entries.count >= capacity {
                let now = entry.storedAt
                state.entries = state.entries.filter { now.timeIntervalSince($0.value.storedAt) < timeToLive }
                if state.entries.count >= capacity,
                    let oldest = state.entries.min(by: { $0.value.storedAt < $1.value.storedAt })
                {
                    state.entries[oldest.key] = nil
                }
            }
            state.entries[key] = entry
        }
    }

    var statistics: ChainCacheStatistics {
        state.withLock { ChainCacheStatistics(entries: $0.entries.count, hits: $0.hits, misses: $0.misses) }
    }
}

/// How the validated-chain cache has served lookups.
public struct ChainCacheStatistics: Sendable, Hashable {
    /// Chains cached now.
    public var entries: Int
    /// Lookups answered from the cache.
    public var hits: Int
    /// Lookups that had to validate a chain.
    public var misses: Int

    public init(entries: Int, hits: Int, misses: Int) {
        self.entries = entries
        self.hits = hits
        self.misses = misses
    }
}
