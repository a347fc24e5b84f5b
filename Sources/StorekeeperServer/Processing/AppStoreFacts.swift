public import AppStoreServer
public import Foundation
public import Storekeeper

/// What one App Store transaction tells about its purchase.
public enum AppStoreObservation: Sendable, Hashable {
    /// The purchase's state as of the transaction (and renewal info, status).
    case purchase(PurchaseFact)
    /// Only a billing event: an `isUpgraded` transaction doesn't speak for its purchase's state
    /// (the subscription continues under the new product, in the same purchase).
    case upgradedTransaction(of: PurchaseKey, TransactionFact)
}

/// The App Store's facts in domain terms: the one place App Store payloads become
/// ``PurchaseFact``s.
public enum AppStoreFacts {
    /// What a verified transaction (and, for subscriptions, its renewal info and status) says.
    ///
    /// - Parameters:
    ///   - observedAt: the ordering key: the notification's `signedDate`, or the transaction's own
    ///     for a submission.
    ///   - status: the subscription status a notification carries (`data.status`), when it does.
    public static func observation(
        transaction: JWSTransaction, renewalInfo: JWSRenewalInfo?, status: SubscriptionStatus?,
        observedAt: Date, catalog: Catalog
    ) throws(ProcessingError) -> AppStoreObservation {
        guard let originalID = transaction.originalTransactionId, let transactionID = transaction.transactionId,
            let productID = transaction.productId
        else {
            throw ProcessingError(
                .malformedPayload, "the transaction lacks originalTransactionId, transactionId or productId")
        }
        let kind = catalog.product(productID, in: .appStore)?.kind ?? kind(of: transaction.type)
        let record = transactionFact(transaction, id: transactionID, productID: productID, observedAt: observedAt)
        let key = PurchaseKey.appStore(originalID)
        guard transaction.isUpgraded != true else { return .upgradedTransaction(of: key, record) }
        let autoRenew = renewalInfo.map { $0.autoRenewStatus == .on }
        let state: SubscriptionState
        if transaction.revocationDate != nil {
            // REFUND_PRORATED is a full revocation for a subscription; consumables keep the
            // unrefunded share through the ledger instead.
            state = .revoked
        } else if kind == .subscription {
            state = subscriptionState(
                transaction: transaction, renewalInfo: renewalInfo, status: status, at: observedAt
            )
        } else {
            state = .active
        }
        let fact = PurchaseFact(
            key: key, productID: productID, kind: kind,
            environment: transaction.environment?.rawValue ?? "Production", state: state,
            expiresAt: transaction.expiresDate,
            gracePeriodExpiresAt: state == .gracePeriod ? renewalInfo?.gracePeriodExpiresDate : nil,
            autoRenew: kind == .subscription ? autoRenew : nil,
            ownership: transaction.inAppOwnershipType == .familyShared ? .familyShared : .purchased,
            quantity: Int(transaction.quantity ?? 1), accountHint: AccountHint.normalized(transaction.appAccountToken),
            observedAt: observedAt, transactions: [record]
        )
        return .purchase(fact)
    }

    /// The billing event itself (kept even for an upgraded transaction).
    static func transactionFact(
        _ transaction: JWSTransaction, id: String, productID: String, observedAt: Date
    ) -> TransactionFact {
        let refunded: Double
        if transaction.revocationDate == nil {
            refunded = 0
        } else if transaction.revocationType == .refundProrated, let share = transaction.revocationPercentage {
            // Milli-percent: 100000 is the whole transaction.
            refunded = min(max(Double(share) / 100_000, 0), 1)
        } else {
            refunded = 1
        }
        return TransactionFact(
            id: id, productID: productID, purchasedAt: transaction.purchaseDate ?? observedAt,
            quantity: Int(transaction.quantity ?? 1), revokedAt: transaction.revocationDate,
            refundedFraction: refunded, observedAt: observedAt
        )
    }

    /// DESIGN.md's state table, App Store column. Without a status (a submitted transaction), the
    /// renewal info and dates decide.
    static func subscriptionState(
        transaction: JWSTransaction, renewalInfo: JWSRenewalInfo?, status: SubscriptionStatus?, at now: Date
    ) -> SubscriptionState {
        let renewing = renewalInfo?.autoRenewStatus != .off
        switch status {
        case .active?: return renewing ? .active : .canceled
        case .expired?: return .expired
        case .billingRetryPeriod?: return .billingRetry
        case .billingGracePeriod?: return .gracePeriod
        case .revoked?: return .revoked
        default: break
        }
        if let expires = transaction.expiresDate, expires > now { return renewing ? .active : .canceled }
        if let grace = renewalInfo?.gracePeriodExpiresDate, grace > now { return .gracePeriod }
        if renewalInfo?.isInBillingRetryPeriod == true { return .billingRetry }
        return .expired
    }

    static func kind(of type: TransactionType?) -> ProductKind {
        switch type {
        case .autoRenewableSubscription?: return .subscription
        case .consumable?: return .consumable
        case .nonRenewingSubscription?: return .nonRenewingSubscription
        default: return .nonConsumable
        }
    }
}
