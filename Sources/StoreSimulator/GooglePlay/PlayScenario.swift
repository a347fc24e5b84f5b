import Foundation
public import GooglePlay

extension GooglePlaySimulation {
    // MARK: Purchases

    /// A user subscribes to a base plan (the first one if `basePlanId` is nil). A pending purchase
    /// waits for ``completePendingPurchase(_:)``; otherwise it is paid now (`SUBSCRIPTION_PURCHASED`).
    @discardableResult
    public func purchaseSubscription(
        packageName: String, productId: String, basePlanId: String? = nil,
        options: PlayPurchaseOptions = PlayPurchaseOptions()
    ) throws(GooglePlaySimulationError) -> PlayPurchaseResult {
        try mutate { (state, now) throws(GooglePlaySimulationError) in
            let plan = try state.basePlan(packageName: packageName, productId: productId, basePlanId: basePlanId)
            let token = state.ids.purchaseToken()
            var record = PlaySubscriptionRecord(
                purchaseToken: token, packageName: packageName, productId: productId, basePlanId: plan.basePlanId,
                plan: plan, options: options, purchaseTime: now, startTime: nil, expiryTime: now,
                phase: .pending, autoRenew: plan.autoRenewing, lastEventDate: now)
            if !options.pending {
                record.startTime = now
                record.phase = .active
                state.bill(&record, periodStart: now, at: now)
            }
            state.subscriptions[token] = record
            if !options.pending { state.emitSubscription(.purchased, record, at: now) }
            return PlayPurchaseResult(purchaseToken: token, orderId: record.latestOrderId)
        }
    }

    /// A user buys `quantity` of a one-time product (`ONE_TIME_PRODUCT_PURCHASED` unless pending).
    @discardableResult
    public func purchaseProduct(
        packageName: String, productId: String, quantity: Int = 1, options: PlayPurchaseOptions = PlayPurchaseOptions()
    ) throws(GooglePlaySimulationError) -> PlayPurchaseResult {
        try mutate { (state, now) throws(GooglePlaySimulationError) in
            guard let product = state.products[packageName + "/" + productId] else {
                throw state.apps[packageName] == nil ? .unknownApp(packageName) : .unknownProduct(productId)
            }
            guard quantity >= 1, quantity <= product.maxQuantity else {
                throw .invalid("quantity must be between 1 and \(product.maxQuantity)")
            }
            let token = state.ids.purchaseToken()
            var record = PlayProductRecord(
                purchaseToken: token, packageName: packageName, productId: productId, options: options,
                quantity: quantity, purchaseTime: now, pending: options.pending)
            if !options.pending { state.complete(&record, price: product.price, at: now) }
            state.productPurchases[token] = record
            if !options.pending { state.emitProduct(.purchased, record, at: now) }
            return PlayPurchaseResult(purchaseToken: token, orderId: record.orderId)
        }
    }

    /// The pending payment of a purchase (subscription or product) completes; it is billed now.
    @discardableResult
    public func completePendingPurchase(_ token: String) throws(GooglePlaySimulationError) -> PlayPurchaseResult {
        try mutate { (state, now) throws(GooglePlaySimulationError) in
            if var record = state.subscriptions[token] {
                guard record.phase == .pending else { throw .invalid("the subscription purchase is not pending") }
                record.startTime = now
                record.phase = .active
                state.bill(&record, periodStart: now, at: now)
                // A pending plan change replaces the old subscription only now that it is paid.
                if let replaced = record.linkedPurchaseToken { state.replace(replaced, by: token, at: now) }
                state.subscriptions[token] = record
                state.emitSubscription(.purchased, record, at: now)
                return PlayPurchaseResult(purchaseToken: token, orderId: record.latestOrderId)
            }
            guard var record = state.productPurchases[token] else { throw .unknownPurchase(token) }
            guard record.pending, !record.canceled else { throw .invalid("the product purchase is not pending") }
            let price = state.products[record.packageName + "/" + record.productId]?.price ?? PlayPrice(priceMicros: 0)
            state.complete(&record, price: price, at: now)
            state.productPurchases[token] = record
            state.emitProduct(.purchased, record, at: now)
            return PlayPurchaseResult(purchaseToken: token, orderId: record.orderId)
        }
    }

