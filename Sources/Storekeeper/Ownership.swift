public import Foundation

/// What to do when a purchase already linked to one customer is presented by another
/// (DESIGN.md, "Ownership conflicts").
public enum OwnershipPolicy: String, Sendable, Hashable, Codable, CaseIterable {
    /// The first owner keeps it; the second gets a conflict error.
    case keep
    /// It moves to whoever presented it last.
    case transfer
    /// It moves only if it grants the current owner nothing now (expired, revoked, …).
    case transferIfNoActive = "transfer-if-no-active"

    /// The decision for `purchase`, owned by someone else, presented by `presenter` at `now`.
    public func decide(_ purchase: Purchase, presentedBy presenter: CustomerID, at now: Date) -> OwnershipDecision {
        guard let owner = purchase.customerID else { return .link }
        guard owner != presenter else { return .alreadyOwned }
        switch self {
        case .keep: return .conflict(owner: owner)
        case .transfer: return .transfer(from: owner)
        case .transferIfNoActive:
            return purchase.grantsAccess(at: now) ? .conflict(owner: owner) : .transfer(from: owner)
        }
    }
}

/// The outcome of presenting a purchase.
public enum OwnershipDecision: Sendable, Hashable {
    /// Nobody owned it: link it to the presenter.
    case link
    /// The presenter already owns it.
    case alreadyOwned
    /// Someone else keeps it; the presenter gets a conflict.
    case conflict(owner: CustomerID)
    /// Move it from its owner to the presenter (and record the transfer).
    case transfer(from: CustomerID)
}

/// A recorded change of owner.
public struct OwnershipTransfer: Sendable, Hashable, Codable {
    public var key: PurchaseKey
    public var from: CustomerID
    public var to: CustomerID
    public var policy: OwnershipPolicy
    public var at: Date

    public init(key: PurchaseKey, from: CustomerID, to: CustomerID, policy: OwnershipPolicy, at: Date) {
        self.key = key
        self.from = from
        self.to = to
        self.policy = policy
        self.at = at
    }
}
