import AppStoreServer
import Foundation

extension AppStoreSimulation.State {
    /// When the subscription's next automatic event happens, if it has one.
    func dueDate(_ subscription: SubscriptionRecord) -> Date? {
        switch subscription.phase {
        case .active: subscription.expiresDate
        case .gracePeriod(let expires, _): expires
        case .billingRetry(let start): start.addingTimeInterval(billingRetryDuration)
        case .expired, .revoked: nil
        }
    }

    /// Fires every event due at or before `now`, earliest first (ties by original transaction id).
    mutating func processDue(now: Date) throws(AppStoreSimulationError) {
        while true {
            var next: (id: String, date: Date)?
            for (id, subscription) in subscriptions {
                guard let date = dueDate(subscription), date <= now else { continue }
                if let current = next, current.date < date || (current.date == date && current.id < id) { continue }
                next = (id, date)
            }
            guard let next else { return }
            try fire(next.id, due: next.date)
        }
    }

    /// The automatic event of one subscription: renewal, failed renewal, expiry, end of grace.
    mutating func fire(_ id: String, due: Date) throws(AppStoreSimulationError) {
        guard var subscription = subscriptions[id], let app = apps[subscription.bundleId] else { return }
        let date = max(due, subscription.lastEventDate)
        subscription.lastEventDate = date
        let event: (type: NotificationType, subtype: NotificationSubtype?)
        switch subscription.phase {
        case .active where !subscription.autoRenew:
            subscription.phase = .expired(intent: .customerCanceled)
            event = (.expired, .voluntary)
        case .active where subscription.priceIncrease?.blocksRenewal == true:
            subscription.phase = .expired(intent: .didNotConsentToPriceIncrease)
            event = (.expired, .priceIncrease)
        case .active where subscription.billingFails:
            if let days = app.gracePeriodDays, days > 0 {
                subscription.phase = .gracePeriod(
                    expires: subscription.expiresDate.addingTimeInterval(Double(days) * 86_400),
                    retryStart: subscription.expiresDate)
                event = (.didFailToRenew, .gracePeriod)
            } else {
                subscription.phase = .billingRetry(start: subscription.expiresDate)
                event = (.didFailToRenew, nil)
            }
        case .active:
            if let product = products[subscription.autoRenewProductId] {
                let start = subscription.expiresDate
                let offer = subscription.takeRenewalOffer(at: start)
                _ = try extend(
                    &subscription, product: product, purchaseDate: start, periodStart: start, reason: .renewal,
                    offer: offer)
                subscription.priceIncrease = nil
                event = (.didRenew, nil)
            } else {
                subscription.phase = .expired(intent: .productUnavailable)
                event = (.expired, .productNotForSale)
            }
        case .gracePeriod(_, let retryStart):
            subscription.phase = .billingRetry(start: retryStart)
            event = (.gracePeriodExpired, nil)
        case .billingRetry:
            subscription.phase = .expired(intent: .billingError)
            event = (.expired, .billingRetry)
        case .expired, .revoked:
            return
        }
        subscriptions[id] = subscription
        try emit(
            event.type, event.subtype, bundleId: subscription.bundleId, transactionId: subscription.latestTransactionId,
            subscriptionId: id, at: date)
    }
}
