import Foundation
import Storekeeper
import Testing

/// Which events a change makes (`ChangeSet.events`), without storage.
@Suite struct EventDerivationTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let alice = CustomerID("alice")

    func purchase(
        _ state: SubscriptionState, store: Store = .appStore, product: String = "monthly",
        expiresIn: TimeInterval = 3600,
        autoRenew: Bool? = true
    ) -> Purchase {
        Purchase(
            key: PurchaseKey(store: store, id: "1"), customerID: alice, app: AppID("com.example.app"),
            productID: product, kind: .subscription, environment: .production, state: state,
            expiresAt: now.addingTimeInterval(expiresIn), autoRenew: autoRenew, observedAt: now)
    }

    /// `billed`: the change also recorded a new billing event of the purchase (a paid renewal).
    func types(_ before: Purchase?, _ after: Purchase, billed: Bool = false) -> [EventType] {
        var changes = ChangeSet()
        changes.purchaseSaved(before: before, after: after)
        if billed {
            let renewal = TransactionFact(id: "t2", productID: after.productID, purchasedAt: now, observedAt: now)
            changes.transactionSaved(before: nil, after: TransactionRecord(purchaseKey: after.key, fact: renewal))
        }
        return changes.events(entitlementsBefore: [:], entitlementsAfter: [:], balancesAfter: [:]).map(\.type)
    }

    @Test func lifecycleTransitions() {
        #expect(types(nil, purchase(.active)) == [.purchaseStarted])
        #expect(
            types(purchase(.active), purchase(.active, expiresIn: 86_400), billed: true) == [.subscriptionRenewed])
        // The period moved without a payment: a renewal date extension, not a renewal.
        #expect(
            types(purchase(.active), purchase(.active, expiresIn: 86_400)) == [.subscriptionRenewalExtended])
        #expect(
            types(purchase(.canceled, autoRenew: false), purchase(.canceled, expiresIn: 86_400, autoRenew: false))
                == [.subscriptionRenewalExtended])
        #expect(types(purchase(.active), purchase(.canceled, autoRenew: false)) == [.subscriptionAutoRenewDisabled])
        #expect(types(purchase(.canceled, autoRenew: false), purchase(.active)) == [.subscriptionAutoRenewEnabled])
        #expect(types(purchase(.active), purchase(.billingRetry)) == [.subscriptionBillingRetry])
        #expect(
            types(purchase(.active, store: .googlePlay), purchase(.billingRetry, store: .googlePlay)) == [
                .subscriptionOnHold
            ])
        #expect(types(purchase(.active), purchase(.gracePeriod)) == [.subscriptionGracePeriod])
        #expect(types(purchase(.billingRetry), purchase(.active)) == [.subscriptionRecovered])
        #expect(types(purchase(.active), purchase(.paused)) == [.subscriptionPaused])
        #expect(types(purchase(.canceled), purchase(.expired)) == [.subscriptionExpired])
        #expect(types(purchase(.expired), purchase(.active, expiresIn: 86_400)) == [.subscriptionRenewed])
        #expect(types(purchase(.active), purchase(.revoked)) == [.purchaseRevoked])
        #expect(types(purchase(.active), purchase(.active, product: "yearly")) == [.subscriptionProductChanged])
        // Google keeps the state while auto-renew is off.
        #expect(
            types(purchase(.active, autoRenew: true), purchase(.active, autoRenew: false)) == [
                .subscriptionAutoRenewDisabled
            ])
        // A pending plan change whose payment completed: it replaces its predecessor now.
        var paidChange = purchase(.active, store: .googlePlay, product: "yearly")
        paidChange.replaces = .googlePlay("0")
        #expect(
            types(purchase(.pending, store: .googlePlay, product: "yearly"), paidChange, billed: true) == [
                .subscriptionProductChanged
            ])
        // Nothing the app's backend needs: a superseded token, a pending one.
        #expect(types(purchase(.active), purchase(.superseded)).isEmpty)
        #expect(types(purchase(.active), purchase(.active)).isEmpty)
    }

    /// A product change moves the paid period to the new product's (an App Store upgrade bills
    /// and starts a period at once, a downgrade takes effect with its renewal): one event, the
    /// product change, naming the billing event, as on Google Play, where the new product is a new
    /// purchase replacing the old. Not also a renewal, which an app counting renewals would count
    /// on one store and not the other.
    @Test func aProductChangeIsOneEventOnBothStores() {
        let upgrade = purchase(.active, product: "yearly", expiresIn: 86_400)
        var changes = ChangeSet()
        changes.purchaseSaved(before: purchase(.active), after: upgrade)
        let charge = TransactionFact(id: "t2", productID: "yearly", purchasedAt: now, observedAt: now)
        changes.transactionSaved(before: nil, after: TransactionRecord(purchaseKey: upgrade.key, fact: charge))
        let drafts = changes.events(entitlementsBefore: [:], entitlementsAfter: [:], balancesAfter: [:])
        #expect(drafts.map(\.type) == [.subscriptionProductChanged])
        #expect(drafts.first?.details.transactionID == "t2")
        #expect(drafts.first?.details.expiresAt == upgrade.expiresAt)
        // Unbilled (a crossgrade into a period already paid for): not a renewal date extension either.
        #expect(types(purchase(.active), upgrade) == [.subscriptionProductChanged])
        // Upgrading turns auto-renew back on: said, as any change of it.
        #expect(
            types(purchase(.canceled, autoRenew: false), upgrade, billed: true) == [
                .subscriptionProductChanged, .subscriptionAutoRenewEnabled,
            ])
        // Coming back after the end, to another product: a comeback too.
        #expect(
            types(purchase(.expired, expiresIn: -86_400), upgrade, billed: true) == [
                .subscriptionProductChanged, .subscriptionRenewed,
            ])
        // Google Play: the new product's purchase replaces the old one.
        var replacement = purchase(.active, store: .googlePlay, product: "yearly", expiresIn: 86_400)
        replacement.key = PurchaseKey(store: .googlePlay, id: "2")
        replacement.replaces = PurchaseKey(store: .googlePlay, id: "1")
        #expect(types(nil, replacement, billed: true) == [.subscriptionProductChanged])
    }

    /// Google Play: another base plan of the same product (monthly to yearly) is a change of
    /// product, whose event names both plans; a base plan not known on one side (a purchase stored
    /// before base plans were) changes nothing. Every lifecycle event says the base plan. The
    /// change was `subscription.product_changed` from the product to itself, with no plan named.
    @Test func anotherBasePlanOfTheProductIsAProductChange() throws {
        var monthly = purchase(.active, store: .googlePlay)
        monthly.basePlanID = "monthly"
        var yearly = purchase(.active, store: .googlePlay, expiresIn: 86_400 * 365)
        yearly.key = PurchaseKey(store: .googlePlay, id: "2")
        yearly.replaces = monthly.key
        yearly.basePlanID = "yearly"
        var changes = ChangeSet()
        changes.purchaseSaved(before: monthly, after: monthly.superseding(at: now))
        changes.purchaseSaved(before: nil, after: yearly)
        let drafts = changes.events(entitlementsBefore: [:], entitlementsAfter: [:], balancesAfter: [:])
        #expect(drafts.map(\.type) == [.subscriptionProductChanged])
        let change = try #require(drafts.first).details
        #expect(change.previousProductID == monthly.productID && change.previousBasePlanID == "monthly")
        #expect(change.basePlanID == "yearly" && change.replacesPurchaseID == monthly.key.id)
        // Within one purchase too (the domain's rule, whichever store would report it).
        var moved = monthly
        moved.basePlanID = "yearly"
        #expect(types(monthly, moved) == [.subscriptionProductChanged])
        // A base plan learned, not changed.
        var unknown = monthly
        unknown.basePlanID = nil
        #expect(types(unknown, monthly).isEmpty)
        #expect(types(monthly, unknown).isEmpty)
        // Said by every lifecycle event of the subscription.
        var canceled = monthly
        canceled.state = .canceled
        canceled.autoRenew = false
        var cancellation = ChangeSet()
        cancellation.purchaseSaved(before: monthly, after: canceled)
        let off = try #require(
            cancellation.events(entitlementsBefore: [:], entitlementsAfter: [:], balancesAfter: [:]).first)
        #expect(off.type == .subscriptionAutoRenewDisabled && off.details.basePlanID == "monthly")
    }

    /// Google Play: a new purchase of the same product and base plan replacing another (a prepaid
    /// plan's top-up, a re-signup before the end) is the replaced purchase going on: its events
    /// are those of the replaced purchase changing to it, naming the purchase replaced. A top-up
    /// renews it; a re-signup turns auto-renew back on. It was `subscription.product_changed` from
    /// the product to itself. With the replaced purchase unknown, it stays a change of product.
    @Test func aReplacementOfTheSameProductAndPlanGoesOn() throws {
        func replacing(_ old: Purchase, with new: Purchase, billed: Bool = true) -> [EventDraft] {
            var changes = ChangeSet()
            changes.purchaseSaved(before: old, after: old.superseding(at: now))
            changes.purchaseSaved(before: nil, after: new)
            if billed {
                let order = TransactionFact(id: "GPA.2", productID: new.productID, purchasedAt: now, observedAt: now)
                changes.transactionSaved(before: nil, after: TransactionRecord(purchaseKey: new.key, fact: order))
            }
            return changes.events(entitlementsBefore: [:], entitlementsAfter: [:], balancesAfter: [:])
        }
        var prepaid = purchase(.active, store: .googlePlay, autoRenew: nil)
        prepaid.basePlanID = "prepaid"
        var toppedUp = purchase(.active, store: .googlePlay, expiresIn: 3600 + 30 * 86_400, autoRenew: nil)
        toppedUp.key = PurchaseKey(store: .googlePlay, id: "2")
        toppedUp.replaces = prepaid.key
        toppedUp.basePlanID = "prepaid"
        let topUp = replacing(prepaid, with: toppedUp)
        #expect(topUp.map(\.type) == [.subscriptionRenewed])
        let renewal = try #require(topUp.first).details
        #expect(renewal.transactionID == "GPA.2" && renewal.replacesPurchaseID == prepaid.key.id)
        #expect(renewal.previousState == .active && renewal.basePlanID == "prepaid")

        var canceled = purchase(.canceled, store: .googlePlay, autoRenew: false)
        canceled.basePlanID = "monthly"
        var resignup = purchase(.active, store: .googlePlay, expiresIn: 30 * 86_400)
        resignup.key = PurchaseKey(store: .googlePlay, id: "2")
        resignup.replaces = canceled.key
        resignup.basePlanID = "monthly"
        let resignupEvents = replacing(canceled, with: resignup)
        #expect(resignupEvents.map(\.type) == [.subscriptionAutoRenewEnabled, .subscriptionRenewed])
        #expect(resignupEvents.first?.details.transactionID == "GPA.2")
        #expect(resignupEvents.allSatisfy { $0.details.replacesPurchaseID == canceled.key.id })

        // The replaced purchase not known to the server: nothing to go on from.
        #expect(types(nil, toppedUp, billed: true) == [.subscriptionProductChanged])
    }

    /// A purchase waiting for its payment (Google Play's pending purchases: cash, say) has not
    /// started: it makes no event until the payment completes, then `purchase.started`, naming its
    /// billing event, whatever its kind; one whose payment is canceled never started, so it makes
    /// none. Its completion was `subscription.renewed` (a consumable's made none), and its
    /// cancellation `subscription.expired`: the overview counted it new, then renewed or churned.
    @Test func aPendingPurchaseStartsWhenItIsPaid() {
        let pending = purchase(.pending, store: .googlePlay)
        #expect(types(nil, pending).isEmpty)
        var changes = ChangeSet()
        let paid = purchase(.active, store: .googlePlay, expiresIn: 86_400)
        changes.purchaseSaved(before: pending, after: paid)
        let order = TransactionFact(id: "GPA.1", productID: paid.productID, purchasedAt: now, observedAt: now)
        changes.transactionSaved(before: nil, after: TransactionRecord(purchaseKey: paid.key, fact: order))
        let drafts = changes.events(entitlementsBefore: [:], entitlementsAfter: [:], balancesAfter: [:])
        #expect(drafts.map(\.type) == [.purchaseStarted])
        #expect(drafts.first?.details.transactionID == "GPA.1")
        #expect(drafts.first?.details.previousState == .pending)
        #expect(types(pending, purchase(.canceled, store: .googlePlay, autoRenew: false)) == [.purchaseStarted])
        // Its payment canceled (Google: SUBSCRIPTION_PENDING_PURCHASE_CANCELED, then expired).
        #expect(types(pending, purchase(.expired, store: .googlePlay, expiresIn: 0)).isEmpty)
        // First heard of once its payment was canceled: ended, and never billed.
        #expect(types(nil, purchase(.expired, store: .googlePlay, expiresIn: 0)).isEmpty)
        // One that ended after it was paid for (a purchase presented late) did start.
        #expect(types(nil, purchase(.expired, store: .googlePlay, expiresIn: 0), billed: true) == [.purchaseStarted])
        // A one-time purchase alike.
        var gems = purchase(.pending, store: .googlePlay, product: "gems")
        gems.kind = .consumable
        var gemsPaid = gems
        gemsPaid.state = .active
        #expect(types(nil, gems).isEmpty)
        #expect(types(gems, gemsPaid) == [.purchaseStarted])
        var gemsCanceled = gems
        gemsCanceled.state = .revoked
        #expect(types(gems, gemsCanceled).isEmpty)
    }

    @Test func aRefundIsOneEventWithItsShareNotAlsoARevocation() {
        var changes = ChangeSet()
        changes.purchaseSaved(before: purchase(.active), after: purchase(.revoked))
        let sold = TransactionFact(id: "t1", productID: "monthly", purchasedAt: now, observedAt: now)
        var refunded = sold
        refunded.revokedAt = now
        refunded.refundedFraction = 0.25
        let key = PurchaseKey(store: .appStore, id: "1")
        changes.transactionSaved(
            before: TransactionRecord(purchaseKey: key, fact: sold),
            after: TransactionRecord(purchaseKey: key, fact: refunded))
        let events = changes.events(entitlementsBefore: [:], entitlementsAfter: [:], balancesAfter: [:])
        #expect(events.map(\.type) == [.purchaseRefunded])
        #expect(events.first?.details.refundedShare == 0.25)
        #expect(events.first?.details.transactionID == "t1")
        // The same billing event merged again changes nothing.
        var repeated = ChangeSet()
        repeated.transactionSaved(
            before: TransactionRecord(purchaseKey: key, fact: refunded),
            after: TransactionRecord(purchaseKey: key, fact: refunded))
        #expect(repeated.isEmpty)
    }

    @Test func aRevocationThatRefundsNothingIsTheRevocationNotARefund() {
        var changes = ChangeSet()
        changes.purchaseSaved(before: purchase(.active), after: purchase(.revoked))
        let shared = TransactionFact(id: "t1", productID: "monthly", purchasedAt: now, observedAt: now)
        var revoked = shared
        revoked.revokedAt = now  // Family Sharing ended: nothing refunded
        let key = PurchaseKey(store: .appStore, id: "1")
        changes.transactionSaved(
            before: TransactionRecord(purchaseKey: key, fact: shared),
            after: TransactionRecord(purchaseKey: key, fact: revoked))
        let events = changes.events(entitlementsBefore: [:], entitlementsAfter: [:], balancesAfter: [:])
        #expect(events.map(\.type) == [.purchaseRevoked])
    }

    @Test func entitlementsThatStartOrStopGrantingAreEvents() {
        let catalog = Catalog([
            CatalogProduct(id: "monthly", store: .appStore, kind: .subscription, entitlements: ["pro"])
        ])
        let before = EntitlementView.current(
            of: [purchase(.active)], catalog: catalog, access: EnvironmentAccess(), at: now)
        let after = EntitlementView.current(
            of: [purchase(.billingRetry)], catalog: catalog, access: EnvironmentAccess(), at: now)
        var changes = ChangeSet()
        changes.purchaseSaved(before: purchase(.active), after: purchase(.billingRetry))
        let events = changes.events(
            entitlementsBefore: [alice: before], entitlementsAfter: [alice: after], balancesAfter: [:])
        #expect(events.map(\.type) == [.subscriptionBillingRetry, .entitlementRevoked])
        #expect(events.last?.details.entitlement == "pro")
        #expect(EventType.all.allSatisfy(\.isKnown) && !EventType("x.y").isKnown)
    }

    let catalog = Catalog([
        CatalogProduct(id: "monthly", store: .googlePlay, kind: .subscription, entitlements: ["pro"]),
        CatalogProduct(id: "addon", store: .googlePlay, kind: .subscription, entitlements: ["extra"]),
    ])

    /// The events of `changes` for alice, whose purchases are `current` after it.
    func events(_ changes: ChangeSet, current: [Purchase]) -> [EventDraft] {
        let access = EnvironmentAccess()
        return changes.events(
            entitlementsBefore: [
                alice: changes.entitlementsBefore(current, of: alice, catalog: catalog, access: access, at: now)
            ],
            entitlementsAfter: [alice: EntitlementView.current(of: current, catalog: catalog, access: access, at: now)],
            balancesAfter: [:])
    }

    /// An expiry the store reports after the clock ended the access (Google's API answers as of
    /// when it is asked): the purchase counts as its last news left it, granting, so the
    /// expiry revokes the entitlement it ends.
    @Test func aChangedPurchaseCountsAsItsLastNewsLeftIt() {
        var lastNews = purchase(.canceled, store: .googlePlay, expiresIn: -86_400, autoRenew: false)
        lastNews.observedAt = now.addingTimeInterval(-30 * 86_400)
        var expired = lastNews
        expired.state = .expired
        expired.observedAt = now
        var changes = ChangeSet()
        changes.purchaseSaved(before: lastNews, after: expired)
        let before = changes.entitlementsBefore([expired], of: alice, catalog: catalog, access: .init(), at: now)
        #expect(before.map(\.active) == [true])
        #expect(events(changes, current: [expired]).map(\.type) == [.subscriptionExpired, .entitlementRevoked])
    }

    /// A purchase the change did not touch counts as now on both sides: one whose access the clock
    /// ended meanwhile makes no event in another purchase's change (its own store word will).
    @Test func theClockAloneMakesNoEntitlementEvent() {
        var addon = purchase(.active, store: .googlePlay, product: "addon", expiresIn: -3_600)
        addon.key = PurchaseKey(store: .googlePlay, id: "2")
        addon.observedAt = now.addingTimeInterval(-30 * 86_400)
        var renewing = purchase(.active, store: .googlePlay)
        renewing.observedAt = now.addingTimeInterval(-7_200)
        var notRenewing = renewing
        notRenewing.state = .canceled
        notRenewing.autoRenew = false
        // Reported late: true two hours ago, before the addon's access ran out (an hour ago).
        notRenewing.observedAt = now.addingTimeInterval(-7_000)
        var changes = ChangeSet()
        changes.purchaseSaved(before: renewing, after: notRenewing)
        #expect(events(changes, current: [notRenewing, addon]).map(\.type) == [.subscriptionAutoRenewDisabled])
    }
}
