public import Foundation
import GooglePlay
public import Logging
public import StoreCore
public import Storekeeper
public import StorekeeperStorage

/// Google Play behind the server: Pub/Sub pushes authenticated for the app they name, each
/// purchase's current state fetched from the Android Publisher API with its own app's client (a
/// notification only says that something changed), upgrade chains followed through
/// `linkedPurchaseToken`, acknowledgements and consumptions Google waits for (or it refunds after
/// three days), and the voided purchases list swept per app.
public struct GooglePlayAdapter: StoreAdapter, TranslatesStoreErrors {
    static let storeName = "Google Play"
    public let apps: GooglePlayApps
    public let catalog: Catalog
    public let storage: any Storage
    public let clock: any WallClock
    public let logger: Logger

    public var store: Store { .googlePlay }

    public init(apps: GooglePlayApps, catalog: Catalog, storage: any Storage, clock: any WallClock, logger: Logger) {
        self.apps = apps
        self.catalog = catalog
        self.storage = storage
        self.clock = clock
        self.logger = logger
    }

    // MARK: Notifications

    /// Authenticates a Pub/Sub push (its OIDC bearer token, against the app the notification
    /// names) and returns its `messageId`. Nothing verified needs keeping: processing asks Google's
    /// API for the purchase anyway.
    public func accept(_ delivery: WebhookDelivery) async throws -> AcceptedDelivery {
        let (envelope, notification) = try Self.decodePush(delivery.body)
        let named = AppID(notification.packageName ?? "")
        if !apps.apps.contains(where: { $0.id == named }) {
            // Only a push some configured app's authenticator accepts learns that the package is
            // not configured; anyone else gets the 401 a known package gives a bad token, so an
            // unauthenticated caller cannot find out which package names are.
            try await authenticateForAnyApp(delivery.authorization)
        }
        let app = try apps.app(named)
        guard let authenticator = app.pushAuthenticator else {
            throw ServerError(
                .notConfigured, "app \(app.name) has no push audience and push service account to check pushes with")
        }
        _ = try await translating { try await authenticator.authenticate(authorizationHeader: delivery.authorization) }
        guard let messageID = envelope.message.messageId, !messageID.isEmpty else {
            throw ServerError(.malformedPayload, "the push message has no messageId")
        }
        return AcceptedDelivery(dedupeKey: messageID)
    }

    /// Authenticates a push against every configured app's audience and account, failing as the
    /// last one did when none accepts it.
    private func authenticateForAnyApp(_ authorization: String?) async throws {
        var failure: (any Error)?
        for authenticator in apps.apps.compactMap(\.pushAuthenticator) {
            do {
                _ = try await translating { try await authenticator.authenticate(authorizationHeader: authorization) }
                return
            } catch {
                failure = error
            }
        }
        throw failure ?? ServerError(.invalidPushToken, "no configured Google Play app checks pushes")
    }

    static func decodePush(_ body: Data) throws(ServerError) -> (PubSubPushEnvelope, DeveloperNotification) {
        guard let envelope = try? JSONDecoder().decode(PubSubPushEnvelope.self, from: body) else {
            throw ServerError(.malformedPayload, "the body is not a Pub/Sub push ({\"message\": {…}, …})")
        }
        let notification: DeveloperNotification
        do {
            notification = try envelope.developerNotification()
        } catch {
            throw ServerError(.malformedPayload, "message.data is not a base64 developer notification: \(error)")
        }
        guard notification.packageName?.isEmpty == false else {
            throw ServerError(.malformedPayload, "the developer notification has no packageName")
        }
        return (envelope, notification)
    }

    /// A push only names a purchase: what it says is asked of Google's API.
    public func interpretsFromStoredNotification(_ notification: InboxNotification) -> Bool { false }

