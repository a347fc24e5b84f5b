public import Foundation
public import GooglePlay
public import Logging
public import StoreCore
public import Storekeeper
public import StorekeeperStorage

/// Google Play purchases as the server needs them: their current state fetched from the Android
/// Publisher API as facts, and the acknowledgement (or consumption) Google waits for — without
/// which it refunds the purchase after three days.
public struct GooglePlayPurchases: Sendable {
    public let apps: GooglePlayApps
    public let catalog: Catalog
    public let storage: any Storage
    public let clock: any WallClock
    public let logger: Logger

    public init(apps: GooglePlayApps, catalog: Catalog, storage: any Storage, clock: any WallClock, logger: Logger) {
        self.apps = apps
        self.catalog = catalog
        self.storage = storage
        self.clock = clock
        self.logger = logger
    }

    /// The subscription `token`'s current state.
    public func subscriptionFact(packageName: String?, token: String, revoked: Bool = false) async throws
        -> PurchaseFact
    {
        let (app, client) = try apps.client(packageName: packageName)
        let package = app.configuration.packageName
        let purchase = try await Self.calling { try await client.subscription(packageName: package, token: token) }
        return try GooglePlayFacts.subscription(
            purchase, token: token, observedAt: clock.now(), revoked: revoked, catalog: catalog)
    }

    /// The one-time purchase `token`'s current state; without `productID`, it is looked up with
    /// `purchases.productsv2`.
    public func productFact(
        packageName: String?, productID: String?, token: String, voided: Bool = false, voidedQuantity: Int? = nil
    ) async throws -> PurchaseFact {
        let (app, client) = try apps.client(packageName: packageName)
        let package = app.configuration.packageName
        var productID = productID
        if productID == nil {
            let v2 = try await Self.calling { try await client.productV2(packageName: package, token: token) }
            productID = v2.productLineItem?.first?.productId
        }
        guard let productID else {
            throw ProcessingError(.malformedPayload, "the one-time purchase names no productId")
        }
        let purchase = try await Self.calling {
            try await client.product(packageName: package, productId: productID, token: token)
        }
        return try GooglePlayFacts.product(
            purchase, token: token, productID: productID, observedAt: clock.now(), voided: voided,
            voidedQuantity: voidedQuantity, catalog: catalog)
    }

    /// The fact for a submitted purchase: a subscription or a one-time product if the catalog says
    /// so; otherwise (no productID, or one the catalog doesn't know) the subscriptions API is asked
    /// first, then the products API (through `productsv2` when there is no productID).
    public func fact(packageName: String?, productID: String?, token: String) async throws -> PurchaseFact {
        switch productID.flatMap({ catalog.product($0, in: .googlePlay)?.kind }) {
        case .subscription?:
            return try await subscriptionFact(packageName: packageName, token: token)
        case .some:
            return try await productFact(packageName: packageName, productID: productID, token: token)
        case nil:
            do {
                return try await subscriptionFact(packageName: packageName, token: token)
            } catch let error as ProcessingError where error.reason == .purchaseNotFound {
                return try await productFact(packageName: packageName, productID: productID, token: token)
            }
        }
    }

    /// The tokens further back in the upgrade chain than `fact.replaces` (which recording the
    /// fact supersedes itself), found by following `linkedPurchaseToken` through the API while
    /// storage doesn't know them yet: a customer who upgraded twice before Storekeeper heard of
    /// the middle purchase must not keep the first one. At most 10 links; a link Google no longer
    /// answers for ends the walk.
    public func olderChain(of fact: PurchaseFact, packageName: String?) async throws -> [PurchaseKey] {
        guard fact.kind == .subscription, var next = fact.replaces else { return [] }
        var chain: [PurchaseKey] = []
        var seen: Set<PurchaseKey> = [fact.key]
        while chain.count < 10, seen.insert(next).inserted {
            let known = try await storage.transaction { [next] in try await $0.purchase(next) }
            // A purchase recorded from its own facts superseded its predecessor then.
            if let known, known.replaces != nil || known.expiresAt != nil { break }
            guard let older = try? await subscriptionFact(packageName: packageName, token: next.id).replaces else {
                break
            }
            chain.append(older)
            next = older
        }
        return chain
    }

    /// Acknowledges (or, for a consumable whose credits are posted, consumes) a purchase Google
    /// still waits for, then records that nothing is owed any more. Failures are logged and left
    /// for the acknowledgement sweeper; they never fail the caller.
    public func settle(_ purchase: Purchase, packageName: String? = nil) async {
        guard purchase.needsAcknowledgement, purchase.key.store == .googlePlay else { return }
        do {
            let (app, client) = try apps.client(packageName: packageName)
            let package = app.configuration.packageName
            let token = purchase.key.id
            switch purchase.kind {
            case .subscription:
                try await Self.calling {
                    try await client.acknowledgeSubscription(
                        packageName: package, subscriptionId: purchase.productID, token: token)
                }
            case .consumable:
                // Credits are in the ledger (or wait in the transaction record for an owner), so
                // consuming now loses nothing.
                try await Self.calling {
                    try await client.consumeProduct(packageName: package, productId: purchase.productID, token: token)
                }
            case .nonConsumable, .nonRenewingSubscription:
                try await Self.calling {
                    try await client.acknowledgeProduct(
                        packageName: package, productId: purchase.productID, token: token)
                }
            }
            try await storage.transaction { transaction in
                guard var stored = try await transaction.purchase(purchase.key), stored.needsAcknowledgement else {
                    return
                }
                stored.needsAcknowledgement = false
                try await transaction.savePurchase(stored)
            }
            logger.debug("acknowledged a Google Play purchase", metadata: ["purchase": "\(purchase.key)"])
        } catch {
            logger.warning(
                "could not acknowledge a Google Play purchase; the sweeper will retry",
                metadata: ["purchase": "\(purchase.key)", "error": "\(error)"])
        }
    }

    /// Settles every purchase still awaiting acknowledgement (at most `limit`); returns how many
    /// were tried.
    @discardableResult
    public func sweepUnacknowledged(limit: Int = 100) async throws -> Int {
        let pending = try await storage.transaction {
            try await $0.purchasesNeedingAcknowledgement(store: .googlePlay, limit: limit)
        }
        for purchase in pending { await settle(purchase) }
        return pending.count
    }

    /// Runs an API call, turning its failures into processing errors: a purchase Google doesn't
    /// know is not found; quota, outages and network failures are retryable.
    static func calling<Result>(_ call: () async throws -> Result) async throws -> Result {
        do {
            return try await call()
        } catch let error as AndroidPublisherError {
            switch error.reason {
            case .notFound, .gone, .invalidRequest:
                throw ProcessingError(.purchaseNotFound, "Google Play: \(error)")
            case .unauthorized, .forbidden, .authenticationFailed:
                throw ProcessingError(.storeUnavailable, "Google Play refused the service account: \(error)")
            default:
                throw ProcessingError(.storeUnavailable, "Google Play: \(error)")
            }
        }
    }
}
