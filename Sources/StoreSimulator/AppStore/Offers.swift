public import AppStoreServer
import Foundation

extension SimulatedOffer {
    /// An introductory offer paid each period at `price` for `duration` (ISO 8601, the offer's whole
    /// length, e.g. `P3M` for three monthly periods): `PAY_AS_YOU_GO`.
    public static func payAsYouGo(price: Int64, duration: String) -> Self {
        Self(type: .introductory, discountType: .payAsYouGo, price: price, period: duration)
    }

    /// An introductory offer paid once, `price` for `duration`: `PAY_UP_FRONT`.
    public static func payUpFront(price: Int64, duration: String) -> Self {
        Self(type: .introductory, discountType: .payUpFront, price: price, period: duration)
    }

    /// A promotional offer (offerType 2) redeemed in the app, with its id from App Store Connect.
    public static func promotional(
        _ identifier: String, discountType: OfferDiscountType, price: Int64, period: String
    ) -> Self {
        Self(type: .promotional, identifier: identifier, discountType: discountType, price: price, period: period)
    }

    /// An offer code (offerType 3) redeemed in the App Store; `identifier` is the offer's reference name.
    public static func offerCode(
        _ identifier: String, discountType: OfferDiscountType, price: Int64, period: String
    ) -> Self {
        Self(type: .offerCode, identifier: identifier, discountType: discountType, price: price, period: period)
    }

    /// A win-back offer (offerType 4) for a lapsed subscriber.
    public static func winBack(
        _ identifier: String, discountType: OfferDiscountType, price: Int64, period: String
    ) -> Self {
        Self(type: .winBack, identifier: identifier, discountType: discountType, price: price, period: period)
    }

    /// The period one discounted transaction covers: the product's for pay-as-you-go (the offer
    /// repeats until its duration is over), else the offer's.
    func billingPeriod(of product: SimulatedProduct) -> String? {
        discountType == .payAsYouGo ? product.period : period ?? product.period
    }
}

extension SubscriptionRecord {
    /// Records the offer of a transaction that just started at `date`: a pay-as-you-go offer keeps
    /// applying to renewals until its duration is over. Clears pending offers and price increases.
    mutating func startOffer(_ offer: SimulatedOffer?, at date: Date) {
        pendingOffer = nil
        priceIncrease = nil
        if let offer, offer.discountType == .payAsYouGo, let duration = offer.period.flatMap(SubscriptionPeriod.init) {
            runningOffer = offer
            runningOfferEnds = duration.added(to: date)
        } else {
            runningOffer = nil
            runningOfferEnds = nil
        }
    }

    /// The offer the next renewal will carry, if any.
    var nextRenewalOffer: SimulatedOffer? {
        if let pendingOffer { return pendingOffer }
        if let runningOffer, let ends = runningOfferEnds, expiresDate < ends { return runningOffer }
        return nil
    }

    /// The offer of a renewal starting at `date`, consumed: a pending offer starts (and, pay as you
    /// go, keeps running), a running pay-as-you-go offer continues until its duration is over.
    mutating func takeRenewalOffer(at date: Date) -> SimulatedOffer? {
        if let pending = pendingOffer {
            startOffer(pending, at: date)
            return pending
        }
        guard let runningOffer, let ends = runningOfferEnds, date < ends else {
            runningOffer = nil
            runningOfferEnds = nil
            return nil
        }
        return runningOffer
    }
}

extension AppStoreSimulation {
    /// A subscriber redeems `offer` in the app (a promotional or win-back offer signed by the
    /// developer): the transaction keeps the customer's `appAccountToken`.
    ///
    /// On a live subscription: `OFFER_REDEEMED` — `UPGRADE` when `productId` is a higher level (or the
    /// same level and period), effective now with a new discounted transaction; `DOWNGRADE` when it is
    /// a lower level (or another period), effective at the next renewal; no subtype for the current
    /// product, the offer applying from the next renewal. On an ended subscription it is a
    /// resubscription (`SUBSCRIBED RESUBSCRIBE`) with the offer.
    @discardableResult
    public func redeemOffer(
        _ originalTransactionId: String, offer: SimulatedOffer, product productId: String? = nil
    ) throws(AppStoreSimulationError) -> PurchaseResult {
        try mutate { (state, now) throws(AppStoreSimulationError) -> PurchaseResult in
            guard let subscription = state.subscriptions[originalTransactionId] else {
                throw .unknownSubscription(originalTransactionId)
            }
            let target = productId ?? subscription.productId
            switch subscription.phase {
            case .expired, .revoked:
                return try state.purchase(
                    customer: subscription.customerId, product: target, appAccountToken: subscription.appAccountToken,
                    offer: offer, ownership: .purchased, inApp: true, environment: subscription.environment, at: now)
            default:
                return try state.redeem(
                    offer, on: originalTransactionId, product: target, appAccountToken: subscription.appAccountToken,
                    at: now)
            }
        }
    }

