public import AppStoreServer
public import Foundation
public import Storekeeper

/// The App Store's facts in domain terms: the one place App Store payloads become
/// ``PurchaseFact``s, with the one ordering rule (``observedAt(_:)``).
public enum AppStoreFacts {
    /// The ordering key of an App Store fact: the newest Apple signature among the payloads it
    /// comes from (a notification's, its transaction's and renewal info's, or an API answer's
    /// transaction and renewal info). Apple signs each payload when it states it, so a later
    /// signature never describes an older state.
    public static func observedAt(_ signedDates: Date?...) -> Date? {
        signedDates.compactMap { $0 }.max()
    }

    /// The domain's name of an App Store environment; nil for one that is neither Production nor
    /// Sandbox (Xcode and local StoreKit testing), which this server never accepts.
    public static func environment(_ environment: Environment?) -> PurchaseEnvironment? {
        switch environment {
        case .production?: .production
        case .sandbox?: .sandbox
        default: nil
        }
    }

    /// The App Store's name of a domain environment.
    public static func environment(_ environment: PurchaseEnvironment) -> Environment {
        environment == .production ? .production : .sandbox
    }

    /// What a verified transaction (and, for subscriptions, its renewal info and status) says.
    ///
    /// - Parameters:
    ///   - observedAt: the ordering key (``observedAt(_:)`` of the payloads it comes from).
    ///   - status: the subscription status a notification or status answer carries, when it does.
    public static func observation(
        transaction: JWSTransaction, renewalInfo: JWSRenewalInfo?, status: SubscriptionStatus?,
        observedAt: Date, catalog: Catalog
    ) throws(ServerError) -> PurchaseObservation {
        guard let originalID = transaction.originalTransactionId, let transactionID = transaction.transactionId,
            let productID = transaction.productId, let bundleID = transaction.bundleId
        else {
            throw ServerError(
                .malformedPayload, "the transaction lacks originalTransactionId, transactionId, productId or bundleId")
        }
        guard let environment = environment(transaction.environment) else {
            throw ServerError(
                .environmentNotAccepted,
                "the transaction's environment \(transaction.environment?.rawValue ?? "(none)") is neither Production nor Sandbox"
            )
        }
        let kind = catalog.product(productID, in: .appStore)?.kind ?? kind(of: transaction.type)
        let record = transactionFact(transaction, id: transactionID, productID: productID, observedAt: observedAt)
        let key = PurchaseKey.appStore(originalID)
        guard transaction.isUpgraded != true else { return .billingEvent(record, of: key) }
        if kind == .subscription && !speaksForSubscription(transaction, status: status, at: observedAt) {
            return .billingEvent(record, of: key)
        }
        let autoRenew = renewalInfo.map { $0.autoRenewStatus == .on }
        let state: SubscriptionState
        if transaction.revocationDate != nil {
            state = revokedState(
                of: record, kind: kind, product: catalog.product(productID, in: .appStore),
                prorated: transaction.revocationType == .refundProrated)
        } else if kind == .subscription {
            state = subscriptionState(
                transaction: transaction, renewalInfo: renewalInfo, status: status, at: observedAt
            )
        } else {
            state = .active
        }
        var fact = PurchaseFact(
            key: key, app: AppID(bundleID), productID: productID, kind: kind, environment: environment, state: state,
            expiresAt: transaction.expiresDate,
            gracePeriodExpiresAt: state == .gracePeriod ? renewalInfo?.gracePeriodExpiresDate : nil,
            autoRenew: kind == .subscription ? autoRenew : nil,
            ownership: transaction.inAppOwnershipType == .familyShared ? .familyShared : .purchased,
            quantity: Int(transaction.quantity ?? 1), accountHint: AccountHint.normalized(transaction.appAccountToken),
            observedAt: observedAt, transactions: [record]
        )
        fact.appTransactionID = transaction.appTransactionId.flatMap { $0.isEmpty ? nil : $0 }
        if kind == .subscription {
            let offers = SubscriptionOffers(
                current: transaction.offerType.map {
                    AppliedOffer(kind: offerKind($0), id: transaction.offerIdentifier)
                },
                eligibleWinBackOfferIDs: renewalInfo?.eligibleWinBackOfferIds ?? [])
            fact.offers = offers.isEmpty ? nil : offers
        }
        return .purchase(fact)
    }