    /// A stored push: the purchase it names, as Google answers for it now. A purchase Google no
    /// longer answers for (404/410) stays as stored; access is judged by its expiry anyway.
    public func interpret(_ item: InboxNotification) async throws -> NotificationChange {
        let (envelope, notification) = try Self.decodePush(item.body)
        let app = AppID(notification.packageName ?? "")
        let cause = ChangeCause(
            source: .notification, event: notification.eventName, reference: envelope.message.messageId)
        var fact: PurchaseFact?
        do {
            if let subscription = notification.subscriptionNotification, let token = subscription.purchaseToken {
                let type = subscription.notificationType
                // These say an order was just placed, at the notification's time.
                let placesAnOrder = type == .renewed || type == .recovered || type == .purchased
                fact = try await subscriptionFact(
                    app, token: token, revoked: type == .revoked,
                    orderNoticedAt: placesAnOrder ? notification.eventDate : nil)
            } else if let product = notification.oneTimeProductNotification, let token = product.purchaseToken {
                fact = try await productFact(app, productID: product.sku, token: token)
            } else if let voided = notification.voidedPurchaseNotification, let token = voided.purchaseToken {
                fact = try await voidedFact(voided, app: app, token: token, at: notification.eventDate)
            }
        } catch let error as ServerError where error.code == .purchaseNotFound {
            logger.notice(
                "Google Play no longer knows the purchase of a notification",
                metadata: ["messageId": "\(envelope.message.messageId ?? "")", "error": "\(error)"])
        }
        guard let fact else { return NotificationChange([], cause: cause) }
        return NotificationChange([.purchase(fact, supersedes: try await olderChain(of: fact))], cause: cause)
    }

    /// A voided purchase: a subscription's voided order is revoked and the subscription keeps
    /// the state Google gives it (``GooglePlayFacts/voidingOrder(_:of:known:at:)``); a one-time
    /// purchase is revoked, or for a quantity-based partial refund loses the voided units' share
    /// (found in the voided list).
    func voidedFact(
        _ voided: VoidedPurchaseNotification, app: AppID, token: String, at eventDate: Date?
    ) async throws -> PurchaseFact {
        if voided.productType == .subscription {
            let fact = try await subscriptionFact(app, token: token)
            guard let orderID = voided.orderId else {
                throw ServerError(.malformedPayload, "the voided subscription notification names no orderId")
            }
            return try await voidingOrder(orderID, of: fact, at: eventDate ?? clock.now())
        }
        let stored = try await storage.transaction { try await $0.purchase(.googlePlay(token)) }
        var voidedQuantity: Int?
        if voided.refundType == .quantityBasedPartialRefund, let orderID = voided.orderId {
            voidedQuantity = try await self.voidedQuantity(app, orderID: orderID, around: eventDate ?? clock.now())
            // The list may lag the notification: retry later rather than take a partial refund for a full one.
            guard voidedQuantity != nil else {
                throw ServerError(.storeUnavailable, "the voided purchases list does not show order \(orderID) yet")
            }
        }
        return try await productFact(
            app, productID: stored?.productID, token: token, voided: true, voidedQuantity: voidedQuantity)
    }

    /// How many units of `orderID` Google voided, from the voided purchases list around the
    /// notification's time (nil if the list doesn't show it).
    func voidedQuantity(_ app: AppID, orderID: String, around date: Date) async throws -> Int? {
        let client = try apps.client(app)
        let query = VoidedPurchasesQuery(
            startTime: date.addingTimeInterval(-3600), type: .oneTimeProducts, includeQuantityBasedPartialRefund: true)
        return try await translating {
            var total: Int?
            for try await entry in client.voidedPurchases(packageName: app.rawValue, query)
            where entry.orderId == orderID {
                total = (total ?? 0) + (entry.voidedQuantity ?? 0)
            }
            return total
        }
    }

    // MARK: Facts from the API

