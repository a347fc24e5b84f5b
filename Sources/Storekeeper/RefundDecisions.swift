public import Foundation

/// Whether a customer agreed to share consumption data with a store that asks for it during a
/// refund request (Apple's `customerConsented`), and when they said so. A customer without one has
/// not been asked: nothing is sent for them.
public struct ConsumptionConsent: Sendable, Hashable, Codable {
    public var consented: Bool
    public var decidedAt: Date

    public init(consented: Bool, decidedAt: Date) {
        self.consented = consented
        self.decidedAt = decidedAt
    }
}

/// Whether the app delivered what was bought, in Apple's terms (`deliveryStatus`).
public enum DeliveryStatus: String, Sendable, Hashable, Codable, CaseIterable {
    case delivered = "DELIVERED"
    case undeliveredQualityIssue = "UNDELIVERED_QUALITY_ISSUE"
    case undeliveredWrongItem = "UNDELIVERED_WRONG_ITEM"
    case undeliveredServerOutage = "UNDELIVERED_SERVER_OUTAGE"
    case undeliveredOther = "UNDELIVERED_OTHER"
}

/// How much of one purchase the customer used, as the app's backend reported it (non-consumables
/// and non-renewing subscriptions: the server can't see their use), with a delivery problem the
/// app knows of.
public struct PurchaseUsage: Sendable, Hashable, Codable {
    public var key: PurchaseKey
    public var customerID: CustomerID
    /// Milli-percent: 100000 is all of it.
    public var consumedMilliPercent: Int
    /// A delivery problem the app reports; nil when it reports none.
    public var deliveryProblem: DeliveryStatus?
    public var reportedAt: Date

    public static let allOfIt = 100_000

    public init(
        key: PurchaseKey, customerID: CustomerID, consumedMilliPercent: Int, deliveryProblem: DeliveryStatus? = nil,
        reportedAt: Date
    ) {
        self.key = key
        self.customerID = customerID
        self.consumedMilliPercent = consumedMilliPercent
        self.deliveryProblem = deliveryProblem
        self.reportedAt = reportedAt
    }
}

/// The refund outcome the developer prefers (Apple's `refundPreference`).
public enum RefundPreference: String, Sendable, Hashable, Codable, CaseIterable {
    case grantFull = "GRANT_FULL"
    case grantProrated = "GRANT_PRORATED"
    case decline = "DECLINE"
}

/// How the server chooses the refund preference it states.
public enum RefundPreferenceRule: Sendable, Hashable, Codable {
    /// State none.
    case noPreference
    /// Always this one.
    case fixed(RefundPreference)
    /// Decline when the customer consumed more than `declineAbovePercent` of the purchase, else
    /// `otherwise`; no preference when the share is not known (subscriptions, no usage reported).
    case byConsumedShare(declineAbovePercent: Double, otherwise: RefundPreference)
}

/// What the server answers a store's refund consumption request with, per app, with per-product
/// overrides (docs/configuration.md, "Refund policy").
public struct RefundPolicy: Sendable, Hashable, Codable {
    /// Whether to answer at all.
    public var answer: Bool
    public var preference: RefundPreferenceRule
    /// Whether the app offered a free sample, trial or description of the content before purchase.
    public var sampleContentProvided: Bool

    public init(
        answer: Bool = true, preference: RefundPreferenceRule = .noPreference, sampleContentProvided: Bool = false
    ) {
        self.answer = answer
        self.preference = preference
        self.sampleContentProvided = sampleContentProvided
    }

    /// This policy with a product's overrides.
    public func overridden(by product: RefundPolicyOverride?) -> RefundPolicy {
        guard let product else { return self }
        return RefundPolicy(
            answer: product.answer ?? answer, preference: product.preference ?? preference,
            sampleContentProvided: product.sampleContentProvided ?? sampleContentProvided)
    }
}

/// A product's departures from its app's ``RefundPolicy``; nil fields follow the app's.
public struct RefundPolicyOverride: Sendable, Hashable, Codable {
    public var answer: Bool?
    public var preference: RefundPreferenceRule?
    public var sampleContentProvided: Bool?