    /// The purchase's state as a status answer (Get All Subscription Statuses) gives it.
    public static func fact(
        from item: SubscriptionGroupStatus.Subscription, catalog: Catalog
    ) throws(ServerError) -> PurchaseFact? {
        guard let transaction = item.transaction else { return nil }
        let signed = observedAt(transaction.signedDate, item.renewalInfo?.signedDate) ?? .distantPast
        let observation = try observation(
            transaction: transaction, renewalInfo: item.renewalInfo, status: item.status, observedAt: signed,
            catalog: catalog)
        guard case .purchase(let fact, _) = observation else { return nil }
        return fact
    }

    /// Whether a subscription's transaction states the subscription's state, or is only a billing
    /// event of it (DESIGN.md, "Refunds": a refund is a fact about one transaction, and the
    /// subscription follows its current status). A refunded transaction speaks for the
    /// subscription when the status says it is revoked — or, without a status (a submitted
    /// transaction), when its period has not ended, i.e. it is the current one. Any transaction
    /// whose period ended while the status says active is an older renewal (a refund of it
    /// reversed): it doesn't speak for the subscription either.
    static func speaksForSubscription(_ transaction: JWSTransaction, status: SubscriptionStatus?, at now: Date) -> Bool
    {
        let periodEnded = transaction.expiresDate.map { $0 <= now } ?? false
        if transaction.revocationDate != nil {
            guard let status else { return !periodEnded }
            return status == .revoked
        }
        return !(status == .active && periodEnded)
    }

    /// The state a refund or revocation leaves a purchase in: a subscription's current transaction
    /// refunded in any way, a full refund and a family revocation revoke it; a prorated refund
    /// leaves a consumable active (its balance loses the refunded share through the ledger) and
    /// takes a one-time entitlement by the product's rule (``ProratedRefundRule``).
    static func revokedState(
        of record: TransactionFact, kind: ProductKind, product: CatalogProduct?, prorated: Bool
    ) -> SubscriptionState {
        guard kind != .subscription, prorated, record.refundedFraction < 1 else { return .revoked }
        if kind == .consumable { return .active }
        return (product?.proratedRefund ?? .revoke).revokes(refundedShare: record.refundedFraction) ? .revoked : .active
    }

    /// The billing event itself (kept even for an upgraded transaction).
    static func transactionFact(
        _ transaction: JWSTransaction, id: String, productID: String, observedAt: Date
    ) -> TransactionFact {
        let refunded: Double
        if transaction.revocationDate == nil || transaction.revocationType == .familyRevoke {
            // A family member paid nothing: what Family Sharing's end revokes, it does not refund.
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
            refundedFraction: refunded, observedAt: observedAt,
            price: transaction.price.flatMap { price in
                transaction.currency.flatMap { Price(milliunits: price, currency: $0) }
            },
            offer: billingOffer(of: transaction)
        )
    }

    /// The offer a transaction was bought under: an introductory offer (`offerType` 1) whose
    /// `offerDiscountType` is FREE_TRIAL is a free trial.
    static func billingOffer(of transaction: JWSTransaction) -> BillingOffer? {
        guard let type = transaction.offerType else { return nil }
        guard type == .introductory else { return .other }
        return transaction.offerDiscountType == .freeTrial ? .freeTrial : .introductory
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

    /// The domain's name of an App Store offer type (an unknown one keeps Apple's number).
    static func offerKind(_ type: OfferType) -> OfferKind {
        switch type {
        case .introductory: .introductory
        case .promotional: .promotional
        case .offerCode: .offerCode
        case .winBack: .winBack
        default: OfferKind(rawValue: "apple_\(type.rawValue)")
        }
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