    /// The pending payment is canceled (`SUBSCRIPTION_PENDING_PURCHASE_CANCELED` / `ONE_TIME_PRODUCT_CANCELED`).
    public func cancelPendingPurchase(_ token: String) throws(GooglePlaySimulationError) {
        try mutate { (state, now) throws(GooglePlaySimulationError) in
            if var record = state.subscriptions[token] {
                guard record.phase == .pending else { throw .invalid("the subscription purchase is not pending") }
                record.phase = .pendingCanceled(at: now)
                record.autoRenew = false
                state.subscriptions[token] = record
                state.emitSubscription(.pendingPurchaseCanceled, record, at: now)
                return
            }
            guard var record = state.productPurchases[token] else { throw .unknownPurchase(token) }
            guard record.pending, !record.canceled else { throw .invalid("the product purchase is not pending") }
            record.canceled = true
            state.productPurchases[token] = record
            state.emitProduct(.canceled, record, at: now)
        }
    }

    // MARK: Subscription lifecycle

    /// The next renewal's payment fails: grace period (`SUBSCRIPTION_IN_GRACE_PERIOD`), then account
    /// hold (`SUBSCRIPTION_ON_HOLD`), then expiry, unless ``recoverBilling(_:)`` comes first.
    public func failBilling(_ token: String) throws(GooglePlaySimulationError) {
        try mutate { (state, _) throws(GooglePlaySimulationError) in
            guard var record = state.subscriptions[token] else { throw .unknownPurchase(token) }
            guard record.endedAt == nil else { throw .invalid("the subscription has ended") }
            record.billingFails = true
            state.subscriptions[token] = record
        }
    }

    /// The payment method is fixed. In grace or on hold: a new order now, `SUBSCRIPTION_RECOVERED`
    /// (from grace the period counts from the failed renewal date, from hold from now); otherwise
    /// the pending failure is forgotten.
    @discardableResult
    public func recoverBilling(_ token: String) throws(GooglePlaySimulationError) -> String? {
        try mutate { (state, now) throws(GooglePlaySimulationError) in
            guard var record = state.subscriptions[token] else { throw .unknownPurchase(token) }
            record.billingFails = false
            switch record.phase {
            case .gracePeriod(_, let failedAt):
                record.phase = .active
                state.bill(&record, periodStart: failedAt, at: now)
            case .onHold:
                record.phase = .active
                state.bill(&record, periodStart: now, at: now)
            default:
                state.subscriptions[token] = record
                return nil
            }
            record.lastEventDate = now
            state.subscriptions[token] = record
            state.emitSubscription(.recovered, record, at: now)
            return record.latestOrderId
        }
    }

    /// The user cancels: auto-renew off (`SUBSCRIPTION_CANCELED`), state CANCELED until expiry, then
    /// EXPIRED. In grace or on hold the subscription ends now.
    public func cancelSubscription(_ token: String) throws(GooglePlaySimulationError) {
        try mutate { (state, now) throws(GooglePlaySimulationError) in
            try state.cancel(token, by: .user(at: now), at: now)
        }
    }

    /// The user restores a canceled subscription before it expires (`SUBSCRIPTION_RESTARTED`).
    public func restartSubscription(_ token: String) throws(GooglePlaySimulationError) {
        try mutate { (state, now) throws(GooglePlaySimulationError) in
            guard var record = state.subscriptions[token] else { throw .unknownPurchase(token) }
            guard record.phase == .active, !record.autoRenew, record.plan.autoRenewing else {
                throw .invalid("only a canceled, unexpired subscription can be restarted")
            }
            record.autoRenew = true
            record.cancellation = nil
            record.lastEventDate = now
            state.subscriptions[token] = record
            state.emitSubscription(.restarted, record, at: now)
        }
    }

    /// The user schedules a pause of `cycles` billing periods from the next renewal date
    /// (`SUBSCRIPTION_PAUSE_SCHEDULE_CHANGED`); at that date it pauses (`SUBSCRIPTION_PAUSED`, state
    /// PAUSED) and at the end of the pause it renews (`SUBSCRIPTION_RENEWED`).
    public func pauseSubscription(_ token: String, cycles: Int = 1) throws(GooglePlaySimulationError) {
        try mutate { (state, now) throws(GooglePlaySimulationError) in
            guard var record = state.subscriptions[token] else { throw .unknownPurchase(token) }
            guard record.phase == .active, record.autoRenew, (1...12).contains(cycles) else {
                throw .invalid("only an active, renewing subscription can be paused, for 1 to 12 cycles")
            }
            record.scheduledPauseCycles = cycles
            record.lastEventDate = now
            state.subscriptions[token] = record
            state.emitSubscription(.pauseScheduleChanged, record, at: now)
        }
    }

