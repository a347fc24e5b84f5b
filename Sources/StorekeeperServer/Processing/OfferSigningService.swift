public import AppStoreServer
public import Foundation
public import StoreCore
public import Storekeeper
public import StorekeeperStorage

/// What apps ask their server to sign for StoreKit (seeds 002 and 004): promotional offers (the
/// V1 signature, or the JWS), introductory offer eligibility (the server's decision, signed), and
/// Advanced Commerce in-app requests — with each App Store app's own key from the configuration,
/// never logged or returned. Who may have an offer is decided from the customer's purchases on
/// both stores (``OfferEligibility``).
public struct OfferSigningService: Sendable {
    /// One App Store app's signers; nil when its configuration has no key.
    struct Signers: Sendable {
        let request: AppStoreRequestSigner
        let promotionalV1: PromotionalOfferV1Signer
    }

    let storage: any Storage
    let apps: AppStoreApps
    let signers: [AppID: Signers]
    let catalog: Catalog
    let policies: Policies

    public init(
        storage: any Storage, apps: AppStoreApps, catalog: Catalog, policies: Policies, clock: any WallClock,
        nonces: RequestNonceGenerator = .system
    ) throws {
        var signers: [AppID: Signers] = [:]
        for app in apps.apps {
            let settings = app.configuration
            guard let keyID = settings.keyID, let issuerID = settings.issuerID, let path = settings.privateKeyPath
            else { continue }
            let key = try AppStoreSigningKey(contentsOfFile: path, keyId: keyID)
            signers[app.id] = Signers(
                request: try AppStoreRequestSigner(
                    key: key, issuerId: issuerID, bundleId: settings.bundleID, clock: clock, nonces: nonces),
                promotionalV1: try PromotionalOfferV1Signer(
                    key: key, bundleId: settings.bundleID, clock: clock, nonces: nonces))
        }
        self.storage = storage
        self.apps = apps
        self.signers = signers
        self.catalog = catalog
        self.policies = policies
    }

    /// The form of a promotional offer signature.
    public enum PromotionalFormat: String, Sendable, CaseIterable {
        /// `keyId`, `nonce`, `timestamp`, `signature` over the U+2063-joined message (SKPaymentDiscount,
        /// `Product.SubscriptionOffer.Signature`).
        case v1
        /// The compact JWS (`Product.PurchaseOption.promotionalOffer(_:compactJWS:)`).
        case jws
    }

    /// A signed promotional offer.
    public enum PromotionalOffer: Sendable {
        case v1(PromotionalOfferSignatureV1, applicationUsername: String)
        case jws(String)
    }

    /// Signs the promotional offer `offerID` of `productID` for the customer, if the policy lets
    /// them have it. V1 signs the customer's account token, lower-cased, as `applicationUsername`;
    /// the JWS names one of the customer's transactions of the app, when there is one.
    public func promotionalOffer(
        for id: CustomerID, productID: String, offerID: String, format: PromotionalFormat, bundleID: AppID?
    ) async throws -> PromotionalOffer {
        let (app, product) = try appAndSubscription(productID, bundleID: bundleID)
        guard product.promotionalOffers.contains(offerID) else {
            throw ServerError(
                .unknownOffer, "\(productID) has no promotional offer '\(offerID)' in the catalog (promotionalOffers)")
        }
        let signers = try self.signers(app)
        let (customer, purchases, transaction) = try await offerFacts(id, app: app)
        guard
            OfferEligibility.promotional(
                product, rule: policies.promotionalOffers, purchases: purchases, catalog: catalog)
        else {
            throw ServerError(
                .notEligible,
                "customer \(id) is not a current or lapsed subscriber of \(product.group ?? productID) (policies.promotionalOffers)"
            )
        }
        switch format {
        case .v1:
            let signature = try signing { () throws(RequestSigningError) in
                try signers.promotionalV1.sign(
                    productId: productID, offerId: offerID, appAccountToken: customer.appAccountToken)
            }
            return .v1(signature, applicationUsername: customer.appAccountToken.uuidString.lowercased())
        case .jws:
            return .jws(
                try signing { () throws(RequestSigningError) in
                    try signers.request.promotionalOfferSignature(
                        productId: productID, offerIdentifier: offerID, transactionId: transaction)
                })
        }
    }

