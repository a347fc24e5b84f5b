public import Foundation

extension CustomerView {
    /// The view's JSON body: byte for byte what the API's `JSONEncoder` (`.iso8601` dates,
    /// `.sortedKeys`) writes, without Foundation's generic machinery.
    ///
    /// `GET /v1/customers/{id}` is the API's most frequent call; in a CPU profile of it at 1,000
    /// requests/s that encoder was a fifth of the server's CPU. CustomerViewJSONTests compares the
    /// two on every field, edge value and thousands of random views. A stored property added to
    /// `CustomerView`, `PurchaseView`, `SubscriptionOffers`, `AppliedOffer` or `ConsumptionConsent`
    /// must be written here too (a test lists them).
    public func jsonData() -> Data {
        let purchases = subscriptions.count + oneTimePurchases.count
        return SortedKeysJSONWriter.data(capacity: 1024 + 512 * purchases + 256 * entitlements.count) {
            $0.write(self)
        }
    }
}

extension SortedKeysJSONWriter {
    fileprivate mutating func write(_ view: CustomerView) {
        beginObject()
        member("appAccountToken", view.appAccountToken)
        member("asOf", view.asOf)
        member("balances", view.balances)
        if let consent = view.consumptionConsent {
            key("consumptionConsent")
            beginObject()
            member("consented", consent.consented)
            member("decidedAt", consent.decidedAt)
            endObject()
        }
        member("customerID", view.customerID)
        key("entitlements")
        array(view.entitlements) { $0.write($1) }
        key("oneTimePurchases")
        array(view.oneTimePurchases) { $0.write($1) }
        key("subscriptions")
        array(view.subscriptions) { $0.write($1) }
        endObject()
    }

    private mutating func write(_ purchase: PurchaseView) {
        beginObject()
        member("active", purchase.active)
        member("app", purchase.app)
        member("autoRenew", purchase.autoRenew)
        member("basePlanID", purchase.basePlanID)
        member("environment", purchase.environment)
        member("environmentGrantsAccess", purchase.environmentGrantsAccess)
        member("expiresAt", purchase.expiresAt)
        member("gracePeriodExpiresAt", purchase.gracePeriodExpiresAt)
        member("kind", purchase.kind)
        if let offers = purchase.offers {
            key("offers")
            beginObject()
            if let current = offers.current {
                key("current")
                beginObject()
                member("id", current.id)
                member("kind", current.kind)
                endObject()
            }
            member("eligibleWinBackOfferIDs", offers.eligibleWinBackOfferIDs)
            endObject()
        }
        member("ownership", purchase.ownership)
        member("productID", purchase.productID)
        member("purchaseID", purchase.purchaseID)
        member("state", purchase.state)
        member("store", purchase.store)
        endObject()
    }
}