    /// The subscription `token`'s current state; `orderNoticedAt`: when the notification read says
    /// an order was just placed.
    func subscriptionFact(
        _ app: AppID, token: String, revoked: Bool = false, orderNoticedAt: Date? = nil
    ) async throws -> PurchaseFact {
        let client = try apps.client(app)
        let purchase = try await translating { try await client.subscription(packageName: app.rawValue, token: token) }
        var known = try await knownSubscription(token, latestOrder: GooglePlayFacts.latestOrderID(of: purchase))
        known.orderNoticedAt = orderNoticedAt
        return try GooglePlayFacts.subscription(
            purchase, app: app, token: token, observedAt: clock.now(), revoked: revoked, known: known,
            catalog: catalog)
    }

    /// What storage holds of the subscription `token` (``GooglePlayFacts/KnownSubscription``),
    /// read without the lock processing takes on a purchase.
    func knownSubscription(_ token: String, latestOrder orderID: String?) async throws
        -> GooglePlayFacts.KnownSubscription
    {
        let key = PurchaseKey.googlePlay(token)
        return try await storage.read { transaction in
            guard let stored = try await transaction.purchases(storeID: token).first(where: { $0.key == key }) else {
                return GooglePlayFacts.KnownSubscription()
            }
            var order: TransactionRecord?
            if let orderID { order = try await transaction.transaction(store: .googlePlay, id: orderID) }
            return GooglePlayFacts.KnownSubscription(latestOrder: order?.fact, periodEnd: stored.expiresAt)
        }
    }

    /// The one-time purchase `token`'s current state; without `productID`, it is looked up with
    /// `purchases.productsv2`.
    func productFact(
        _ app: AppID, productID: String?, token: String, voided: Bool = false, voidedQuantity: Int? = nil
    ) async throws -> PurchaseFact {
        let client = try apps.client(app)
        var productID = productID
        if productID == nil {
            let v2 = try await translating { try await client.productV2(packageName: app.rawValue, token: token) }
            productID = v2.productLineItem?.first?.productId
        }
        guard let productID else {
            throw ServerError(.malformedPayload, "the one-time purchase names no productId")
        }
        let purchase = try await translating {
            try await client.product(packageName: app.rawValue, productId: productID, token: token)
        }
        return try GooglePlayFacts.product(
            purchase, app: app, token: token, productID: productID, observedAt: clock.now(), voided: voided,
            voidedQuantity: voidedQuantity, catalog: catalog)
    }

    /// `fact` with the order `orderID` voided at `date` (its purchase date read from storage).
    func voidingOrder(_ orderID: String, of fact: PurchaseFact, at date: Date) async throws -> PurchaseFact {
        let known = try await storage.transaction { try await $0.transaction(store: .googlePlay, id: orderID) }
        return GooglePlayFacts.voidingOrder(orderID, of: fact, known: known?.fact, at: date)
    }

    /// The tokens further back in the upgrade chain than `fact.replaces` (which recording the
    /// fact supersedes itself), found by following `linkedPurchaseToken` through the API while
    /// storage doesn't know them yet: a customer who upgraded twice before Storekeeper heard of
    /// the middle purchase must not keep the first one. At most 10 links; a link Google no longer
    /// answers for ends the walk.
    func olderChain(of fact: PurchaseFact) async throws -> [PurchaseKey] {
        guard fact.kind == .subscription, var next = fact.replaces else { return [] }
        var chain: [PurchaseKey] = []
        var seen: Set<PurchaseKey> = [fact.key]
        while chain.count < 10, seen.insert(next).inserted {
            let known = try await storage.transaction { [next] in try await $0.purchase(next) }
            // A purchase recorded from its own facts superseded its predecessor then.
            if let known, known.replaces != nil || known.expiresAt != nil { break }
            guard let older = try? await subscriptionFact(fact.app, token: next.id).replaces else { break }
            chain.append(older)
            next = older
        }
        return chain
    }

    // MARK: Submissions

    /// `POST /v1/customers/{id}/purchases/google-play`: `purchaseToken`, and `productId` for a
    /// one-time product (else looked up); `packageName` names the app when several are configured.
    struct Submission: Decodable {
        var purchaseToken: String?
        var productId: String?
        var packageName: String?
    }