    /// The server's decision on the customer's introductory offer for `productID`, signed.
    public func introductoryOfferEligibility(for id: CustomerID, productID: String, bundleID: AppID?)
        async throws -> (eligible: Bool, signature: String)
    {
        let (app, product) = try appAndSubscription(productID, bundleID: bundleID)
        let signers = try self.signers(app)
        let (_, purchases, transaction) = try await offerFacts(id, app: app)
        let eligible = OfferEligibility.introductory(
            product, acrossStores: policies.introductoryOffersAcrossStores, purchases: purchases, catalog: catalog)
        guard let transaction else {
            throw ServerError(
                .appTransactionRequired,
                "customer \(id) has no App Store transaction of \(app.rawValue) to sign the decision for")
        }
        let signature = try signing { () throws(RequestSigningError) in
            try signers.request.introductoryOfferEligibilitySignature(
                productId: productID, allowIntroductoryOffer: eligible, transactionId: transaction)
        }
        return (eligible, signature)
    }

    /// Signs an Advanced Commerce in-app request (its JSON object as the app built it).
    public func advancedCommerceRequest(_ request: Data, for id: CustomerID, bundleID: AppID?) async throws -> String {
        let app = try apps.app(named: bundleID).id
        let signers = try self.signers(app)
        // Signed for a known customer only; what the request buys is Apple's to check.
        guard try await storage.read({ try await $0.customer(id) }) != nil else {
            throw ServerError.customerNotFound(id)
        }
        return try signing { () throws(RequestSigningError) in
            try signers.request.advancedCommerceInAppSignature(requestJSON: request)
        }
    }

    // MARK: Parts

    func appAndSubscription(_ productID: String, bundleID: AppID?) throws -> (AppID, CatalogProduct) {
        let app = try apps.app(named: bundleID).id
        guard let product = catalog.product(productID, in: .appStore) else {
            throw ServerError(.unknownProduct, "no App Store product '\(productID)' in the catalog")
        }
        guard product.kind == .subscription else {
            throw ServerError(
                .unknownProduct, "\(productID) is a \(product.kind.rawValue); offers are for subscriptions")
        }
        return (app, product)
    }

    func signers(_ app: AppID) throws -> Signers {
        guard let signers = signers[app] else {
            let name = apps.apps.first { $0.id == app }?.name ?? app.rawValue
            throw ServerError(
                .notConfigured,
                "apps.\(name).appStore has no signing key: set keyId, issuerId and privateKeyPath (an In-App Purchase key)"
            )
        }
        return signers
    }

    /// What an offer's decision and signature need: the customer; the purchases offers are decided
    /// from (``OfferEligibility`` counts subscriptions only, so consumables are not read: a coin
    /// buyer may hold thousands); and the id of their most recently observed App Store purchase of
    /// `app`, of any kind (its original transaction id: a transaction of the customer, as Apple's
    /// `transactionId` claim asks).
    func offerFacts(_ id: CustomerID, app: AppID) async throws -> (
        customer: Customer, purchases: [Purchase], latestTransaction: String?
    ) {
        try await storage.read { transaction in
            guard let customer = try await transaction.customer(id) else { throw ServerError.customerNotFound(id) }
            let latest = try await transaction.latestPurchase(of: id, app: app, store: .appStore)
            return (customer, try await transaction.entitlementPurchases(of: id), latest?.id)
        }
    }

    func signing<Value>(_ body: () throws(RequestSigningError) -> Value) throws(ServerError) -> Value {
        do {
            return try body()
        } catch {
            throw ServerError(.malformedBody, "can't sign: \(error.description)")
        }
    }
}
