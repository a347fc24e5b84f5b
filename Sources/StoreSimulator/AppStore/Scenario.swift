public import AppStoreServer
public import Foundation

extension AppStoreSimulation {
    /// A customer buys `product` now. Auto-renewable: a new subscription (`SUBSCRIBED INITIAL_BUY`),
    /// or, after an earlier one in the same group and environment ended, the same one again
    /// (`SUBSCRIBED RESUBSCRIBE`); other products: `ONE_TIME_CHARGE`.
    ///
    /// `environment` (Sandbox or Production; nil: the app's default ``SimulatedApp/environment``) is
    /// the purchase's: its transactions, renewals, refunds, notifications (sent to that environment's
    /// URL) and API answers (from that environment's host) all carry it. A customer's Sandbox and
    /// Production purchases are apart, as a Sandbox account is not the customer's own.
    @discardableResult
    public func purchase(
        customer: String, product productId: String, appAccountToken: UUID? = nil, offer: SimulatedOffer? = nil,
        ownership: InAppOwnershipType = .purchased, environment: Environment? = nil
    ) throws(AppStoreSimulationError) -> PurchaseResult {
        try Self.checkPurchaseEnvironment(environment)
        return try mutate { (state, now) throws(AppStoreSimulationError) -> PurchaseResult in
            try state.purchase(
                customer: customer, product: productId, appAccountToken: appAccountToken, offer: offer,
                ownership: ownership, inApp: true, environment: environment, at: now)
        }
    }

    /// Purchases are made in Sandbox or Production.
    static func checkPurchaseEnvironment(_ environment: Environment?) throws(AppStoreSimulationError) {
        guard let environment, environment != .sandbox, environment != .production else { return }
        throw .invalid("a purchase is made in Sandbox or Production, not \(environment)")
    }
}

extension AppStoreSimulation.State {
    /// A purchase now. `inApp` false is a purchase made in the App Store (an offer code): the
    /// transaction carries no `appAccountToken`. `environment` nil is the app's default.
    mutating func purchase(
        customer: String, product productId: String, appAccountToken: UUID?, offer: SimulatedOffer?,
        ownership: InAppOwnershipType, inApp: Bool, environment requested: Environment?, at now: Date
    ) throws(AppStoreSimulationError) -> AppStoreSimulation.PurchaseResult {
        guard let product = products[productId] else { throw .unknownProduct(productId) }
        guard let app = apps[product.bundleId] else { throw .unknownApp(product.bundleId) }
        let environment = requested ?? app.environment
        // Changed in place: a copy of the record would share its transaction list, and the append
        // below would then copy the whole list, a customer's every purchase, at each purchase.
        if inApp, customers[customer, default: CustomerRecord()].appAccountToken == nil {
            customers[customer]?.appAccountToken = appAccountToken
        }
        // A family member's transactions carry no account token (the purchaser's is not theirs).
        let token = inApp && ownership != .familyShared ? appAccountToken ?? customers[customer]?.appAccountToken : nil
        let appTransactionId = appTransactionId(of: customer, bundleId: app.bundleId, environment: environment)

        guard product.kind == .autoRenewable else {
            let record = newTransaction(
                product: product, environment: environment, originalTransactionId: nil, originalPurchaseDate: nil,
                purchaseDate: now, expiresDate: nil, reason: .purchase, ownership: ownership, appAccountToken: token,
                appTransactionId: appTransactionId, offer: offer)
            customers[customer]?.oneTimeTransactionIds.append(record.transactionId)
            try emit(
                .oneTimeCharge, nil, bundleId: app.bundleId, transactionId: record.transactionId,
                subscriptionId: nil, at: now)
            return AppStoreSimulation.PurchaseResult(
                originalTransactionId: record.transactionId, transactionId: record.transactionId,
                environment: environment)
        }

        guard let group = product.subscriptionGroupIdentifier,
            let period = SubscriptionPeriod(offer?.billingPeriod(of: product) ?? product.period ?? "")
        else { throw .invalid("product \(productId) has no group or valid period") }
        let existing = subscriptions.values.first {
            $0.customerId == customer && $0.bundleId == app.bundleId && $0.environment == environment
                && $0.groupId == group
        }
        if let existing {
            switch existing.phase {
            case .expired, .revoked: break
            default: throw .alreadySubscribed(originalTransactionId: existing.originalTransactionId)
            }
        }
        let original = existing.flatMap { transactions[$0.originalTransactionId] }
        let record = newTransaction(
            product: product, environment: environment, originalTransactionId: existing?.originalTransactionId,
            originalPurchaseDate: original?.originalPurchaseDate, purchaseDate: now,
            expiresDate: period.added(to: now), reason: .purchase, ownership: ownership, appAccountToken: token,
            appTransactionId: appTransactionId, offer: offer)
        var subscription =
            existing
            ?? SubscriptionRecord(
                originalTransactionId: record.originalTransactionId, bundleId: app.bundleId,
                environment: environment, customerId: customer, appAccountToken: token,
                appTransactionId: appTransactionId, groupId: group, productId: productId,
                autoRenewProductId: productId, expiresDate: now,
                recentSubscriptionStartDate: now, transactionIds: [], lastEventDate: now)
        subscription.phase = .active
        subscription.phaseBeforeRevocation = nil
        subscription.autoRenew = true
        subscription.billingFails = false
        subscription.productId = productId
        subscription.autoRenewProductId = productId
        subscription.expiresDate = record.expiresDate ?? now
        subscription.recentSubscriptionStartDate = now
        subscription.transactionIds.append(record.transactionId)
        subscription.lastEventDate = max(now, subscription.lastEventDate)
        subscription.appAccountToken = token ?? subscription.appAccountToken
        subscription.startOffer(offer, at: now)
        subscriptions[subscription.originalTransactionId] = subscription
        try emit(
            .subscribed, existing == nil ? .initialBuy : .resubscribe, bundleId: app.bundleId,
            transactionId: record.transactionId, subscriptionId: subscription.originalTransactionId, at: now)
        return AppStoreSimulation.PurchaseResult(
            originalTransactionId: subscription.originalTransactionId, transactionId: record.transactionId,
            environment: environment)
    }
}

