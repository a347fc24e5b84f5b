public import AppStoreServer
public import Foundation

/// One Send Consumption Information answer the simulator received.
public struct ReceivedConsumption: Sendable, Hashable, Encodable {
    public var request: ConsumptionRequest
    public var receivedAt: Date
    /// What it decided, when it came while the customer's refund request was open.
    public var decision: RefundDecision?
}

/// How the simulated App Store settled a refund request.
public enum RefundDecision: Sendable, Hashable, Encodable {
    /// `REFUND_DECLINED`.
    case decline
    /// `REFUND` with this `revocationPercentage` (milliunits; 100000 is `REFUND_FULL`, less is
    /// `REFUND_PRORATED`).
    case refund(percentage: Int32)
}

/// The simulator's deterministic stand-in for Apple's refund decision (docs/simulator.md), made
/// when the consumption answer arrives:
/// - `DECLINE` declines;
/// - `GRANT_FULL` refunds in full;
/// - `GRANT_PRORATED` refunds the share not consumed: 100000 − `consumptionPercentage` for a
///   one-time purchase; for an auto-renewable subscription the share of the current period not
///   yet elapsed;
/// - no preference: a full refund when the purchase was not delivered or less than half of it was
///   consumed (or the share is unknown), else a decline.
/// Without an answer nothing is decided: the control API's `refund` and `refund-decline` do it.
public enum RefundDecisionRule {
    public static func decide(_ answer: ConsumptionRequest, for transaction: TransactionRecordView, at now: Date)
        -> RefundDecision
    {
        switch answer.refundPreference {
        case .decline?: return .decline
        case .grantFull?: return .refund(percentage: 100_000)
        case .grantProrated?:
            if let consumed = answer.consumptionPercentage { return .refund(percentage: 100_000 - consumed) }
            guard let expires = transaction.expiresDate, expires > transaction.purchaseDate else {
                return .refund(percentage: 100_000)
            }
            let unused = max(0, expires.timeIntervalSince(max(now, transaction.purchaseDate)))
            let share = unused / expires.timeIntervalSince(transaction.purchaseDate)
            return .refund(percentage: Int32((share * 100_000).rounded()))
        default:
            if answer.deliveryStatus != .delivered { return .refund(percentage: 100_000) }
            return (answer.consumptionPercentage ?? 0) < 50_000 ? .refund(percentage: 100_000) : .decline
        }
    }
}

/// What the decision reads of a transaction.
public struct TransactionRecordView: Sendable, Hashable {
    public var purchaseDate: Date
    public var expiresDate: Date?

    public init(purchaseDate: Date, expiresDate: Date?) {
        self.purchaseDate = purchaseDate
        self.expiresDate = expiresDate
    }
}
