import Foundation
import Storekeeper
import Testing

@Suite struct PolicyAndViewTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let alice = CustomerID("alice")
    let bob = CustomerID("bob")

    func subscription(
        _ id: String, product: String = "monthly", state: SubscriptionState, expiresIn: TimeInterval,
        environment: PurchaseEnvironment = .sandbox, app: String? = "com.example.app"
    ) -> Purchase {
        Purchase(
            key: .appStore(id), customerID: alice, app: app.map { AppID($0) }, productID: product, kind: .subscription,
            environment: environment, state: state, expiresAt: now.addingTimeInterval(expiresIn), observedAt: now
        )
    }

    @Test func ownershipPolicies() {
        let active = subscription("1", state: .active, expiresIn: 3600)
        let expired = subscription("2", state: .expired, expiresIn: -3600)
        var unlinked = active
        unlinked.customerID = nil
        for policy in OwnershipPolicy.allCases {
            #expect(policy.decide(unlinked, presentedBy: bob, at: now) == .link)
            #expect(policy.decide(active, presentedBy: alice, at: now) == .alreadyOwned)
        }
        #expect(OwnershipPolicy.keep.decide(expired, presentedBy: bob, at: now) == .conflict(owner: alice))
        #expect(OwnershipPolicy.transfer.decide(active, presentedBy: bob, at: now) == .transfer(from: alice))
        #expect(OwnershipPolicy.transferIfNoActive.decide(active, presentedBy: bob, at: now) == .conflict(owner: alice))
        #expect(OwnershipPolicy.transferIfNoActive.decide(expired, presentedBy: bob, at: now) == .transfer(from: alice))
        #expect(OwnershipPolicy(rawValue: "transfer-if-no-active") == .transferIfNoActive)
    }

    @Test func consumableCreditsOwedAfterRefunds() {
        let coins = CatalogProduct(id: "coins100", store: .appStore, kind: .consumable, balance: "coins", credits: 100)
        var bought = TransactionFact(id: "t1", productID: "coins100", purchasedAt: now, quantity: 3, observedAt: now)
        #expect(ConsumableCredit.owed(for: bought, product: coins) == 300)
        bought.revokedAt = now
        bought.refundedFraction = 1
        #expect(ConsumableCredit.owed(for: bought, product: coins) == 0)
        bought.refundedFraction = 0.5
        #expect(ConsumableCredit.owed(for: bought, product: coins) == 150)
        bought.refundedFraction = 1.0 / 3.0
        #expect(ConsumableCredit.owed(for: bought, product: coins) == 200)
    }

    @Test func customerViewIsTheUnionOfWhatGrantsAccessNow() {
        let catalog = Catalog([
            CatalogProduct(id: "monthly", store: .appStore, kind: .subscription, entitlements: ["pro"], group: "g"),
            CatalogProduct(id: "yearly", store: .appStore, kind: .subscription, entitlements: ["pro", "extra"]),
            CatalogProduct(id: "lifetime", store: .appStore, kind: .nonConsumable, entitlements: ["themes"]),
            // A catalog that (wrongly) names an entitlement on a consumable still grants none.
            CatalogProduct(id: "coins", store: .appStore, kind: .consumable, entitlements: ["gold"], balance: "coins"),
        ])
        var lifetime = subscription("3", product: "lifetime", state: .active, expiresIn: 0)
        lifetime.kind = .nonConsumable
        lifetime.expiresAt = nil
        var coins = subscription("4", product: "coins", state: .active, expiresIn: 0)
        coins.kind = .consumable
        coins.expiresAt = nil
        let purchases = [
            subscription("1", state: .active, expiresIn: 3600),
            subscription("2", product: "yearly", state: .expired, expiresIn: -60),
            lifetime, coins,
        ]
        let customer = Customer(id: alice, appAccountToken: UUID(), createdAt: now)
        let view = CustomerView(
            customer: customer, purchases: purchases, balances: ["coins": 5], catalog: catalog, access: .sandbox,
            at: now)
        #expect(view.entitlements.map(\.name) == ["extra", "pro", "themes"])
        let byName = Dictionary(uniqueKeysWithValues: view.entitlements.map { ($0.name, $0) })
        #expect(byName["pro"]?.active == true)
        #expect(byName["pro"]?.purchaseID == "1")
        #expect(byName["pro"]?.expiresAt == now.addingTimeInterval(3600))
        #expect(byName["extra"]?.active == false)
        #expect(byName["themes"]?.active == true)
        #expect(byName["themes"]?.expiresAt == nil)
        #expect(view.subscriptions.count == 2)
        // The consumable is in the balances, not among the listed purchases.
        #expect(view.oneTimePurchases.map(\.purchaseID) == ["3"])
        // Access is decided against the time asked about: an hour later "pro" has lapsed.
        let later = CustomerView(
            customer: customer, purchases: purchases, balances: [:], catalog: catalog, access: .sandbox,
            at: now.addingTimeInterval(3600)
        )
        #expect(later.entitlements.first { $0.name == "pro" }?.active == false)
    }

    /// DESIGN.md, "Environments": a sandbox purchase grants access in a production deployment only
    /// for an app whose configuration says so; a production purchase always does.
    @Test func sandboxPurchasesGrantInProductionOnlyWhereTheAppSaysSo() {
        let catalog = Catalog([
            CatalogProduct(id: "monthly", store: .appStore, kind: .subscription, entitlements: ["pro"])
        ])
        let customer = Customer(id: alice, appAccountToken: UUID(), createdAt: now)
        let sandbox = subscription("1", state: .active, expiresIn: 3600)
        let legacy = subscription("2", state: .active, expiresIn: 3600, app: nil)
        let production = subscription("3", state: .active, expiresIn: 3600, environment: .production)
        let app = StoreApp(.appStore, AppID("com.example.app"))
        let strict = EnvironmentAccess(deployment: .production)
        let lenient = EnvironmentAccess(deployment: .production, sandboxGrantingApps: [app])
        #expect(!strict.admits(sandbox) && !strict.admits(legacy) && strict.admits(production))
        #expect(lenient.admits(sandbox) && !lenient.admits(legacy) && lenient.admits(production))
        #expect(
            !EnvironmentAccess(deployment: .production, sandboxGrantingApps: [StoreApp(.googlePlay, app.id)]).admits(
                sandbox))
        #expect(EnvironmentAccess.sandbox.admits(sandbox) && EnvironmentAccess.sandbox.admits(legacy))

        let refused = CustomerView(
            customer: customer, purchases: [sandbox], balances: [:], catalog: catalog, access: strict, at: now)
        #expect(refused.entitlements.isEmpty)
        #expect(refused.subscriptions.map(\.active) == [false])
        #expect(refused.subscriptions.map(\.environmentGrantsAccess) == [false])
        let granted = CustomerView(
            customer: customer, purchases: [sandbox], balances: [:], catalog: catalog, access: lenient, at: now)
        #expect(granted.entitlements.map(\.name) == ["pro"])
        #expect(granted.subscriptions.map(\.active) == [true])
    }
}
