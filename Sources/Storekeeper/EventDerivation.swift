public import Foundation

/// What one storage transaction changed, as the processing saw it: each purchase before and after,
/// each billing event before and after, the transfers and ledger entries. Events are derived from
/// this (``events(entitlementsBefore:after:)``), so they describe exactly what was written.
public struct ChangeSet: Sendable {
    /// Each changed purchase as it was before the transaction (nil: new) and as it is now.
    public private(set) var purchases: [PurchaseKey: (before: Purchase?, after: Purchase)] = [:]
    /// The order purchases were first changed in.
    public private(set) var purchaseOrder: [PurchaseKey] = []
    public private(set) var refunds: [(before: TransactionRecord?, after: TransactionRecord)] = []
    /// Billing events recorded for the first time, per purchase (the overview's rollup reads their
    /// price through the lifecycle event that names them).
    public private(set) var newBillingEvents: [PurchaseKey: [TransactionRecord]] = [:]
    public private(set) var transfers: [OwnershipTransfer] = []
    public private(set) var ledger: [LedgerEntry] = []

    public init() {}

    public var isEmpty: Bool { purchases.isEmpty && refunds.isEmpty && transfers.isEmpty && ledger.isEmpty }

    public mutating func purchaseSaved(before: Purchase?, after: Purchase) {
        if let first = purchases[after.key] {
            purchases[after.key] = (first.before, after)
        } else {
            purchases[after.key] = (before, after)
            purchaseOrder.append(after.key)
        }
    }

    /// Records a billing event merged; only a change of its refunded share matters to events (a
    /// revocation that refunds nothing, Family Sharing's end, is the purchase's `purchase.revoked`).
    public mutating func transactionSaved(before: TransactionRecord?, after: TransactionRecord) {
        if before == nil { newBillingEvents[after.purchaseKey, default: []].append(after) }
        let shareBefore = before?.fact.revokedAt != nil ? (before?.fact.refundedFraction ?? 0) : 0
        let shareAfter = after.fact.revokedAt != nil ? after.fact.refundedFraction : 0
        guard shareBefore != shareAfter else { return }
        refunds.append((before, after))
    }

    public mutating func transferred(_ transfer: OwnershipTransfer) { transfers.append(transfer) }
    public mutating func ledgerAppended(_ entry: LedgerEntry) { ledger.append(entry) }

    /// Every customer whose purchases or balances changed (before or after).
    public var customers: Set<CustomerID> {
        var result = Set<CustomerID>()
        for (before, after) in purchases.values {
            if let id = before?.customerID { result.insert(id) }
            if let id = after.customerID { result.insert(id) }
        }
        for transfer in transfers {
            result.insert(transfer.from)
            result.insert(transfer.to)
        }
        for entry in ledger { result.insert(entry.customerID) }
        return result
    }

    /// The purchases of a customer as they were before this change set, given them as they are now.
    public func purchasesBefore(_ now: [Purchase], of customer: CustomerID) -> [Purchase] {
        var byKey = Dictionary(uniqueKeysWithValues: now.map { ($0.key, $0) })
        for (key, change) in purchases {
            if let before = change.before, before.customerID == customer {
                byKey[key] = before
            } else {
                byKey[key] = nil
            }
        }
        return Array(byKey.values)
    }

    /// The entitlements `customer` had before this change, from `purchases` (theirs now, as after
    /// it). A purchase the change touched counts as its last news left it: its version before, at
    /// the time that news was true (`observedAt`). The clock may have ended its access since, and
    /// the store's word that ends it (an expiry: Google's API reports a subscription as of when it
    /// is asked, Apple sends hours after the moment) still revokes the access it ends. A purchase
    /// the change did not touch counts as now, as after it: the clock alone makes no event.
    public func entitlementsBefore(
        _ purchases: [Purchase], of customer: CustomerID, catalog: Catalog, access: EnvironmentAccess, at now: Date
    ) -> [EntitlementView] {
        CustomerView.entitlements(
            of: purchasesBefore(purchases, of: customer).filter(access.admits), catalog: catalog
        ) { purchase in
            self.purchases[purchase.key] == nil ? now : min(purchase.observedAt, now)
        }
    }
}

/// One event before it has an id and a time: its type, the purchase it is about and its details.
public struct EventDraft: Sendable, Hashable {
    public var type: EventType
    public var customerID: CustomerID?
    public var purchase: Purchase?
    public var details: EventDetails

    public init(type: EventType, customerID: CustomerID?, purchase: Purchase?, details: EventDetails = EventDetails()) {
        self.type = type
        self.customerID = customerID
        self.purchase = purchase
        self.details = details
    }
}