extension AppStoreSimulation {
    /// Turns auto-renew on or off (`DID_CHANGE_RENEWAL_STATUS` `AUTO_RENEW_ENABLED`/`AUTO_RENEW_DISABLED`);
    /// no notification when it is already so.
    public func setAutoRenew(_ originalTransactionId: String, on: Bool) throws(AppStoreSimulationError) {
        try withLiveSubscription(originalTransactionId) { (state, subscription, now) throws(AppStoreSimulationError) in
            guard subscription.autoRenew != on else { return }
            subscription.autoRenew = on
            state.subscriptions[originalTransactionId] = subscription
            try state.emit(
                .didChangeRenewalStatus, on ? .autoRenewEnabled : .autoRenewDisabled, bundleId: subscription.bundleId,
                transactionId: subscription.latestTransactionId, subscriptionId: originalTransactionId, at: now)
        }
    }

    /// Billing fails from the next renewal on: `DID_FAIL_TO_RENEW` (subtype `GRACE_PERIOD` when the app
    /// has a grace period), then `GRACE_PERIOD_EXPIRED`, then after the billing retry period
    /// `EXPIRED BILLING_RETRY` — unless ``recoverBilling(_:)`` comes first.
    public func failBilling(_ originalTransactionId: String) throws(AppStoreSimulationError) {
        try withLiveSubscription(originalTransactionId) { (state, subscription, _) throws(AppStoreSimulationError) in
            subscription.billingFails = true
            state.subscriptions[originalTransactionId] = subscription
        }
    }

    /// Billing works again. In grace or billing retry the subscription renews now
    /// (`DID_RENEW BILLING_RECOVERY`): in grace the period counts from the failed renewal date, in
    /// billing retry from now.
    public func recoverBilling(_ originalTransactionId: String) throws(AppStoreSimulationError) {
        try withLiveSubscription(originalTransactionId) { (state, subscription, now) throws(AppStoreSimulationError) in
            subscription.billingFails = false
            let periodStart: Date
            switch subscription.phase {
            case .gracePeriod(_, let retryStart): periodStart = retryStart
            case .billingRetry: periodStart = now
            default:
                state.subscriptions[originalTransactionId] = subscription
                return
            }
            guard let product = state.products[subscription.autoRenewProductId] else {
                throw .unknownProduct(subscription.autoRenewProductId)
            }
            let record = try state.extend(
                &subscription, product: product, purchaseDate: now, periodStart: periodStart, reason: .renewal)
            subscription.phase = .active
            state.subscriptions[originalTransactionId] = subscription
            try state.emit(
                .didRenew, .billingRecovery, bundleId: subscription.bundleId, transactionId: record.transactionId,
                subscriptionId: originalTransactionId, at: now)
        }
    }