    public init(answer: Bool? = nil, preference: RefundPreferenceRule? = nil, sampleContentProvided: Bool? = nil) {
        self.answer = answer
        self.preference = preference
        self.sampleContentProvided = sampleContentProvided
    }
}

/// What a prorated refund of a product that grants an entitlement (all or nothing) does to it: the
/// balance of a consumable is taken back by the refunded share, but an entitlement can't be.
public enum ProratedRefundRule: Sendable, Hashable, Codable {
    /// Revoked, as a full refund would (the default: the store returned money for it).
    case revoke
    /// Kept: the customer paid for the share not refunded.
    case keep
    /// Revoked when the refunded share is at least `percent`, else kept.
    case revokeFromPercent(Double)

    /// Whether refunding `share` (0...1) of the purchase revokes its entitlement.
    public func revokes(refundedShare share: Double) -> Bool {
        switch self {
        case .revoke: true
        case .keep: false
        case .revokeFromPercent(let percent): share * 100 >= percent
        }
    }
}

/// The values of one answer to a consumption request, store-neutral (Apple: Send Consumption
/// Information V2's body).
public struct ConsumptionAnswer: Sendable, Hashable, Codable {
    /// Always true: nothing is sent without consent.
    public var customerConsented: Bool
    /// Milli-percent consumed; nil when not sent (auto-renewable subscriptions, unknown share).
    public var consumptionMilliPercent: Int?
    public var deliveryStatus: DeliveryStatus
    public var refundPreference: RefundPreference?
    public var sampleContentProvided: Bool

    public init(
        customerConsented: Bool = true, consumptionMilliPercent: Int?, deliveryStatus: DeliveryStatus,
        refundPreference: RefundPreference?, sampleContentProvided: Bool
    ) {
        self.customerConsented = customerConsented
        self.consumptionMilliPercent = consumptionMilliPercent
        self.deliveryStatus = deliveryStatus
        self.refundPreference = refundPreference
        self.sampleContentProvided = sampleContentProvided
    }
}

/// Why a consumption request was not answered.
public enum ConsumptionSkipReason: String, Sendable, Hashable, Codable, CaseIterable {
    /// The purchase is linked to no customer, so nobody's consent can be known.
    case noCustomer = "no-customer"
    /// The customer never said whether they consent.
    case noConsent = "no-consent"
    /// The customer declined to share consumption data.
    case consentDeclined = "consent-declined"
    /// The refund policy says not to answer for this app or product.
    case answeringOff = "answering-off"
}

/// What the server knows of one purchase when a consumption request for it is answered.
public struct ConsumptionFacts: Sendable, Hashable {
    public var kind: ProductKind
    /// The customer the purchase is linked to, if any.
    public var customerID: CustomerID?
    public var consent: ConsumptionConsent?
    public var delivery: DeliveryStatus
    /// Milli-percent consumed when known (consumables: from the ledger; others: as the app reported).
    public var consumedMilliPercent: Int?
    public var policy: RefundPolicy

    public init(
        kind: ProductKind, customerID: CustomerID?, consent: ConsumptionConsent?, delivery: DeliveryStatus,
        consumedMilliPercent: Int?, policy: RefundPolicy
    ) {
        self.kind = kind
        self.customerID = customerID
        self.consent = consent
        self.delivery = delivery
        self.consumedMilliPercent = consumedMilliPercent
        self.policy = policy
    }

