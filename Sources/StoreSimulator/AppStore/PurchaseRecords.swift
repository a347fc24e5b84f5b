import AppStoreServer
import Foundation

/// A refund or revocation applied to a transaction.
struct RevocationRecord: Sendable, Hashable {
    var date: Date
    var reason: RevocationReason
    var type: RevocationType
    /// Milliunits: 100000 is 100%.
    var percentage: Int32
}

/// One billing event: a purchase or a renewal.
struct TransactionRecord: Sendable, Hashable {
    var transactionId: String
    var originalTransactionId: String
    var webOrderLineItemId: String?
    var bundleId: String
    /// Sandbox or Production: the purchase's, which every later transaction of it keeps.
    var environment: Environment
    var productId: String
    var type: TransactionType
    var subscriptionGroupIdentifier: String?
    var purchaseDate: Date
    var originalPurchaseDate: Date
    var expiresDate: Date?
    var price: Int64
    var currency: String
    var reason: TransactionReason
    var ownership: InAppOwnershipType
    var appAccountToken: UUID?
    var appTransactionId: String
    var offer: SimulatedOffer?
    var isUpgraded = false
    var revocation: RevocationRecord?
    var refundRequested = false
    /// Signed without `appTransactionId`, as transactions from before Apple added it are.
    var predatesAppTransactionId = false
}

/// Where an auto-renewable subscription is in its lifecycle.
enum SubscriptionPhase: Sendable, Hashable {
    case active
    /// Renewal failed; access continues until `expires`; billing retry started at `retryStart`.
    case gracePeriod(expires: Date, retryStart: Date)
    /// Renewal failed, no access; Apple retries billing for up to 60 days from `start`.
    case billingRetry(start: Date)
    case expired(intent: ExpirationIntent)
    case revoked

    var status: SubscriptionStatus {
        switch self {
        case .active: .active
        case .gracePeriod: .billingGracePeriod
        case .billingRetry: .billingRetryPeriod
        case .expired: .expired
        case .revoked: .revoked
        }
    }
}

/// An auto-renewable subscription: one `originalTransactionId` and its transactions.
struct SubscriptionRecord: Sendable, Hashable {
    var originalTransactionId: String
    var bundleId: String
    /// Sandbox or Production: renewals, upgrades and resubscriptions stay in it.
    var environment: Environment
    var customerId: String
    var appAccountToken: UUID?
    var appTransactionId: String
    var groupId: String
    var productId: String
    var autoRenewProductId: String
    var autoRenew = true
    /// The next renewal attempt fails (set by `failBilling`, cleared by `recoverBilling`).
    var billingFails = false
    var phase = SubscriptionPhase.active
    /// The phase before a refund revoked it, restored if the refund is reversed.
    var phaseBeforeRevocation: SubscriptionPhase?
    var expiresDate: Date
    var recentSubscriptionStartDate: Date
    var transactionIds: [String]
    /// The latest event's date: events are never signed earlier than this.
    var lastEventDate: Date
    /// An offer redeemed for the next renewal (`OFFER_REDEEMED` without subtype, or `DOWNGRADE`).
    var pendingOffer: SimulatedOffer?
    /// A pay-as-you-go offer in progress: renewals before `runningOfferEnds` carry it.
    var runningOffer: SimulatedOffer?
    var runningOfferEnds: Date?
    /// A price increase announced for the next renewal.
    var priceIncrease: PriceIncreaseRecord?
    /// Win-back offers Apple says the customer may redeem (renewal info `eligibleWinBackOfferIds`,
    /// for a subscription that has ended).
    var eligibleWinBackOfferIds: [String]?

    var latestTransactionId: String { transactionIds.last ?? originalTransactionId }
}

/// A customer on the simulator side: an id of the test's choosing and the account token the app
/// passes to StoreKit.
struct CustomerRecord: Sendable, Hashable {
    var appAccountToken: UUID?
    /// Per app and environment (``appTransactionKey(bundleId:environment:)``): an app transaction
    /// belongs to one environment, as a Sandbox account is not the customer's own.
    var appTransactionIds: [String: String] = [:]
    /// One-time purchases (consumables, non-consumables, non-renewing subscriptions), oldest first.
    var oneTimeTransactionIds: [String] = []
}

extension CustomerRecord {
    /// The key of `appTransactionIds`.
    static func appTransactionKey(bundleId: String, environment: Environment) -> String {
        bundleId + "/" + environment.rawValue
    }
}