    /// Moves a subscription to another product of its group. Upgrades, and crossgrades to the same
    /// period, take effect now: the current transaction becomes `isUpgraded` and a new one starts
    /// (`DID_CHANGE_RENEWAL_PREF UPGRADE`). Downgrades, and crossgrades to another period, take
    /// effect at the next renewal (`DID_CHANGE_RENEWAL_PREF DOWNGRADE`). Choosing the current
    /// product again cancels a pending downgrade (`DID_CHANGE_RENEWAL_PREF`, no subtype).
    @discardableResult
    public func changeProduct(_ originalTransactionId: String, to productId: String) throws(AppStoreSimulationError)
        -> ProductChange
    {
        try mutate { (state, now) throws(AppStoreSimulationError) -> ProductChange in
            guard var subscription = state.subscriptions[originalTransactionId] else {
                throw .unknownSubscription(originalTransactionId)
            }
            guard case .active = subscription.phase else { throw .invalid("the subscription is not active") }
            guard let target = state.products[productId] else { throw .unknownProduct(productId) }
            guard let current = state.products[subscription.productId] else {
                throw .unknownProduct(subscription.productId)
            }
            guard target.subscriptionGroupIdentifier == subscription.groupId, target.bundleId == subscription.bundleId
            else { throw .invalid("\(productId) is not in subscription group \(subscription.groupId)") }
            subscription.lastEventDate = max(now, subscription.lastEventDate)
            if productId == subscription.productId {
                guard subscription.autoRenewProductId != productId else {
                    throw .invalid("the subscription is already on \(productId)")
                }
                subscription.autoRenewProductId = productId
                state.subscriptions[originalTransactionId] = subscription
                try state.emit(
                    .didChangeRenewalPref, nil, bundleId: subscription.bundleId,
                    transactionId: subscription.latestTransactionId, subscriptionId: originalTransactionId, at: now)
                return .downgradeCanceled
            }
            let (targetLevel, currentLevel) = (target.groupLevel ?? 1, current.groupLevel ?? 1)
            let change: ProductChange =
                targetLevel < currentLevel ? .upgrade : targetLevel > currentLevel ? .downgrade : .crossgrade
            let immediate = change == .upgrade || (change == .crossgrade && target.period == current.period)
            if immediate {
                state.transactions[subscription.latestTransactionId]?.isUpgraded = true
                let record = try state.extend(
                    &subscription, product: target, purchaseDate: now, periodStart: now, reason: .purchase)
                subscription.autoRenewProductId = productId
                state.subscriptions[originalTransactionId] = subscription
                try state.emit(
                    .didChangeRenewalPref, .upgrade, bundleId: subscription.bundleId,
                    transactionId: record.transactionId, subscriptionId: originalTransactionId, at: now)
            } else {
                subscription.autoRenewProductId = productId
                state.subscriptions[originalTransactionId] = subscription
                try state.emit(
                    .didChangeRenewalPref, .downgrade, bundleId: subscription.bundleId,
                    transactionId: subscription.latestTransactionId, subscriptionId: originalTransactionId, at: now)
            }
            return change
        }
    }

    /// Upgrades (throws if `productId` is not a higher level of the group).
    public func upgrade(_ originalTransactionId: String, to productId: String) throws(AppStoreSimulationError) {
        try checkedChange(originalTransactionId, to: productId, expecting: .upgrade)
    }

    /// Downgrades (throws if `productId` is not a lower level of the group).
    public func downgrade(_ originalTransactionId: String, to productId: String) throws(AppStoreSimulationError) {
        try checkedChange(originalTransactionId, to: productId, expecting: .downgrade)
    }

    /// Crossgrades (throws if `productId` is not at the same level).
    public func crossgrade(_ originalTransactionId: String, to productId: String) throws(AppStoreSimulationError) {
        try checkedChange(originalTransactionId, to: productId, expecting: .crossgrade)
    }