    /// The user resumes: a scheduled pause is dropped (`SUBSCRIPTION_PAUSE_SCHEDULE_CHANGED`); a
    /// paused subscription is billed now and active again (`SUBSCRIPTION_RECOVERED`).
    public func resumeSubscription(_ token: String) throws(GooglePlaySimulationError) {
        try mutate { (state, now) throws(GooglePlaySimulationError) in
            guard var record = state.subscriptions[token] else { throw .unknownPurchase(token) }
            record.lastEventDate = now
            if case .paused = record.phase {
                record.phase = .active
                state.bill(&record, periodStart: now, at: now)
                state.subscriptions[token] = record
                state.emitSubscription(.recovered, record, at: now)
            } else if record.scheduledPauseCycles != nil {
                record.scheduledPauseCycles = nil
                state.subscriptions[token] = record
                state.emitSubscription(.pauseScheduleChanged, record, at: now)
            } else {
                throw .invalid("the subscription is neither paused nor scheduled to pause")
            }
        }
    }

    /// The user upgrades, downgrades or switches plans: a NEW purchase token whose
    /// `linkedPurchaseToken` is the old one, paid from now (`SUBSCRIPTION_PURCHASED`); the old
    /// purchase is replaced (EXPIRED, `replacementCancellation`, no notification). Every mode but
    /// `deferred` takes effect now; proration credit is not simulated. With `pending`, the payment
    /// waits (a cash payment, say): the new purchase is PENDING, no notification, and the old one
    /// keeps its access until ``completePendingPurchase(_:)`` replaces it, or stays if
    /// ``cancelPendingPurchase(_:)`` comes instead.
    @discardableResult
    public func changeSubscription(
        _ token: String, toProductId productId: String, basePlanId: String? = nil,
        replacementMode: PlayReplacementMode = .withTimeProration, pending: Bool = false
    ) throws(GooglePlaySimulationError) -> PlayPurchaseResult {
        try mutate { (state, now) throws(GooglePlaySimulationError) in
            guard let old = state.subscriptions[token] else { throw .unknownPurchase(token) }
            guard replacementMode != .deferred else { throw .invalid("the DEFERRED replacement mode is not simulated") }
            switch old.phase {
            case .active, .gracePeriod: break
            default: throw .invalid("only an active subscription (or one in grace) can be changed")
            }
            let plan = try state.basePlan(
                packageName: old.packageName, productId: productId, basePlanId: basePlanId)
            return state.replacement(
                of: old, productId: productId, plan: plan, periodStart: now, pending: pending, at: now)
        }
    }

    /// The user tops up a prepaid plan: a NEW purchase token of a prepaid base plan of the same
    /// product (`basePlanId`, by default the old one's), whose `linkedPurchaseToken` is the old
    /// one, paid now, its period starting where the old one's ends (`SUBSCRIPTION_PURCHASED`); the
    /// old purchase is replaced (EXPIRED, no notification), as for a plan change.
    @discardableResult
    public func topUp(_ token: String, basePlanId: String? = nil) throws(GooglePlaySimulationError)
        -> PlayPurchaseResult
    {
        try mutate { (state, now) throws(GooglePlaySimulationError) in
            guard let old = state.subscriptions[token] else { throw .unknownPurchase(token) }
            guard !old.plan.autoRenewing, case .active = old.phase else {
                throw .invalid("only an active prepaid plan can be topped up")
            }
            let plan = try state.basePlan(
                packageName: old.packageName, productId: old.productId, basePlanId: basePlanId ?? old.basePlanId)
            guard !plan.autoRenewing else { throw .invalid("a top-up buys a prepaid base plan") }
            return state.replacement(
                of: old, productId: old.productId, plan: plan, periodStart: max(old.expiryTime, now), at: now)
        }
    }

    // MARK: Refunds

