public import Foundation
public import GooglePlay
public import Storekeeper

/// Google Play's facts in domain terms: the one place Android Publisher answers become
/// ``PurchaseFact``s. Google's answers are the purchase's current state, so a fact's
/// `observedAt` is when it was fetched.
public enum GooglePlayFacts {
    /// What the server holds of a subscription when Google answers for it. Google says which order
    /// is the latest but not when it was placed (`startTime` is when the subscription began), so
    /// that order's date comes from here when it can.
    public struct KnownSubscription: Sendable, Hashable {
        /// The latest order as recorded: its date stands.
        public var latestOrder: TransactionFact?
        /// The end of the paid period stored (nil for a subscription new to the server). An order
        /// the server has not recorded, of a subscription it has, paid for the period after it: a
        /// renewal, placed then (a recovery from account hold, later: then is the earliest it can
        /// have been).
        public var periodEnd: Date?
        /// When the notification being read says an order was just placed (`SUBSCRIPTION_RENEWED`,
        /// `SUBSCRIPTION_RECOVERED`, `SUBSCRIPTION_PURCHASED`: its `eventTimeMillis`): a new order
        /// is dated then, a recovery days after the period it follows ended included (never
        /// before that end: an older notification read late says nothing of a newer order).
        public var orderNoticedAt: Date?

        public init(latestOrder: TransactionFact? = nil, periodEnd: Date? = nil, orderNoticedAt: Date? = nil) {
            self.latestOrder = latestOrder
            self.periodEnd = periodEnd
            self.orderNoticedAt = orderNoticedAt
        }

        /// When a latest order the server has not recorded was placed, as far as this says (nil:
        /// nothing does).
        var newOrderPlacedAt: Date? { [periodEnd, orderNoticedAt].compactMap { $0 }.max() }
    }

    /// The order a `purchases.subscriptionsv2.get` answer names as the latest.
    public static func latestOrderID(of purchase: SubscriptionPurchaseV2) -> String? {
        purchase.lineItems?.first?.latestSuccessfulOrderId ?? purchase.latestOrderId
    }

    /// What a `purchases.subscriptionsv2.get` answer says about the subscription `token`.
    ///
    /// - Parameters:
    ///   - revoked: the notification said the subscription was revoked or voided; the fetched
    ///     state (expired) doesn't tell a revocation from an expiry.
    ///   - known: what the server holds of it and what the notification says, which date the
    ///     latest order: as recorded, or when the notification says it was placed or the stored
    ///     period ended (a renewal), or else when the subscription began.
    public static func subscription(
        _ purchase: SubscriptionPurchaseV2, app: AppID, token: String, observedAt: Date, revoked: Bool = false,
        known: KnownSubscription = KnownSubscription(), catalog: Catalog
    ) throws(ServerError) -> PurchaseFact {
        let items = purchase.lineItems ?? []
        guard let productID = items.first?.productId else {
            throw ServerError(.malformedPayload, "the subscription purchase has no line item with a productId")
        }
        let expiresAt = items.compactMap(\.expiryDate).max()
        let state: Storekeeper.SubscriptionState =
            revoked ? .revoked : subscriptionState(purchase.subscriptionState, expiresAt: expiresAt, at: observedAt)
        // A plan change waiting for its payment replaces nothing yet, and one whose payment was
        // canceled never does: the old subscription keeps its access (Google's pending purchases).
        let paid = ![.pending, .pendingPurchaseCanceled].contains(purchase.subscriptionState)
        var transactions: [TransactionFact] = []
        if let orderID = latestOrderID(of: purchase) {
            // Google's subscription answer says nothing about an order's refund: stated as of the
            // purchase, it never outweighs a void heard of later (voids are never reversed).
            let start = purchase.startDate ?? observedAt
            let purchasedAt =
                known.latestOrder.flatMap { $0.id == orderID ? $0.purchasedAt : nil }
                ?? known.newOrderPlacedAt.map { min(max($0, start), observedAt) } ?? start
            let (price, offer) = pricing(of: items.first)
            transactions.append(
                TransactionFact(
                    id: orderID, productID: productID, purchasedAt: purchasedAt,
                    revokedAt: revoked ? observedAt : nil, refundedFraction: revoked ? 1 : 0,
                    observedAt: revoked ? observedAt : min(purchasedAt, observedAt), price: price, offer: offer
                ))
        }
        var fact = PurchaseFact(
            key: .googlePlay(token), app: app, productID: productID,
            kind: catalog.product(productID, in: .googlePlay)?.kind ?? .subscription,
            // A license tester's purchase is a test purchase: the domain's sandbox.
            environment: purchase.testPurchase == nil ? .production : .sandbox, state: state, expiresAt: expiresAt,
            gracePeriodExpiresAt: state == .gracePeriod ? expiresAt : nil,
            autoRenew: items.first?.autoRenewingPlan.map { $0.autoRenewEnabled ?? false },
            accountHint: AccountHint.normalized(purchase.externalAccountIdentifiers?.obfuscatedExternalAccountId),
            replaces: paid
                ? purchase.linkedPurchaseToken.flatMap { $0.isEmpty ? nil : PurchaseKey.googlePlay($0) } : nil,
            observedAt: observedAt,
            needsAcknowledgement: purchase.acknowledgementState == .pending
                && [.active, .gracePeriod, .canceled].contains(state),
            transactions: transactions
        )
        fact.expiredMayMeanRevoked = true
        fact.basePlanID = items.first?.offerDetails?.basePlanId.flatMap { $0.isEmpty ? nil : $0 }
        return fact
    }