    private func checkedChange(
        _ originalTransactionId: String, to productId: String, expecting expected: ProductChange
    ) throws(AppStoreSimulationError) {
        let levels: (Int, Int)? = state.withLock { state in
            guard let subscription = state.subscriptions[originalTransactionId],
                let current = state.products[subscription.productId], let target = state.products[productId]
            else { return nil }
            return (target.groupLevel ?? 1, current.groupLevel ?? 1)
        }
        if let levels {
            let (target, current) = levels
            let actual: ProductChange = target < current ? .upgrade : target > current ? .downgrade : .crossgrade
            guard actual == expected else { throw .invalid("\(productId) would be a \(actual), not a \(expected)") }
        }
        try changeProduct(originalTransactionId, to: productId)
    }

    /// Makes a transaction one from before Apple carried `appTransactionId`: it is signed without
    /// it (Get App Transaction Info still knows it).
    public func predateAppTransactionId(transactionId: String) throws(AppStoreSimulationError) {
        try mutate { (state, _) throws(AppStoreSimulationError) in
            guard state.transactions[transactionId] != nil else { throw .unknownTransaction(transactionId) }
            state.transactions[transactionId]?.predatesAppTransactionId = true
        }
    }

    /// Apple finds the customer eligible for win-back offers of an ended subscription: its renewal
    /// info carries `eligibleWinBackOfferIds` from now on (no notification says so; the next
    /// notification or status answer does).
    public func offerWinBack(_ originalTransactionId: String, offerIds: [String]) throws(AppStoreSimulationError) {
        try mutate { (state, _) throws(AppStoreSimulationError) in
            guard state.subscriptions[originalTransactionId] != nil else {
                throw .unknownSubscription(originalTransactionId)
            }
            state.subscriptions[originalTransactionId]?.eligibleWinBackOfferIds = offerIds
        }
    }

    /// The App Store refunds a transaction now (`REFUND`): full, or prorated when
    /// `revocationPercentage` (milliunits, 100000 = 100%) is below 100%. Refunding a subscription's
    /// latest transaction revokes the subscription (status 5).
    public func refund(
        transactionId: String, revocationPercentage: Int32? = nil, reason: RevocationReason = .other
    ) throws(AppStoreSimulationError) {
        try mutate { (state, now) throws(AppStoreSimulationError) in
            guard var record = state.transactions[transactionId] else { throw .unknownTransaction(transactionId) }
            guard record.revocation == nil else { throw .invalid("transaction \(transactionId) is already refunded") }
            let percentage = min(max(revocationPercentage ?? 100_000, 0), 100_000)
            record.refundRequested = false
            try state.revoke(
                record,
                RevocationRecord(
                    date: now, reason: reason, type: percentage >= 100_000 ? .refundFull : .refundProrated,
                    percentage: percentage),
                announcing: .refund, at: now)
        }
    }

    /// The customer asks for a refund: `CONSUMPTION_REQUEST` with the reason.
    public func requestRefund(
        transactionId: String, reason: ConsumptionRequestReason = .unintendedPurchase
    ) throws(AppStoreSimulationError) {
        try mutate { (state, now) throws(AppStoreSimulationError) in
            guard var record = state.transactions[transactionId] else { throw .unknownTransaction(transactionId) }
            guard record.revocation == nil else { throw .invalid("transaction \(transactionId) is already refunded") }
            record.refundRequested = true
            state.transactions[transactionId] = record
            let subscriptionId = state.touchSubscription(of: record, at: now) { _ in }
            try state.emit(
                .consumptionRequest, nil, bundleId: record.bundleId, transactionId: transactionId,
                subscriptionId: subscriptionId, consumptionRequestReason: reason, at: now)
        }
    }

    /// The App Store declines a refund request (`REFUND_DECLINED`).
    public func declineRefund(transactionId: String) throws(AppStoreSimulationError) {
        try mutate { (state, now) throws(AppStoreSimulationError) in
            guard var record = state.transactions[transactionId] else { throw .unknownTransaction(transactionId) }
            guard record.revocation == nil else { throw .invalid("transaction \(transactionId) is already refunded") }
            record.refundRequested = false
            state.transactions[transactionId] = record
            let subscriptionId = state.touchSubscription(of: record, at: now) { _ in }
            try state.emit(
                .refundDeclined, nil, bundleId: record.bundleId, transactionId: transactionId,
                subscriptionId: subscriptionId, at: now)
        }
    }