    /// Refunds an order. For a subscription order, `revoke` also ends the subscription now
    /// (`SUBSCRIPTION_REVOKED`). For a one-time order, `quantity` less than what is left refunds
    /// part of it (a quantity-based partial refund: the purchase stays); otherwise it is fully
    /// refunded and the purchase is canceled. Always records a voided purchase and sends a
    /// `voidedPurchaseNotification`.
    public func refund(
        orderId: String, quantity: Int? = nil, revoke: Bool = true, reason: VoidedPurchase.VoidedReason = .other,
        source: VoidedPurchase.VoidedSource = .user
    ) throws(GooglePlaySimulationError) {
        try mutate { (state, now) throws(GooglePlaySimulationError) in
            guard let order = state.orders[orderId] else { throw .unknownOrder(orderId) }
            guard order.refundedQuantity < order.quantity else { throw .invalid("the order is already refunded") }
            if var record = state.subscriptions[order.purchaseToken] {
                if revoke, record.endedAt == nil {
                    record.phase = .expired(at: now)
                    record.autoRenew = false
                    record.revokedAt = now
                    record.lastEventDate = now
                    state.subscriptions[order.purchaseToken] = record
                    state.emitSubscription(.revoked, record, at: now)
                }
                state.void(
                    orderId: orderId, purchaseToken: order.purchaseToken, packageName: order.packageName,
                    purchaseTime: order.createTime, isSubscription: true, source: source, reason: reason, at: now)
                return
            }
            guard var record = state.productPurchases[order.purchaseToken] else { throw .unknownOrder(orderId) }
            let left = record.quantity - record.refundedQuantity
            if let quantity, quantity < 1 { throw .invalid("quantity must be at least 1") }
            let partial = quantity.flatMap { $0 < left ? $0 : nil }
            if let partial {
                record.refundedQuantity += partial
            } else {
                record.refundedQuantity = record.quantity
                record.canceled = true
                record.revokedAt = now
            }
            state.productPurchases[order.purchaseToken] = record
            state.void(
                orderId: orderId, purchaseToken: order.purchaseToken, packageName: order.packageName,
                purchaseTime: record.purchaseTime, isSubscription: false, source: source, reason: reason,
                partialQuantity: partial, at: now)
        }
    }

    /// Sends a test notification, as the Play Console's "Send test notification" does.
    public func sendTestNotification(packageName: String) throws(GooglePlaySimulationError) {
        try mutate { (state, now) throws(GooglePlaySimulationError) in
            guard state.apps[packageName] != nil else { throw .unknownApp(packageName) }
            state.emitTest(packageName: packageName, at: now)
        }
    }
}

extension GooglePlaySimulation.State {
    func basePlan(packageName: String, productId: String, basePlanId: String?) throws(GooglePlaySimulationError)
        -> SimulatedBasePlan
    {
        guard apps[packageName] != nil else { throw .unknownApp(packageName) }
        guard let product = subscriptionProducts[packageName + "/" + productId] else {
            throw .unknownProduct(productId)
        }
        guard let plan = product.basePlan(basePlanId) else {
            throw .unknownProduct(productId + "/" + (basePlanId ?? ""))
        }
        return plan
    }

    /// A one-time purchase is paid: order, completion time.
    mutating func complete(_ record: inout PlayProductRecord, price: PlayPrice, at now: Date) {
        let orderId = ids.orderId()
        record.orderId = orderId
        record.pending = false
        record.completionTime = now
        newOrder(
            orderId, token: record.purchaseToken, packageName: record.packageName, productId: record.productId,
            basePlanId: nil, at: now, period: nil, price: price, quantity: record.quantity)
    }

    /// Stops renewals (user or developer): CANCELED until expiry; in grace or on hold, ends now.
    mutating func cancel(_ token: String, by cancellation: PlayCancellation, at now: Date)
        throws(GooglePlaySimulationError)
    {
        guard var record = subscriptions[token] else { throw .unknownPurchase(token) }
        switch record.phase {
        case .active, .paused:
            guard record.autoRenew else { throw .invalid("the subscription is already canceled") }
        case .gracePeriod, .onHold:
            record.phase = .expired(at: now)
        case .pending, .expired, .pendingCanceled:
            throw .invalid("the subscription has ended or is pending")
        }
        record.autoRenew = false
        record.scheduledPauseCycles = nil
        record.cancellation = cancellation
        record.lastEventDate = now
        subscriptions[token] = record
        emitSubscription(.canceled, record, at: now)
    }
}
