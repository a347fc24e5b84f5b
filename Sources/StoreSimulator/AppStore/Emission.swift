import AppStoreServer
import Foundation

extension AppStoreSimulation.State {
    /// Signs and records a notification about `transactionId` (and the subscription, if any), signed
    /// at `date`; it is due for delivery at once, to the app's URL of the notification's environment:
    /// `environment` (for notifications about no purchase: TEST, a mass extension's SUMMARY), else the
    /// purchase's.
    mutating func emit(
        _ type: NotificationType, _ subtype: NotificationSubtype?, bundleId: String, transactionId: String?,
        subscriptionId: String?, environment: Environment? = nil,
        consumptionRequestReason: ConsumptionRequestReason? = nil, summary: NotificationSummary? = nil, at date: Date
    ) throws(AppStoreSimulationError) {
        guard let app = apps[bundleId] else { throw .unknownApp(bundleId) }
        guard let signer else { throw .notStarted }
        let transaction = transactionId.flatMap { transactions[$0] }
        let subscription = subscriptionId.flatMap { subscriptions[$0] }
        let environment = environment ?? subscription?.environment ?? transaction?.environment ?? app.environment
        let url = app.notificationURL(for: environment)
        let uuid = ids.uuid().uuidString.lowercased()
        do {
            let signedTransaction = try transaction.map {
                try signer.sign(PayloadBuilder.transaction($0, app: app, signedDate: date))
            }
            let signedRenewal = try subscription.map {
                try signer.sign(
                    PayloadBuilder.renewalInfo(
                        $0, renewalProduct: products[$0.autoRenewProductId], app: app, signedDate: date))
            }
            // A summary notification (a mass extension's outcome) carries `summary` instead of `data`.
            let data =
                summary != nil
                ? nil
                : NotificationData(
                    appAppleId: app.appAppleId, bundleId: app.bundleId,
                    consumptionRequestReason: consumptionRequestReason, environment: environment,
                    signedRenewalInfo: signedRenewal, signedTransactionInfo: signedTransaction,
                    status: subscription?.phase.status)
            let payload = NotificationPayload(
                notificationType: type, subtype: subtype, notificationUUID: uuid, version: "2.0", signedDate: date,
                data: data, summary: summary)
            let signed = try signer.sign(payload)
            let fault = pendingFaults.isEmpty ? nil : pendingFaults.removeFirst()
            let notification = SentNotification(
                sequence: notifications.count + 1, bundleId: bundleId, environment: environment, payload: payload,
                signedPayload: signed, attempts: [], status: url == nil ? .notSent : .pending,
                nextAttemptDate: url == nil ? nil : date)
            notifications.append(
                NotificationRecord(notification: notification, url: url, transactionId: transactionId, fault: fault))
        } catch {
            throw .signing("\(error)")
        }
    }

    /// A new transaction for `product`, stored.
    mutating func newTransaction(
        product: SimulatedProduct, environment: Environment, originalTransactionId: String?,
        originalPurchaseDate: Date?, purchaseDate: Date, expiresDate: Date?, reason: TransactionReason,
        ownership: InAppOwnershipType, appAccountToken: UUID?, appTransactionId: String, offer: SimulatedOffer? = nil
    ) -> TransactionRecord {
        let transactionId = ids.transactionId()
        // What a customer of the app's storefront pays, in its currency.
        let local = product.price(in: apps[product.bundleId]?.storefront ?? "USA")
        let record = TransactionRecord(
            transactionId: transactionId,
            originalTransactionId: originalTransactionId ?? transactionId,
            webOrderLineItemId: product.kind == .autoRenewable ? ids.webOrderLineItemId() : nil,
            bundleId: product.bundleId, environment: environment, productId: product.productId,
            type: product.transactionType, subscriptionGroupIdentifier: product.subscriptionGroupIdentifier,
            purchaseDate: purchaseDate,
            originalPurchaseDate: originalPurchaseDate ?? purchaseDate, expiresDate: expiresDate,
            price: offer?.price ?? local.price, currency: local.currency, reason: reason, ownership: ownership,
            appAccountToken: appAccountToken, appTransactionId: appTransactionId, offer: offer)
        transactions[transactionId] = record
        return record
    }

    /// Appends a renewal-like transaction (renewal, recovery, upgrade) to a subscription.
    mutating func extend(
        _ subscription: inout SubscriptionRecord, product: SimulatedProduct, purchaseDate: Date, periodStart: Date,
        reason: TransactionReason, offer: SimulatedOffer? = nil
    ) throws(AppStoreSimulationError) -> TransactionRecord {
        guard let period = SubscriptionPeriod(offer?.billingPeriod(of: product) ?? product.period ?? "") else {
            throw .invalid("product \(product.productId) has no valid period")
        }
        let original = transactions[subscription.originalTransactionId]
        let record = newTransaction(
            product: product, environment: subscription.environment,
            originalTransactionId: subscription.originalTransactionId,
            originalPurchaseDate: original?.originalPurchaseDate, purchaseDate: purchaseDate,
            expiresDate: period.added(to: periodStart), reason: reason, ownership: original?.ownership ?? .purchased,
            appAccountToken: subscription.appAccountToken, appTransactionId: subscription.appTransactionId,
            offer: offer)
        subscription.transactionIds.append(record.transactionId)
        subscription.productId = product.productId
        subscription.expiresDate = record.expiresDate ?? subscription.expiresDate
        return record
    }
}
