import Foundation
import GooglePlay

extension GooglePlaySimulation.State {
    /// Records a subscription RTDN about `record`, published at `date`.
    mutating func emitSubscription(
        _ type: SubscriptionNotification.NotificationType, _ record: PlaySubscriptionRecord, at date: Date
    ) {
        emit(
            DeveloperNotification(
                version: "1.0", packageName: record.packageName, eventTimeMillis: Int64String(milliseconds: date),
                subscriptionNotification: SubscriptionNotification(
                    version: "1.0", notificationType: type, purchaseToken: record.purchaseToken,
                    subscriptionId: record.productId)),
            packageName: record.packageName, at: date)
    }

    /// Records a one-time product RTDN about `record`, published at `date`.
    mutating func emitProduct(
        _ type: OneTimeProductNotification.NotificationType, _ record: PlayProductRecord, at date: Date
    ) {
        emit(
            DeveloperNotification(
                version: "1.0", packageName: record.packageName, eventTimeMillis: Int64String(milliseconds: date),
                oneTimeProductNotification: OneTimeProductNotification(
                    version: "1.0", notificationType: type, purchaseToken: record.purchaseToken,
                    sku: record.productId)),
            packageName: record.packageName, at: date)
    }

    /// Records a voided purchase RTDN, published at `date`.
    mutating func emitVoided(_ voided: PlayVoidedRecord, packageName: String, at date: Date) {
        emit(
            DeveloperNotification(
                version: "1.0", packageName: packageName, eventTimeMillis: Int64String(milliseconds: date),
                voidedPurchaseNotification: VoidedPurchaseNotification(
                    purchaseToken: voided.purchaseToken, orderId: voided.orderId,
                    productType: voided.isSubscription ? .subscription : .oneTime,
                    refundType: voided.voidedQuantity == nil ? .fullRefund : .quantityBasedPartialRefund)),
            packageName: packageName, at: date)
    }

    /// Records a test notification, published at `date`.
    mutating func emitTest(packageName: String, at date: Date) {
        emit(
            DeveloperNotification(
                version: "1.0", packageName: packageName, eventTimeMillis: Int64String(milliseconds: date),
                testNotification: TestNotification(version: "1.0")),
            packageName: packageName, at: date)
    }

    /// Records a message for the app's push subscription (if it has one), due at once.
    private mutating func emit(_ notification: DeveloperNotification, packageName: String, at date: Date) {
        let push = apps[packageName]?.push
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = (try? encoder.encode(notification)) ?? Data("{}".utf8)
        let fault = push == nil || pendingFaults.isEmpty ? nil : pendingFaults.removeFirst()
        let message = PlayPushMessage(
            sequence: pushes.count + 1, packageName: packageName, notification: notification, notificationJSON: json,
            messageId: ids.messageId(), publishTime: RFC3339.string(from: date), attempts: [],
            status: push == nil ? .notSent : .pending, nextAttemptDate: push == nil ? nil : date)
        pushes.append(PlayPushRecord(message: message, push: push, fault: fault, publishDate: date))
    }

    /// Records a voided purchase (and its RTDN) for `orderId`.
    @discardableResult
    mutating func void(
        orderId: String, purchaseToken: String, packageName: String, purchaseTime: Date, isSubscription: Bool,
        source: VoidedPurchase.VoidedSource, reason: VoidedPurchase.VoidedReason, partialQuantity: Int? = nil,
        at date: Date
    ) -> PlayVoidedRecord {
        let record = PlayVoidedRecord(
            purchaseToken: purchaseToken, orderId: orderId, purchaseTime: purchaseTime, voidedTime: date,
            source: source, reason: reason, isSubscription: isSubscription, voidedQuantity: partialQuantity)
        voided.append(record)
        if var order = orders[orderId] {
            order.refundedQuantity = min(order.quantity, order.refundedQuantity + (partialQuantity ?? order.quantity))
            order.refundTime = date
            orders[orderId] = order
        }
        emitVoided(record, packageName: packageName, at: date)
        return record
    }

    /// Creates and stores an order.
    mutating func newOrder(
        _ orderId: String, token: String, packageName: String, productId: String, basePlanId: String?, at date: Date,
        period: (Date, Date)?, price: PlayPrice, quantity: Int
    ) {
        orders[orderId] = PlayOrderRecord(
            orderId: orderId, purchaseToken: token, packageName: packageName, productId: productId,
            basePlanId: basePlanId, createTime: date, servicePeriodStart: period?.0, servicePeriodEnd: period?.1,
            price: price, quantity: quantity)
    }

    /// A new purchase token of `plan` (of `productId`) replacing the subscription `old`, whose token
    /// is its `linkedPurchaseToken` and whose purchase options it keeps: a plan change or a top-up.
    /// Paid now for a period from `periodStart`, the old subscription replaced,
    /// `SUBSCRIPTION_PURCHASED` for the new one; `pending`, only stored PENDING, until its payment
    /// completes (``GooglePlaySimulation/completePendingPurchase(_:)``).
    mutating func replacement(
        of old: PlaySubscriptionRecord, productId: String, plan: SimulatedBasePlan, periodStart: Date,
        pending: Bool = false, at now: Date
    ) -> PlayPurchaseResult {
        let newToken = ids.purchaseToken()
        var record = PlaySubscriptionRecord(
            purchaseToken: newToken, packageName: old.packageName, productId: productId, basePlanId: plan.basePlanId,
            plan: plan, options: old.options, purchaseTime: now, startTime: now, expiryTime: now,
            phase: pending ? .pending : .active, autoRenew: plan.autoRenewing, lastEventDate: now)
        record.linkedPurchaseToken = old.purchaseToken
        guard !pending else {
            subscriptions[newToken] = record
            return PlayPurchaseResult(purchaseToken: newToken, orderId: nil)
        }
        bill(&record, periodStart: periodStart, at: now)
        replace(old.purchaseToken, by: newToken, at: now)
        subscriptions[newToken] = record
        emitSubscription(.purchased, record, at: now)
        return PlayPurchaseResult(purchaseToken: newToken, orderId: record.latestOrderId)
    }

    /// The subscription `token` is replaced by the plan change `newToken` (EXPIRED,
    /// `replacementCancellation`, no notification: the new purchase's says it).
    mutating func replace(_ token: String, by newToken: String, at date: Date) {
        guard var old = subscriptions[token] else { return }
        old.phase = .expired(at: date)
        old.autoRenew = false
        old.cancellation = .replacement
        old.replacedBy = newToken
        old.lastEventDate = date
        subscriptions[token] = old
    }

    /// Bills a new period of `record` starting at `start` under a new order id.
    mutating func bill(_ record: inout PlaySubscriptionRecord, periodStart start: Date, at date: Date) {
        let end = record.plan.billingPeriod.added(to: start)
        let orderId: String
        if record.baseOrderId == nil {
            orderId = ids.orderId()
            record.baseOrderId = orderId
        } else {
            orderId = record.nextOrderId() ?? ids.orderId()
        }
        record.orderIds.append(orderId)
        record.expiryTime = end
        newOrder(
            orderId, token: record.purchaseToken, packageName: record.packageName, productId: record.productId,
            basePlanId: record.basePlanId, at: date, period: (start, end), price: record.plan.price, quantity: 1)
    }
}