    /// What a line item's latest order cost and under which offer. `autoRenewingPlan.recurringPrice`
    /// is the base plan's price without discounts, so it is the order's price only in the base
    /// phase (`offerPhase.basePrice`, or no phase stated); a free trial cost nothing (zero in that
    /// currency); an introductory or proration phase's order price is not reported (nil). A
    /// prepaid plan reports no price.
    static func pricing(of item: SubscriptionPurchaseLineItem?) -> (Price?, BillingOffer?) {
        let recurring = item?.autoRenewingPlan?.recurringPrice.flatMap(price(of:))
        guard let phase = item?.offerPhase else { return (recurring, nil) }
        if phase.freeTrial != nil { return (recurring.map { Price(micros: 0, currency: $0.currency) }, .freeTrial) }
        if phase.introductoryPrice != nil { return (nil, .introductory) }
        if phase.prorationPeriod != nil { return (nil, .other) }
        return (recurring, nil)
    }

    /// A Money (whole units and nanos of one currency) in micros; nil without a currency or when
    /// it doesn't fit.
    static func price(of money: Money) -> Price? {
        guard let code = money.currencyCode, !code.isEmpty else { return nil }
        let units = money.units?.rawValue ?? 0
        let (whole, overflow) = units.multipliedReportingOverflow(by: 1_000_000)
        let (micros, overflowSum) = whole.addingReportingOverflow(Int64((money.nanos ?? 0) / 1_000))
        guard !overflow, !overflowSum, micros >= 0 else { return nil }
        return Price(micros: micros, currency: CurrencyCode(code))
    }

    /// DESIGN.md's state table, Google Play column.
    static func subscriptionState(
        _ state: GooglePlay.SubscriptionState?, expiresAt: Date?, at now: Date
    ) -> Storekeeper.SubscriptionState {
        switch state {
        case .active?: return .active
        case .canceled?: return .canceled
        case .inGracePeriod?: return .gracePeriod
        case .onHold?: return .billingRetry
        case .paused?: return .paused
        case .pending?: return .pending
        case .expired?, .pendingPurchaseCanceled?: return .expired
        default:
            // An unknown state: the expiry decides, so access never outlives what was paid for.
            if let expiresAt, expiresAt > now { return .active }
            return .expired
        }
    }