extension ChangeSet {
    /// The events this change set makes, in the order they happened: per purchase its lifecycle
    /// event, then refunds, transfers, balance changes, and last each customer's entitlements that
    /// started or stopped granting (`entitlementsBefore`/`After` per customer).
    public func events(
        entitlementsBefore: [CustomerID: [EntitlementView]], entitlementsAfter: [CustomerID: [EntitlementView]],
        balancesAfter: [CustomerID: [String: Int]]
    ) -> [EventDraft] {
        var drafts: [EventDraft] = []
        let refundedPurchases = Set(refunds.map(\.after.purchaseKey))
        for key in purchaseOrder {
            guard let change = purchases[key] else { continue }
            let replaced = change.after.replaces.flatMap { purchases[$0]?.before ?? nil }
            var lifecycle = Self.lifecycle(
                before: change.before, after: change.after, replaced: replaced,
                refunded: refundedPurchases.contains(key), billed: newBillingEvents[key] != nil)
            // The first lifecycle event of a purchase names the newest billing event recorded with
            // it (a purchase, a renewal, a recovery that was billed), once.
            if let billed = newBillingEvents[key]?.max(by: { $0.fact.purchasedAt < $1.fact.purchasedAt }),
                !lifecycle.isEmpty
            {
                lifecycle[0].details.transactionID = billed.fact.id
            }
            drafts += lifecycle
        }
        for (before, after) in refunds {
            let purchase = purchases[after.purchaseKey]?.after
            let revoked = after.fact.revokedAt != nil
            var details = EventDetails(transactionID: after.fact.id)
            // Refunded: the share refunded now; reversed: the share that had been refunded.
            let share = revoked ? after.fact.refundedFraction : (before?.fact.refundedFraction ?? 1)
            details.refundedShare = min(max(share, 0), 1)
            drafts.append(
                EventDraft(
                    type: revoked ? .purchaseRefunded : .purchaseRefundReversed, customerID: purchase?.customerID,
                    purchase: purchase, details: details))
        }
        for transfer in transfers {
            drafts.append(
                EventDraft(
                    type: .purchaseTransferred, customerID: transfer.to, purchase: purchases[transfer.key]?.after,
                    details: EventDetails(fromCustomerID: transfer.from, toCustomerID: transfer.to)))
        }
        for entry in ledger where entry.amount != 0 {
            drafts.append(
                EventDraft(
                    type: .balanceChanged, customerID: entry.customerID, purchase: nil,
                    details: EventDetails(
                        transactionID: entry.transactionID, balance: entry.balance, amount: entry.amount,
                        balanceAfter: balancesAfter[entry.customerID]?[entry.balance], reason: entry.reason.rawValue)))
        }
        for customer in customers.sorted() {
            let before = Dictionary(
                (entitlementsBefore[customer] ?? []).map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
            let after = Dictionary(
                (entitlementsAfter[customer] ?? []).map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
            for name in Set(before.keys).union(after.keys).sorted() {
                let was = before[name]?.active ?? false
                let now = after[name]?.active ?? false
                guard was != now, let view = now ? after[name] : before[name] else { continue }
                let purchase = purchases[PurchaseKey(store: view.store, id: view.purchaseID)]?.after
                drafts.append(
                    EventDraft(
                        type: now ? .entitlementGranted : .entitlementRevoked, customerID: customer, purchase: purchase,
                        details: EventDetails(expiresAt: view.expiresAt, entitlement: name)))
            }
        }
        return drafts
    }

    /// The lifecycle event of one purchase's change (none for a change that means nothing to the
    /// app's backend, such as an acknowledgement or a purchase superseded by its replacement).
    /// `billed`: a billing event was recorded with it for the first time. A paid period that moved
    /// on without one was extended, not renewed (the App Store's renewal date extension, Google's
    /// deferred billing), and an app counting renewals as payments must not count it.
    static func lifecycle(
        before: Purchase?, after: Purchase, replaced: Purchase?, refunded: Bool, billed: Bool
    ) -> [EventDraft] {
        func draft(_ type: EventType, _ details: EventDetails = EventDetails()) -> EventDraft {
            var details = details
            details.state = after.state
            details.previousState = details.previousState ?? before?.state
            details.expiresAt = after.expiresAt
            details.autoRenew = after.autoRenew
            details.basePlanID = after.basePlanID
            return EventDraft(type: type, customerID: after.customerID, purchase: after, details: details)
        }
        // A change of product names what it changed from: the product, on Google Play its base plan,
        // and the purchase replaced where the new product is a new purchase.
        func productChange(from previous: Purchase?, replacing replaced: PurchaseKey? = nil) -> EventDraft {
            var details = EventDetails(previousProductID: previous?.productID, replacesPurchaseID: replaced?.id)
            details.previousBasePlanID = previous?.basePlanID
            return draft(.subscriptionProductChanged, details)
        }
        // A new purchase replacing another: a change of product, or, of the same product and base
        // plan (Google Play: a prepaid plan's top-up, a re-signup before the end), the replaced
        // purchase going on, said as its own change to this state would be (a top-up's payment
        // renews it), naming the purchase it replaces. (Said as a change of product, it was one
        // from the product to itself.)
        func replacement(of replacedKey: PurchaseKey) -> [EventDraft] {
            guard let replaced, !Self.productChanged(from: replaced, to: after) else {
                return [productChange(from: replaced, replacing: replacedKey)]
            }
            return lifecycle(before: replaced, after: after, replaced: nil, refunded: refunded, billed: billed).map {
                var draft = $0
                draft.details.replacesPurchaseID = replacedKey.id
                return draft
            }
        }
        guard let before else {
            // Waiting for its payment, a purchase has not started (its completion starts it); first
            // heard of already ended and never billed (its payment canceled before the app
            // presented it), it never did.
            if after.state == .pending || (!billed && [.expired, .revoked].contains(after.state)) { return [] }
            if let replacedKey = after.replaces, after.kind == .subscription { return replacement(of: replacedKey) }
            return after.state == .superseded ? [] : [draft(.purchaseStarted)]
        }
        var drafts: [EventDraft] = []
        // The period a product change moves (an App Store upgrade bills and starts one at once, a
        // downgrade takes effect at its renewal) is the change's: said once, by the product change,
        // as on Google Play, where the new product is a new purchase. (Said as a renewal too, it
        // was one on the App Store and not on Google Play.)
        let productChanged = Self.productChanged(from: before, to: after) && after.state != .superseded
        if productChanged { drafts.append(productChange(from: before)) }
        let periodMovedAlone = !productChanged && Self.periodMoved(before, after)
        if before.state != after.state {
            switch (before.state, after.state) {
            case (_, .superseded), (_, .pending): break
            case (.active, .canceled): drafts.append(draft(.subscriptionAutoRenewDisabled))
            case (.canceled, .active):
                drafts.append(draft(.subscriptionAutoRenewEnabled))
                if periodMovedAlone {
                    drafts.append(draft(billed ? .subscriptionRenewed : .subscriptionRenewalExtended))
                }
            case (.billingRetry, .active), (.gracePeriod, .active), (.paused, .active), (.billingRetry, .canceled),
                (.gracePeriod, .canceled), (.paused, .canceled):
                drafts.append(draft(.subscriptionRecovered))
            case (.expired, .active), (.expired, .canceled), (.superseded, .active):
                drafts.append(draft(.subscriptionRenewed))
            case (.pending, .expired), (.pending, .revoked):
                // Its payment canceled (Google: a subscription expired, a one-time product
                // revoked): it never started.
                break
            case (.pending, _):
                // Its payment completed: the purchase starts now, or, a plan change, replaces its
                // predecessor now.
                if let replacedKey = after.replaces, before.replaces == nil, after.kind == .subscription {
                    drafts += replacement(of: replacedKey)
                } else {
                    drafts.append(draft(.purchaseStarted))
                }
            case (.revoked, .active), (.revoked, .canceled):
                // A reversed refund says so through its billing event; otherwise the store gave it back.
                if !refunded { drafts.append(draft(.purchaseRefundReversed)) }
            case (_, .billingRetry):
                drafts.append(draft(after.key.store == .googlePlay ? .subscriptionOnHold : .subscriptionBillingRetry))
            case (_, .gracePeriod): drafts.append(draft(.subscriptionGracePeriod))
            case (_, .paused): drafts.append(draft(.subscriptionPaused))
            case (_, .expired): drafts.append(draft(.subscriptionExpired))
            case (_, .revoked):
                // A refund says so with its share; a revocation without one is its own event.
                if !refunded { drafts.append(draft(.purchaseRevoked)) }
            default: break
            }
        } else if after.kind == .subscription, [.active, .canceled].contains(after.state), periodMovedAlone {
            drafts.append(draft(billed ? .subscriptionRenewed : .subscriptionRenewalExtended))
        }
        // Auto-renew reported apart from the state (Google keeps the state active while it is off).
        if before.state == after.state, let was = before.autoRenew, let now = after.autoRenew, was != now {
            drafts.append(draft(now ? .subscriptionAutoRenewEnabled : .subscriptionAutoRenewDisabled))
        }
        return drafts
    }

    /// Another product, or on Google Play another base plan of the same product (a monthly plan
    /// changed to a yearly one); a base plan not known on either side changes nothing.
    static func productChanged(from before: Purchase, to after: Purchase) -> Bool {
        if before.productID != after.productID { return true }
        guard let previous = before.basePlanID, let next = after.basePlanID else { return false }
        return previous != next
    }

    static func periodMoved(_ before: Purchase, _ after: Purchase) -> Bool {
        guard let next = after.expiresAt else { return false }
        guard let previous = before.expiresAt else { return true }
        return next > previous
    }
}

extension EntitlementView {
    /// The entitlements `purchases` grant at `now` in a deployment with `access`, as the customer
    /// view shows them.
    public static func current(
        of purchases: [Purchase], catalog: Catalog, access: EnvironmentAccess, at now: Date
    ) -> [EntitlementView] {
        CustomerView.entitlements(of: purchases.filter(access.admits), catalog: catalog, at: now)
    }
}
