public import Foundation

/// The outcome of applying a fact to what is known of a purchase.
public enum FactOutcome: Sendable, Hashable {
    /// The fact was newer: the purchase is now `purchase`.
    case applied(Purchase)
    /// The fact was not newer than what is applied; the purchase is unchanged.
    case stale
}

extension Purchase {
    /// A purchase first known through `fact`.
    public init(fact: PurchaseFact, customerID: CustomerID? = nil) {
        self.init(
            key: fact.key, customerID: customerID, app: fact.app, productID: fact.productID, kind: fact.kind,
            environment: fact.environment, state: fact.state, expiresAt: fact.expiresAt,
            gracePeriodExpiresAt: fact.gracePeriodExpiresAt, autoRenew: fact.autoRenew, ownership: fact.ownership,
            quantity: fact.quantity, accountHint: fact.accountHint, replaces: fact.replaces,
            observedAt: fact.observedAt, needsAcknowledgement: fact.needsAcknowledgement
        )
        appTransactionID = fact.appTransactionID
        basePlanID = fact.basePlanID
        offers = fact.offers
    }

    /// Applies `fact` under DESIGN.md's ordering rule: only a strictly newer fact changes anything,
    /// so re-delivered and reordered facts converge on what in-order delivery gives. The customer
    /// link is not a store fact and is kept; the account hint and replaced purchase, once known,
    /// are never forgotten by a later fact that lacks them.
    ///
    /// Marking a purchase replaced is ``superseding(at:)``.
    public func applying(_ fact: PurchaseFact) -> FactOutcome {
        precondition(fact.key == key, "a fact about \(fact.key) applied to \(key)")
        guard fact.observedAt > observedAt || (fact.observedAt == observedAt && fact.winsTie(against: self))
        else { return .stale }
        var next = Purchase(fact: fact, customerID: customerID)
        next.accountHint = fact.accountHint ?? accountHint
        next.appTransactionID = fact.appTransactionID ?? appTransactionID
        next.basePlanID = fact.basePlanID ?? basePlanID
        next.replaces = fact.replaces ?? replaces
        // Replacement is final: the old token's own later states (Google reports it expired) must
        // not make the outcome depend on which of the two purchases was heard of first.
        if state == .superseded { next.state = .superseded }
        // Nor can a store that shows a revocation as an expiry undo it: Google's answer to a
        // notification processed after the revocation's (reordered, redelivered) says expired.
        if state == .revoked, fact.state == .expired, fact.expiredMayMeanRevoked { next.state = .revoked }
        return .applied(next)
    }
}

extension Purchase {
    /// This purchase replaced by another one (Google: a new token whose `linkedPurchaseToken` names
    /// this one). Sticky: later facts about this purchase keep it superseded.
    public func superseding(at time: Date) -> Purchase {
        var next = self
        next.state = .superseded
        next.autoRenew = false
        next.observedAt = max(observedAt, time)
        return next
    }
}

/// A billing event as stored: the newest word about it wins.
public struct TransactionRecord: Sendable, Hashable, Codable {
    public var purchaseKey: PurchaseKey
    public var fact: TransactionFact

    public init(purchaseKey: PurchaseKey, fact: TransactionFact) {
        self.purchaseKey = purchaseKey
        self.fact = fact
    }

    /// The record after hearing `newer` about the same transaction (stale words change nothing).
    public func merging(_ newer: TransactionFact) -> TransactionRecord {
        let revokes = newer.revokedAt != nil && fact.revokedAt == nil
        guard newer.id == fact.id,
            newer.observedAt > fact.observedAt || (newer.observedAt == fact.observedAt && revokes)
        else { return self }
        // A later word that doesn't repeat the price or offer (a refund notice) keeps what was said.
        var newer = newer
        newer.price = newer.price ?? fact.price
        newer.offer = newer.offer ?? fact.offer
        return TransactionRecord(purchaseKey: purchaseKey, fact: newer)
    }
}

extension PurchaseFact {
    /// Whether this fact, observed in the same millisecond as what `purchase` holds, replaces it:
    /// the state further along a purchase's life wins, then the later expiry (an extension or a
    /// renewal stated in the same instant), the same way whatever the delivery order.
    func winsTie(against purchase: Purchase) -> Bool {
        if state.tieRank != purchase.state.tieRank { return state.tieRank > purchase.state.tieRank }
        return (expiresAt ?? .distantPast) > (purchase.expiresAt ?? .distantPast)
    }
}

extension SubscriptionState {
    /// Breaks ties between two facts observed in the same millisecond, the same way whatever the
    /// delivery order: the state further along a purchase's life wins.
    var tieRank: Int {
        switch self {
        case .pending: 0
        case .active: 1
        case .paused: 2
        case .canceled: 3
        case .gracePeriod: 4
        case .billingRetry: 5
        case .expired: 6
        case .revoked: 7
        case .superseded: 8
        }
    }
}
