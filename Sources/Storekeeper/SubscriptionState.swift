public import Foundation

/// The store-neutral state of a subscription (DESIGN.md, "Normalized subscription state").
public enum SubscriptionState: String, Sendable, Hashable, Codable, CaseIterable {
    /// Paid and renewing; grants access until expiry.
    case active
    /// Paid, will not renew; grants access until expiry.
    case canceled
    /// Renewal failed but the store keeps access open until the grace period ends.
    case gracePeriod = "grace_period"
    /// Renewal failed and the store is retrying (Google: on hold); no access.
    case billingRetry = "billing_retry"
    /// Paused by the customer (Google only); no access.
    case paused
    /// Bought but not yet paid (Google only); no access.
    case pending
    /// Ended; no access.
    case expired
    /// Refunded or revoked; no access.
    case revoked
    /// Replaced by an upgrade or a new purchase token; no access through this purchase.
    case superseded
}

/// The facts that decide whether a subscription grants access at a given time.
public struct SubscriptionAccess: Sendable, Hashable {
    public var state: SubscriptionState
    /// When the paid period ends.
    public var expiresAt: Date?
    /// When the grace period ends (grace period only).
    public var gracePeriodExpiresAt: Date?

    public init(state: SubscriptionState, expiresAt: Date?, gracePeriodExpiresAt: Date? = nil) {
        self.state = state
        self.expiresAt = expiresAt
        self.gracePeriodExpiresAt = gracePeriodExpiresAt
    }

    /// Whether the subscription grants access at `now`. Always decided against the time asked
    /// about: "active until T" stops granting at T even if no notification ever arrives.
    public func grantsAccess(at now: Date) -> Bool {
        switch state {
        case .active, .canceled:
            guard let expiresAt else { return false }
            return now < expiresAt
        case .gracePeriod:
            guard let end = gracePeriodExpiresAt ?? expiresAt else { return false }
            return now < end
        case .billingRetry, .paused, .pending, .expired, .revoked, .superseded:
            return false
        }
    }

    /// Until when access lasts, if it is granted at `now`.
    public func accessEnds(at now: Date) -> Date? {
        guard grantsAccess(at: now) else { return nil }
        return state == .gracePeriod ? (gracePeriodExpiresAt ?? expiresAt) : expiresAt
    }
}
