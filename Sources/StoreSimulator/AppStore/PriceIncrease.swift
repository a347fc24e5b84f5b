import AppStoreServer
import Foundation

/// A price increase announced to one subscriber, effective at the next renewal.
struct PriceIncreaseRecord: Sendable, Hashable {
    var newPrice: Int64
    var requiresConsent: Bool
    var accepted: Bool

    /// `priceIncreaseStatus`: 0 while consent is pending, 1 once accepted or when none is needed.
    var status: PriceIncreaseStatus { accepted || !requiresConsent ? .accepted : .notResponded }
    /// The renewal cannot happen: consent was needed and not given.
    var blocksRenewal: Bool { requiresConsent && !accepted }
}

extension AppStoreSimulation {
    /// The developer raises `product`'s price to `newPrice` (milliunits). New purchases pay it now;
    /// each live subscription renewing to the product gets `PRICE_INCREASE` — `PENDING` (renewal info
    /// `priceIncreaseStatus` 0) when the increase needs the customer's consent, else `ACCEPTED`
    /// (status 1) — with `renewalPrice` the new price. At the next renewal an accepted increase is
    /// charged; an unanswered one that needs consent expires the subscription (`EXPIRED
    /// PRICE_INCREASE`, expiration intent 3). Returns the affected subscriptions' ids.
    @discardableResult
    public func requestPriceIncrease(
        product productId: String, newPrice: Int64, requiresConsent: Bool
    ) throws(AppStoreSimulationError) -> [String] {
        try mutate { (state, now) throws(AppStoreSimulationError) -> [String] in
            guard var product = state.products[productId] else { throw .unknownProduct(productId) }
            guard product.kind == .autoRenewable else { throw .invalid("\(productId) is not auto-renewable") }
            guard newPrice > product.price else { throw .invalid("the new price must be higher than \(product.price)") }
            product.price = newPrice
            state.products[productId] = product
            let affected = state.subscriptions.values.filter { subscription in
                guard subscription.autoRenewProductId == productId else { return false }
                switch subscription.phase {
                case .expired, .revoked: return false
                default: return true
                }
            }.map(\.originalTransactionId).sorted()
            for id in affected {
                guard var subscription = state.subscriptions[id] else { continue }
                subscription.priceIncrease = PriceIncreaseRecord(
                    newPrice: newPrice, requiresConsent: requiresConsent, accepted: !requiresConsent)
                subscription.lastEventDate = max(now, subscription.lastEventDate)
                state.subscriptions[id] = subscription
                try state.emit(
                    .priceIncrease, requiresConsent ? .pending : .accepted, bundleId: subscription.bundleId,
                    transactionId: subscription.latestTransactionId, subscriptionId: id, at: now)
            }
            return affected
        }
    }

    /// The customer consents to a pending price increase: `PRICE_INCREASE ACCEPTED`
    /// (`priceIncreaseStatus` 1); the next renewal charges the new price.
    public func acceptPriceIncrease(_ originalTransactionId: String) throws(AppStoreSimulationError) {
        try mutate { (state, now) throws(AppStoreSimulationError) in
            guard var subscription = state.subscriptions[originalTransactionId] else {
                throw .unknownSubscription(originalTransactionId)
            }
            guard var increase = subscription.priceIncrease, increase.blocksRenewal else {
                throw .invalid("no price increase awaits consent on \(originalTransactionId)")
            }
            increase.accepted = true
            subscription.priceIncrease = increase
            subscription.lastEventDate = max(now, subscription.lastEventDate)
            state.subscriptions[originalTransactionId] = subscription
            try state.emit(
                .priceIncrease, .accepted, bundleId: subscription.bundleId,
                transactionId: subscription.latestTransactionId, subscriptionId: originalTransactionId, at: now)
        }
    }
}