    /// A subscription or a one-time product if the catalog says so; otherwise (no productID, or
    /// one the catalog doesn't know) the subscriptions API is asked first, then the products API.
    public func interpretSubmission(_ body: Data) async throws -> [PurchaseObservation] {
        let submission = try decodeJSONBody(Submission.self, body)
        guard let token = submission.purchaseToken, !token.isEmpty else {
            throw ServerError(.malformedSubmission, "send purchaseToken (and productId for one-time products)")
        }
        let app = try apps.app(named: submission.packageName.map { AppID($0) }).id
        let productID = submission.productId
        let fact: PurchaseFact
        switch productID.flatMap({ catalog.product($0, in: .googlePlay)?.kind }) {
        case .subscription?:
            fact = try await subscriptionFact(app, token: token)
        case .some:
            fact = try await productFact(app, productID: productID, token: token)
        case nil:
            do {
                fact = try await subscriptionFact(app, token: token)
            } catch let error as ServerError where error.code == .purchaseNotFound {
                fact = try await productFact(app, productID: productID, token: token)
            }
        }
        return [.purchase(fact, supersedes: try await olderChain(of: fact))]
    }

    // MARK: The purchase's own app

    public func currentFact(of purchase: Purchase) async throws -> PurchaseFact? {
        let app = try purchase.requireApp()
        switch purchase.kind {
        case .subscription: return try await subscriptionFact(app, token: purchase.key.id)
        default: return try await productFact(app, productID: purchase.productID, token: purchase.key.id)
        }
    }

    /// Acknowledges (or, for a consumable whose credits are posted, consumes) a purchase Google
    /// still waits for, with its own app's client.
    public func settle(_ purchase: Purchase, accountToken: UUID?) async throws -> PurchaseSettlement? {
        guard purchase.needsAcknowledgement else { return nil }
        let app = try purchase.requireApp()
        let client = try apps.client(app)
        let package = app.rawValue
        let token = purchase.key.id
        try await translating {
            switch purchase.kind {
            case .subscription:
                try await client.acknowledgeSubscription(
                    packageName: package, subscriptionId: purchase.productID, token: token)
            case .consumable:
                // Credits are in the ledger (or wait in the transaction record for an owner), so
                // consuming now loses nothing.
                try await client.consumeProduct(packageName: package, productId: purchase.productID, token: token)
            case .nonConsumable, .nonRenewingSubscription:
                try await client.acknowledgeProduct(packageName: package, productId: purchase.productID, token: token)
            }
        }
        return .acknowledged
    }

    // MARK: Refund requests

    /// Google Play sends no consumption requests this server answers.
    public func answer(_ request: RefundRequest, with answer: ConsumptionAnswer) async throws {
        throw ServerError(.notConfigured, "Google Play refund requests are not answered by this server")
    }

    // MARK: Catch-up

