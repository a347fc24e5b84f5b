public import Foundation
import Synchronization

/// Hands out App Store Server API tokens, reusing one until shortly before it expires. Thread-safe:
/// concurrent callers share one token, and a renewal is signed once, under the lock.
public final class AppStoreServerAPITokenProvider: Sendable {
    private let key: AppStoreSigningKey
    private let issuerId: String
    private let bundleId: String
    private let lifetime: TimeInterval
    private let refreshMargin: TimeInterval
    private let clock: any WallClock
    private let cached = Mutex<AppStoreServerAPIToken?>(nil)

    /// A provider of tokens living `lifetime` (at most 60 minutes), renewed once fewer than
    /// `refreshMargin` seconds of it remain.
    public init(
        key: AppStoreSigningKey, issuerId: String, bundleId: String, lifetime: TimeInterval = 20 * 60,
        refreshMargin: TimeInterval = 60, clock: any WallClock = SystemWallClock()
    ) throws(RequestSigningError) {
        try AppStoreServerAPIToken.validate(issuerId: issuerId, bundleId: bundleId, lifetime: lifetime)
        guard refreshMargin >= 0, refreshMargin < lifetime else {
            throw RequestSigningError(
                .invalidConfiguration, "the refresh margin must be at least 0 s and shorter than the token lifetime")
        }
        self.key = key
        self.issuerId = issuerId
        self.bundleId = bundleId
        self.lifetime = lifetime
        self.refreshMargin = refreshMargin
        self.clock = clock
    }

    /// A token valid for at least `refreshMargin` more seconds: the cached one, or a new one.
    public func token() throws(RequestSigningError) -> AppStoreServerAPIToken {
        try cached.withLock { slot throws(RequestSigningError) -> AppStoreServerAPIToken in
            let now = clock.now()
            // A clock that stepped back before iat gets a new token: Apple refuses one issued in the future.
            if let token = slot, token.issuedAt <= now, now < token.expiresAt.addingTimeInterval(-refreshMargin) {
                return token
            }
            let token = try AppStoreServerAPIToken.sign(
                key: key, issuerId: issuerId, bundleId: bundleId, issuedAt: now, lifetime: lifetime)
            slot = token
            return token
        }
    }

    /// Drops the cached token (e.g. after the API answered 401), so the next call signs a new one.
    public func invalidate() {
        cached.withLock { $0 = nil }
    }
}