    /// What a `purchases.products.get` answer says about the one-time purchase `token`.
    ///
    /// - Parameter voidedQuantity: how many units Google voided (a quantity-based partial refund),
    ///   or nil if none; a full void revokes the purchase.
    public static func product(
        _ purchase: ProductPurchase, app: AppID, token: String, productID: String, observedAt: Date,
        voided: Bool = false, voidedQuantity: Int? = nil, catalog: Catalog
    ) throws(ServerError) -> PurchaseFact {
        let kind = catalog.product(productID, in: .googlePlay)?.kind ?? .nonConsumable
        let quantity = max(1, purchase.quantity ?? 1)
        // Google documents `refundableQuantity` as reflecting full refunds as well as partial ones:
        // none left while paid is a full refund, whatever the purchase state says. (Nothing is
        // refundable yet while pending.)
        let nothingLeftRefundable = purchase.refundableQuantity == 0 && purchase.purchaseState != .pending
        let fullyVoided =
            purchase.purchaseState == .canceled || nothingLeftRefundable
            || (voided && (voidedQuantity.map { $0 >= quantity } ?? true))
        let state: Storekeeper.SubscriptionState =
            switch purchase.purchaseState {
            case _ where fullyVoided: .revoked
            case .pending?: .pending
            default: .active
            }
        var refunded = 0.0
        if fullyVoided {
            refunded = 1
        } else if voided, let voidedQuantity {
            refunded = min(max(Double(voidedQuantity) / Double(quantity), 0), 1)
        } else if let refundable = purchase.refundableQuantity, refundable > 0, refundable < quantity {
            // Units refunded earlier (a quantity-based partial refund): the answer still says
            // Purchased, and only `refundableQuantity`, what has not been refunded, tells. Read as
            // nothing refunded, a later read gave the refunded credits back.
            refunded = Double(quantity - refundable) / Double(quantity)
        }
        var transactions: [TransactionFact] = []
        if let orderID = purchase.orderId, state != .pending {
            transactions.append(
                TransactionFact(
                    id: orderID, productID: productID, purchasedAt: purchase.purchaseDate ?? observedAt,
                    quantity: quantity, revokedAt: refunded > 0 ? observedAt : nil, refundedFraction: refunded,
                    observedAt: observedAt
                ))
        }
        // A consumed purchase needs no acknowledgement: consuming acknowledges it.
        let awaitingAcknowledgement =
            purchase.acknowledgementState == .yetToBeAcknowledged && purchase.consumptionState != .consumed
        return PurchaseFact(
            key: .googlePlay(token), app: app, productID: productID, kind: kind,
            environment: purchase.purchaseType == .test ? .sandbox : .production, state: state,
            quantity: quantity, accountHint: AccountHint.normalized(purchase.obfuscatedExternalAccountId),
            observedAt: observedAt,
            needsAcknowledgement: state == .active
                && (awaitingAcknowledgement || (kind == .consumable && purchase.consumptionState != .consumed)),
            transactions: transactions
        )
    }
}

extension GooglePlayFacts {
    /// A subscription whose order `orderID` Google voided (DESIGN.md, "Refunds"; seed 001): the
    /// order is revoked as a billing event, and the subscription keeps the state
    /// `subscriptionsv2` gives — a void of an older renewal ends nothing. Only when the voided
    /// order is the latest one and Google ended the subscription is it revoked rather than expired.
    ///
    /// - Parameter known: the order as stored, if it is (its purchase date).
    public static func voidingOrder(
        _ orderID: String, of subscription: PurchaseFact, known: TransactionFact?, at voidedAt: Date
    ) -> PurchaseFact {
        var fact = subscription
        let latest = fact.transactions.first { $0.id == orderID }
        let voided = TransactionFact(
            id: orderID, productID: latest?.productID ?? known?.productID ?? fact.productID,
            purchasedAt: latest?.purchasedAt ?? known?.purchasedAt ?? voidedAt, quantity: 1, revokedAt: voidedAt,
            refundedFraction: 1, observedAt: max(fact.observedAt, voidedAt))
        fact.transactions.removeAll { $0.id == orderID }
        fact.transactions.append(voided)
        if latest != nil && fact.state == .expired { fact.state = .revoked }
        return fact
    }
}