    /// Applies the voids Google lists since the cursor (at first, `voidedLookback` back; Google
    /// keeps 30 days) to the purchases Storekeeper knows and has not seen revoked, per app.
    /// Quantity-based partial refunds of one-time products come from a second list, as Google
    /// lists them only there.
    public func catchUp(_ context: CatchUpContext, _ report: inout CatchUpReport) async throws {
        let now = clock.now()
        for app in apps.apps {
            guard let client = app.client else { continue }
            let cursor = CatchUpCursor.voidedPurchases(app.id)
            let start = try await context.cursors.date(
                cursor, default: now - context.settings.voidedLookback, oldest: now - 29 * 86_400)
            var voided: [String: [VoidedPurchase]] = [:]
            for query in [
                VoidedPurchasesQuery(startTime: start, endTime: now, type: .productsAndSubscriptions),
                VoidedPurchasesQuery(
                    startTime: start, endTime: now, type: .oneTimeProducts, includeQuantityBasedPartialRefund: true),
            ] {
                let entries = try await translating {
                    var entries: [VoidedPurchase] = []
                    for try await entry in client.voidedPurchases(packageName: app.id.rawValue, query) {
                        entries.append(entry)
                    }
                    return entries
                }
                for entry in entries {
                    guard let token = entry.purchaseToken,
                        !(voided[token]?.contains {
                            $0.orderId == entry.orderId && $0.voidedQuantity == entry.voidedQuantity
                        } ?? false)
                    else { continue }
                    voided[token, default: []].append(entry)
                }
            }
            try await context.step(
                after: cursor, from: start, movingTo: max(start, now - context.settings.overlap), &report
            ) {
                report in
                for (token, entries) in voided.sorted(by: { $0.key < $1.key }) {
                    let applied = try await context.eachItem(
                        "voided purchase \(entries.first?.orderId ?? "")", &report
                    ) {
                        try await applyVoid(app.id, token: token, entries: entries, context)
                    }
                    report.count(.voided, applied == true ? 1 : 0)
                }
            }
        }
    }

    /// Records the void of a known purchase; returns whether it was applied (unknown and already
    /// revoked purchases are left alone).
    func applyVoid(_ app: AppID, token: String, entries: [VoidedPurchase], _ context: CatchUpContext) async throws
        -> Bool
    {
        guard let stored = try await context.purchase(.googlePlay(token)), stored.state != .revoked else {
            return false
        }
        var fact: PurchaseFact
        if stored.kind == .subscription {
            // A void of one order leaves the subscription as it is: skip orders already revoked,
            // or every pass over Google's 30-day list would ask for the subscription again.
            let revoked = try await storage.transaction { transaction in
                try await transaction.transactions(of: stored.key).filter { $0.fact.revokedAt != nil }.map(\.fact.id)
            }
            guard entries.contains(where: { $0.orderId.map { !revoked.contains($0) } ?? false }) else { return false }
            fact = try await subscriptionFact(app, token: token)
            for entry in entries {
                guard let orderID = entry.orderId else { continue }
                fact = try await voidingOrder(orderID, of: fact, at: entry.voidedDate ?? clock.now())
            }
        } else {
            // A partial refund lists the units it voided; a full void lists none (or all of them).
            let units = entries.compactMap(\.voidedQuantity).reduce(0, +)
            let partial = units > 0 && units < stored.quantity ? units : nil
            fact = try await productFact(
                app, productID: stored.productID, token: token, voided: true, voidedQuantity: partial)
        }
        let cause = ChangeCause(source: .catchUp, event: "voided-purchase", reference: entries.first?.orderId)
        return try await context.record(fact, cause: cause)
    }

    // MARK: Errors

    /// Google's client and push authenticator errors: a purchase Google doesn't know is not
    /// found; quota, outages and network failures are retryable.
    static func translateStoreError(_ error: any Error) -> ServerError? {
        switch error {
        case let error as AndroidPublisherError:
            switch error.reason {
            case .notFound, .gone, .invalidRequest:
                return ServerError(.purchaseNotFound, "Google Play does not know it: \(error)", underlying: error)
            case .unauthorized, .forbidden, .authenticationFailed:
                return ServerError(
                    error.isRetryable ? .storeUnavailable : .storeRefused,
                    "Google Play refused the service account: \(error)", underlying: error)
            default:
                return ServerError(
                    error.isRetryable ? .storeUnavailable : .storeRefused, "Google Play: \(error)", underlying: error)
            }
        case let error as PushAuthenticationError:
            if error.reason == .jwksUnavailable {
                // Google's keys couldn't be fetched: not the pusher's fault, and a 5xx makes Pub/Sub retry.
                return ServerError(.pushKeysUnavailable, error.detail, underlying: error)
            }
            return ServerError(.invalidPushToken, "\(error.reason.rawValue): \(error.detail)", underlying: error)
        default:
            return nil
        }
    }
}
