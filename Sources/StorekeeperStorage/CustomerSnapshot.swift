import Foundation
public import Storekeeper

/// A customer with everything the customer view shows, read together
/// (``StorageTransaction/customerSnapshot(_:)``).
public struct CustomerSnapshot: Sendable, Hashable {
    public var customer: Customer
    /// Whether the customer consented to share consumption data; nil when never asked.
    public var consent: ConsumptionConsent?
    /// Every purchase but consumables, in key order (store, then id, by bytes): what the
    /// entitlements are computed from, as ``StorageTransaction/entitlementPurchases(of:)`` reads them.
    public var entitlementPurchases: [Purchase]
    /// The running total of each balance the customer's ledger holds.
    public var balances: [String: Int]

    public init(
        customer: Customer, consent: ConsumptionConsent?, entitlementPurchases: [Purchase], balances: [String: Int]
    ) {
        self.customer = customer
        self.consent = consent
        self.entitlementPurchases = entitlementPurchases
        self.balances = balances
    }
}
