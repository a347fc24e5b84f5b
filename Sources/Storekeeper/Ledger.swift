public import Foundation

/// One movement of a customer's balance. Entries are never changed; corrections are new entries.
public struct LedgerEntry: Sendable, Hashable, Codable {
    public var customerID: CustomerID
    /// The balance name from the catalog (`coins`, `credits`, …).
    public var balance: String
    /// Positive credits, negative debits.
    public var amount: Int
    public var reason: Reason
    /// Unique per customer: a repeated request or fact with the same key posts nothing new.
    public var idempotencyKey: String
    /// The store transaction it settles, for purchase credits and refunds.
    public var transactionID: String?
    public var createdAt: Date

    public enum Reason: String, Sendable, Hashable, Codable {
        /// A consumable bought: credits granted.
        case purchase
        /// A refund (full, prorated or partial) took back the refunded share; a reversal gives it back.
        case refundAdjustment = "refund_adjustment"
        /// The app spent some of the balance.
        case debit
        /// A purchase moved to another customer: its unspent credits leave the previous owner
        /// (negative) and reach the new one (positive), under the transaction's id.
        case transfer
    }

    public init(
        customerID: CustomerID, balance: String, amount: Int, reason: Reason, idempotencyKey: String,
        transactionID: String? = nil, createdAt: Date
    ) {
        self.customerID = customerID
        self.balance = balance
        self.amount = amount
        self.reason = reason
        self.idempotencyKey = idempotencyKey
        self.transactionID = transactionID
        self.createdAt = createdAt
    }
}

/// How much a consumable transaction should have credited, given what is known of it now.
///
/// Credits are reconciled rather than replayed: the ledger posts the difference between this and
/// what it already posted for the transaction, so refunds, reversals and repeats in any order end
/// at the same balance.
public enum ConsumableCredit {
    public static func owed(for transaction: TransactionFact, product: CatalogProduct) -> Int {
        let granted = transaction.quantity * product.credits
        guard transaction.revokedAt != nil else { return granted }
        let refunded = min(max(transaction.refundedFraction, 0), 1)
        // The refunded share is taken back in whole credits, rounded down: a partial credit stays
        // with the customer.
        return granted - Int((Double(granted) * refunded).rounded(.down))
    }
}