    /// The answer to send, or why none is sent. Never a combination Apple refuses
    /// (docs/architecture.md, "Answering refund requests"):
    /// - no percentage for an auto-renewable subscription (Apple computes it from elapsed time);
    /// - a percentage of 0 when the purchase was not delivered;
    /// - `GRANT_PRORATED` on a one-time purchase only with a share strictly between 0 and 100 %:
    ///   with nothing consumed it becomes `GRANT_FULL`, with everything consumed `DECLINE`, with
    ///   the share unknown no preference is stated; not delivered, it becomes `GRANT_FULL`.
    public func decision() -> Result<ConsumptionAnswer, ConsumptionSkip> {
        guard customerID != nil else { return .failure(ConsumptionSkip(.noCustomer)) }
        guard policy.answer else { return .failure(ConsumptionSkip(.answeringOff)) }
        guard let consent else { return .failure(ConsumptionSkip(.noConsent)) }
        guard consent.consented else { return .failure(ConsumptionSkip(.consentDeclined)) }
        let subscription = kind == .subscription
        let delivered = delivery == .delivered
        let share: Int? =
            if subscription { nil } else if !delivered { 0 } else {
                consumedMilliPercent.map { min(max($0, 0), PurchaseUsage.allOfIt) }
            }
        var preference: RefundPreference?
        switch policy.preference {
        case .noPreference: preference = nil
        case .fixed(let fixed): preference = fixed
        case .byConsumedShare(let threshold, let otherwise):
            if let share {
                preference = Double(share) / 1000 > threshold ? .decline : otherwise
            }
        }
        if preference == .grantProrated && !subscription {
            switch share {
            case _ where !delivered: preference = .grantFull
            case nil: preference = nil
            case 0?: preference = .grantFull
            case PurchaseUsage.allOfIt?: preference = .decline
            default: break
            }
        }
        return .success(
            ConsumptionAnswer(
                consumptionMilliPercent: share, deliveryStatus: delivery, refundPreference: preference,
                sampleContentProvided: policy.sampleContentProvided))
    }
}

/// A consumption request left unanswered, and why.
public struct ConsumptionSkip: Error, Sendable, Hashable {
    public var reason: ConsumptionSkipReason

    public init(_ reason: ConsumptionSkipReason) {
        self.reason = reason
    }
}

/// The share of one consumable purchase's credits already spent, reading the customer's ledger
/// as spending the oldest credits first: a debit takes from the earliest credit still holding
/// any, a refund adjustment from (or, reversed, back to) the credit of its own transaction.
public enum ConsumedShare {
    /// Milli-percent of `transactionID`'s credits spent; nil when the ledger holds no credit for it.
    public static func ofCredit(_ transactionID: String, in entries: [LedgerEntry], balance: String) -> Int? {
        guard let spent = spent(transactionID, in: entries, balance: balance) else { return nil }
        return Int((Double(spent.credits) / Double(spent.of) * Double(PurchaseUsage.allOfIt)).rounded())
    }

    /// How many of `transactionID`'s credits were spent, of how many it credited; nil when the
    /// ledger holds no credit for it.
    ///
    /// One pass over the ledger, each entry's work bounded: a debit takes from the oldest credit
    /// still holding any (all before it are spent), and a correction finds its transaction's credit
    /// by key. Searching the credits for each debit and correction grew with their product, and a
    /// customer's ledger grows with every purchase and every spend.
    public static func spent(_ transactionID: String, in entries: [LedgerEntry], balance: String)
        -> (credits: Int, of: Int)?
    {
        var remaining: [(transaction: String?, amount: Int)] = []
        // The first credit of each transaction, which its corrections move.
        var creditOf: [String?: Int] = [:]
        // Every credit before this one holds nothing.
        var oldestHolding = 0
        var credited = 0
        var takenBack = 0
        for entry in entries where entry.balance == balance {
            switch entry.reason {
            case .purchase where entry.amount > 0, .transfer where entry.amount > 0:
                if creditOf[entry.transactionID] == nil { creditOf[entry.transactionID] = remaining.count }
                remaining.append((entry.transactionID, entry.amount))
                if entry.transactionID == transactionID { credited += entry.amount }
            case .refundAdjustment, .purchase, .transfer:
                // A correction of one transaction's credit: it moves that credit alone.
                if entry.transactionID == transactionID { takenBack -= entry.amount }
                if let index = creditOf[entry.transactionID] {
                    remaining[index].amount = max(0, remaining[index].amount + entry.amount)
                    if remaining[index].amount > 0 { oldestHolding = min(oldestHolding, index) }
                }
            case .debit:
                var owed = -entry.amount
                while owed > 0, oldestHolding < remaining.count {
                    let taken = min(owed, remaining[oldestHolding].amount)
                    remaining[oldestHolding].amount -= taken
                    owed -= taken
                    if remaining[oldestHolding].amount == 0 { oldestHolding += 1 }
                }
            }
        }
        guard credited > 0 else { return nil }
        let left = remaining.filter { $0.transaction == transactionID }.map(\.amount).reduce(0, +)
        return (min(max(credited - takenBack - left, 0), credited), credited)
    }
}
