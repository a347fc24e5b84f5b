import Foundation
import GooglePlay

/// Where a simulated subscription purchase stands.
enum PlaySubscriptionPhase: Sendable, Hashable {
    /// Waiting for payment (a pending purchase).
    case pending
    /// Paid through `expiryTime` (ACTIVE, or CANCELED when auto-renew is off).
    case active
    /// A renewal failed at `failedAt`; access until `until`.
    case gracePeriod(until: Date, failedAt: Date)
    /// Account hold after a failed renewal; no access; expires at `until`.
    case onHold(until: Date, failedAt: Date)
    /// Paused until `until`.
    case paused(until: Date)
    /// Ended at `at` (expiry, revocation or replacement).
    case expired(at: Date)
    /// The pending purchase was canceled.
    case pendingCanceled(at: Date)
}

/// Why a subscription stopped renewing (its `canceledStateContext`).
enum PlayCancellation: Sendable, Hashable {
    case user(at: Date)
    case developer
    case system
    case replacement
}

/// One order (a billing event) of a purchase.
struct PlayOrderRecord: Sendable, Hashable {
    var orderId: String
    var purchaseToken: String
    var packageName: String
    var productId: String
    var basePlanId: String?
    var createTime: Date
    var servicePeriodStart: Date?
    var servicePeriodEnd: Date?
    var price: PlayPrice
    var quantity: Int
    var refundedQuantity = 0
    var refundTime: Date?
}

/// A simulated subscription purchase (one purchase token).
struct PlaySubscriptionRecord: Sendable {
    var purchaseToken: String
    var packageName: String
    var productId: String
    var basePlanId: String
    var plan: SimulatedBasePlan
    var options: PlayPurchaseOptions
    var purchaseTime: Date
    /// When it became paid (equal to `purchaseTime` unless it was pending).
    var startTime: Date?
    var expiryTime: Date
    var phase: PlaySubscriptionPhase
    var autoRenew: Bool
    var cancellation: PlayCancellation?
    /// The next renewal fails (set by `failBilling`).
    var billingFails = false
    /// Cycles to pause at the next renewal date (PAUSE_SCHEDULE_CHANGED).
    var scheduledPauseCycles: Int?
    var acknowledged = false
    var linkedPurchaseToken: String?
    var replacedBy: String?
    var revokedAt: Date?
    /// Order ids, oldest first; the first is the base, renewals are `base..0`, `base..1`, ….
    var orderIds: [String] = []
    var baseOrderId: String?
    var renewalCount = 0
    var lastEventDate: Date

    var latestOrderId: String? { orderIds.last }

    /// Google's state for this purchase now.
    var subscriptionState: SubscriptionState {
        switch phase {
        case .pending: .pending
        // A prepaid plan never renews, and Google calls it active until it expires (CANCELED is for
        // auto-renewing plans only).
        case .active: autoRenew || !plan.autoRenewing ? .active : .canceled
        case .gracePeriod: .inGracePeriod
        case .onHold: .onHold
        case .paused: .paused
        case .expired: .expired
        case .pendingCanceled: .pendingPurchaseCanceled
        }
    }

    /// When it stopped granting anything, if it has ended.
    var endedAt: Date? {
        switch phase {
        case .expired(let at), .pendingCanceled(let at): at
        default: nil
        }
    }

    /// The order id of the next billing event.
    mutating func nextOrderId() -> String? {
        guard let base = baseOrderId else { return nil }
        defer { renewalCount += 1 }
        return base + ".." + String(renewalCount)
    }
}

/// A simulated one-time product purchase.
struct PlayProductRecord: Sendable {
    var purchaseToken: String
    var packageName: String
    var productId: String
    var options: PlayPurchaseOptions
    var quantity: Int
    var refundedQuantity = 0
    var purchaseTime: Date
    var completionTime: Date?
    var orderId: String?
    var pending: Bool
    var canceled = false
    var acknowledged = false
    var consumed = false
    var developerPayload: String?
    var revokedAt: Date?
}

/// One entry of the voided purchases list.
struct PlayVoidedRecord: Sendable {
    var purchaseToken: String
    var orderId: String
    var purchaseTime: Date
    var voidedTime: Date
    var source: VoidedPurchase.VoidedSource
    var reason: VoidedPurchase.VoidedReason
    var isSubscription: Bool
    /// Set for quantity-based partial refunds.
    var voidedQuantity: Int?
}