    /// A customer redeems an offer code (offerType 3) in the App Store, outside the app: the
    /// transaction carries no `appAccountToken`. Without a live subscription in the product's group
    /// it is a new subscription (`SUBSCRIBED INITIAL_BUY`, or `RESUBSCRIBE`) whose first transaction
    /// carries the offer; with one, `OFFER_REDEEMED` as for ``redeemOffer(_:offer:product:)``.
    /// `environment` nil is the app's default.
    @discardableResult
    public func redeemOfferCode(
        customer: String, product productId: String, offer: SimulatedOffer, environment: Environment? = nil
    ) throws(AppStoreSimulationError) -> PurchaseResult {
        try Self.checkPurchaseEnvironment(environment)
        return try mutate { (state, now) throws(AppStoreSimulationError) -> PurchaseResult in
            guard let product = state.products[productId] else { throw .unknownProduct(productId) }
            guard product.kind == .autoRenewable else { throw .invalid("offer codes here are for subscriptions") }
            let resolved = environment ?? state.apps[product.bundleId]?.environment
            let live = state.subscriptions.values.first { subscription in
                guard subscription.customerId == customer, subscription.bundleId == product.bundleId,
                    subscription.environment == resolved,
                    subscription.groupId == product.subscriptionGroupIdentifier
                else { return false }
                switch subscription.phase {
                case .expired, .revoked: return false
                default: return true
                }
            }
            if let live {
                return try state.redeem(
                    offer, on: live.originalTransactionId, product: productId, appAccountToken: nil, at: now)
            }
            return try state.purchase(
                customer: customer, product: productId, appAccountToken: nil, offer: offer, ownership: .purchased,
                inApp: false, environment: environment, at: now)
        }
    }
}

extension AppStoreSimulation.State {
    /// `OFFER_REDEEMED` on a live subscription (see ``AppStoreSimulation/redeemOffer(_:offer:product:)``).
    mutating func redeem(
        _ offer: SimulatedOffer, on originalTransactionId: String, product productId: String, appAccountToken: UUID?,
        at now: Date
    ) throws(AppStoreSimulationError) -> AppStoreSimulation.PurchaseResult {
        guard var subscription = subscriptions[originalTransactionId] else {
            throw .unknownSubscription(originalTransactionId)
        }
        guard let target = products[productId] else { throw .unknownProduct(productId) }
        guard let current = products[subscription.productId] else { throw .unknownProduct(subscription.productId) }
        guard target.subscriptionGroupIdentifier == subscription.groupId, target.bundleId == subscription.bundleId
        else { throw .invalid("\(productId) is not in subscription group \(subscription.groupId)") }
        subscription.lastEventDate = max(now, subscription.lastEventDate)
        let (targetLevel, currentLevel) = (target.groupLevel ?? 1, current.groupLevel ?? 1)
        let subtype: NotificationSubtype?
        var transactionId = subscription.latestTransactionId
        if productId == subscription.productId {
            subtype = nil
            subscription.autoRenewProductId = productId
            subscription.pendingOffer = offer
        } else if targetLevel < currentLevel || (targetLevel == currentLevel && target.period == current.period) {
            subtype = .upgrade
            transactions[subscription.latestTransactionId]?.isUpgraded = true
            guard let period = offer.billingPeriod(of: target).flatMap(SubscriptionPeriod.init) else {
                throw .invalid("product \(productId) has no valid period")
            }
            let original = transactions[originalTransactionId]
            let record = newTransaction(
                product: target, environment: subscription.environment, originalTransactionId: originalTransactionId,
                originalPurchaseDate: original?.originalPurchaseDate, purchaseDate: now,
                expiresDate: period.added(to: now), reason: .purchase, ownership: original?.ownership ?? .purchased,
                appAccountToken: appAccountToken, appTransactionId: subscription.appTransactionId, offer: offer)
            subscription.transactionIds.append(record.transactionId)
            subscription.productId = productId
            subscription.autoRenewProductId = productId
            subscription.expiresDate = record.expiresDate ?? subscription.expiresDate
            subscription.startOffer(offer, at: now)
            transactionId = record.transactionId
        } else {
            subtype = .downgrade
            subscription.autoRenewProductId = productId
            subscription.pendingOffer = offer
        }
        subscriptions[originalTransactionId] = subscription
        try emit(
            .offerRedeemed, subtype, bundleId: subscription.bundleId, transactionId: transactionId,
            subscriptionId: originalTransactionId, at: now)
        return AppStoreSimulation.PurchaseResult(
            originalTransactionId: originalTransactionId, transactionId: transactionId,
            environment: subscription.environment)
    }
}