    /// The App Store reverses a refund (`REFUND_REVERSED`): the revocation is cleared and a revoked
    /// subscription returns to the state it had.
    public func reverseRefund(transactionId: String) throws(AppStoreSimulationError) {
        try mutate { (state, now) throws(AppStoreSimulationError) in
            guard var record = state.transactions[transactionId] else { throw .unknownTransaction(transactionId) }
            guard record.revocation != nil else { throw .invalid("transaction \(transactionId) is not refunded") }
            record.revocation = nil
            state.transactions[transactionId] = record
            let subscriptionId = state.touchSubscription(of: record, at: now) { subscription in
                guard subscription.phase == .revoked, subscription.latestTransactionId == transactionId else { return }
                subscription.phase = subscription.phaseBeforeRevocation ?? .active
                subscription.phaseBeforeRevocation = nil
            }
            try state.emit(
                .refundReversed, nil, bundleId: record.bundleId, transactionId: transactionId,
                subscriptionId: subscriptionId, at: now)
        }
    }

    /// A family member loses access to a `FAMILY_SHARED` purchase (`REVOKE`): the transaction gets
    /// `revocationType` `FAMILY_REVOKE` and a subscription is revoked (status 5).
    public func revokeFamilySharing(transactionId: String) throws(AppStoreSimulationError) {
        try mutate { (state, now) throws(AppStoreSimulationError) in
            guard let record = state.transactions[transactionId] else { throw .unknownTransaction(transactionId) }
            guard record.ownership == .familyShared else {
                throw .invalid("transaction \(transactionId) is not family shared")
            }
            guard record.revocation == nil else { throw .invalid("transaction \(transactionId) is already revoked") }
            try state.revoke(
                record, RevocationRecord(date: now, reason: .other, type: .familyRevoke, percentage: 100_000),
                announcing: .revoke, at: now)
        }
    }

    /// Runs `body` on a subscription that has not ended (active, grace or billing retry).
    private func withLiveSubscription(
        _ originalTransactionId: String,
        _ body: (inout State, inout SubscriptionRecord, Date) throws(AppStoreSimulationError) -> Void
    ) throws(AppStoreSimulationError) {
        try mutate { (state, now) throws(AppStoreSimulationError) in
            guard var subscription = state.subscriptions[originalTransactionId] else {
                throw .unknownSubscription(originalTransactionId)
            }
            switch subscription.phase {
            case .expired, .revoked: throw .invalid("the subscription has ended")
            default: break
            }
            subscription.lastEventDate = max(now, subscription.lastEventDate)
            try body(&state, &subscription, now)
        }
    }
}

extension AppStoreSimulation.State {
    /// Applies `change` to the subscription a transaction belongs to, if any; returns its id.
    mutating func touchSubscription(
        of record: TransactionRecord, at now: Date, _ change: (inout SubscriptionRecord) -> Void
    ) -> String? {
        guard record.type == .autoRenewableSubscription,
            var subscription = subscriptions[record.originalTransactionId]
        else { return nil }
        change(&subscription)
        subscription.lastEventDate = max(now, subscription.lastEventDate)
        subscriptions[record.originalTransactionId] = subscription
        return subscription.originalTransactionId
    }
}

extension AppStoreSimulation.State {
    /// Revokes a transaction (refund, Family Sharing revoke): records the revocation, revokes the
    /// subscription when it is its latest transaction, and announces it with `notificationType`.
    mutating func revoke(
        _ transaction: TransactionRecord, _ revocation: RevocationRecord, announcing notificationType: NotificationType,
        at now: Date
    ) throws(AppStoreSimulationError) {
        var record = transaction
        record.revocation = revocation
        transactions[record.transactionId] = record
        let subscriptionId = touchSubscription(of: record, at: now) { subscription in
            guard subscription.latestTransactionId == record.transactionId, subscription.phase != .revoked else {
                return
            }
            subscription.phaseBeforeRevocation = subscription.phase
            subscription.phase = .revoked
        }
        try emit(
            notificationType, nil, bundleId: record.bundleId, transactionId: record.transactionId,
            subscriptionId: subscriptionId, at: now)
    }
}
