import Foundation
import GooglePlay

/// A Google-shaped API error: HTTP status, canonical status, legacy reason and message.
struct PlayAPIFailure: Error, Sendable {
    var status: Int
    var googleStatus: String
    var reason: String
    var message: String

    var body: GoogleAPIErrorBody {
        GoogleAPIErrorBody(
            error: GoogleAPIError(
                code: status, message: message, status: googleStatus,
                errors: [GoogleAPIErrorItem(domain: "androidpublisher", reason: reason, message: message)]))
    }

    static let tokenNotFound = PlayAPIFailure(
        status: 404, googleStatus: "NOT_FOUND", reason: "purchaseTokenNotFound",
        message: "The purchase token was not found.")
    static let packageMismatch = PlayAPIFailure(
        status: 400, googleStatus: "INVALID_ARGUMENT", reason: "purchaseTokenDoesNotMatchPackage",
        message: "The purchase token does not match the package name.")
    static let expiredTooLong = PlayAPIFailure(
        status: 410, googleStatus: "FAILED_PRECONDITION", reason: "subscriptionPurchaseNoLongerAvailable",
        message: "The subscription purchase is no longer available for query because it has been expired for too long.")
    static let orderNotFound = PlayAPIFailure(
        status: 404, googleStatus: "NOT_FOUND", reason: "orderNotFound", message: "The order was not found.")

    static func applicationNotFound(_ packageName: String) -> PlayAPIFailure {
        PlayAPIFailure(
            status: 404, googleStatus: "NOT_FOUND", reason: "applicationNotFound",
            message: "No application was found for the given package name.")
    }

    static func invalid(_ reason: String, _ message: String) -> PlayAPIFailure {
        PlayAPIFailure(status: 400, googleStatus: "INVALID_ARGUMENT", reason: reason, message: message)
    }
}

/// The Android Publisher API operations, on the simulation's state at the simulated now.
extension GooglePlaySimulation {
    /// Runs `body` after firing due events, turning a missing app into Google's 404.
    private func api<Result: Sendable>(
        _ packageName: String, _ body: (inout State, Date) throws(PlayAPIFailure) -> Result
    ) throws(PlayAPIFailure) -> Result {
        let now = clock.now()
        return try state.withLock { (state) throws(PlayAPIFailure) -> Result in
            state.processDue(now: now)
            guard state.apps[packageName] != nil else { throw .applicationNotFound(packageName) }
            return try body(&state, now)
        }
    }

    func apiSubscriptionV2(packageName: String, token: String) throws(PlayAPIFailure) -> SubscriptionPurchaseV2 {
        let retention = configuration.expiredPurchaseRetention
        return try api(packageName) { (state, now) throws(PlayAPIFailure) in
            let record = try state.subscription(token, packageName: packageName)
            if let ended = record.endedAt, now.timeIntervalSince(ended) > retention { throw .expiredTooLong }
            return PlayAnswers.subscriptionV2(record, app: state.apps[packageName], now: now)
        }
    }

    func apiAcknowledgeSubscription(packageName: String, subscriptionId: String, token: String, payload: String?)
        throws(PlayAPIFailure)
    {
        try api(packageName) { (state, _) throws(PlayAPIFailure) in
            var record = try state.subscription(token, packageName: packageName)
            guard record.productId == subscriptionId else {
                throw .invalid(
                    "purchaseTokenDoesNotMatchSubscriptionId", "The purchase token does not match the subscription ID.")
            }
            guard record.endedAt == nil, record.startTime != nil else {
                throw .invalid(
                    "subscriptionNotAcknowledgeable",
                    "The subscription purchase is not in a state that can be acknowledged.")
            }
            record.acknowledged = true
            state.subscriptions[token] = record
        }
    }

    func apiCancelSubscription(packageName: String, token: String, body: CancelSubscriptionPurchaseRequest?)
        throws(PlayAPIFailure)
    {
        try api(packageName) { (state, now) throws(PlayAPIFailure) in
            _ = try state.subscription(token, packageName: packageName)
            let type = body?.cancellationContext?.cancellationType
            let cancellation: PlayCancellation = type == .userRequestedStopRenewals ? .user(at: now) : .developer
            do throws(GooglePlaySimulationError) {
                try state.cancel(token, by: cancellation, at: now)
            } catch {
                throw .invalid("subscriptionNotCancelable", error.description)
            }
        }
    }

    func apiRevokeSubscription(packageName: String, token: String, body: RevokeSubscriptionPurchaseRequest?)
        throws(PlayAPIFailure)
    {
        try api(packageName) { (state, now) throws(PlayAPIFailure) in
            var record = try state.subscription(token, packageName: packageName)
            guard let context = body?.revocationContext,
                context.fullRefund != nil || context.proratedRefund != nil || context.itemBasedRefund != nil
            else {
                throw .invalid("revocationContextRequired", "A revocation context is required.")
            }
            if let item = context.itemBasedRefund, item.productId != record.productId {
                throw .invalid("invalidProductId", "The product id is not part of this subscription.")
            }
            guard record.endedAt == nil else {
                throw .invalid("subscriptionNotRevocable", "The subscription has already ended.")
            }
            record.phase = .expired(at: now)
            record.autoRenew = false
            record.revokedAt = now
            record.cancellation = .developer
            record.lastEventDate = now
            state.subscriptions[token] = record
            state.emitSubscription(.revoked, record, at: now)
            if let orderId = record.latestOrderId {
                state.void(
                    orderId: orderId, purchaseToken: token, packageName: packageName,
                    purchaseTime: state.orders[orderId]?.createTime ?? record.purchaseTime, isSubscription: true,
                    source: .developer, reason: .other, at: now)
            }
        }
    }

    func apiDeferSubscription(packageName: String, token: String, body: DeferSubscriptionPurchaseRequest?)
        throws(PlayAPIFailure) -> DeferSubscriptionPurchaseResponse
    {
        try api(packageName) { (state, now) throws(PlayAPIFailure) in
            var record = try state.subscription(token, packageName: packageName)
            guard let text = body?.deferralContext?.deferDuration, let seconds = Self.duration(text), seconds > 0
            else {
                throw .invalid("invalidDeferDuration", "deferralContext.deferDuration must be a positive duration.")
            }
            guard record.phase == .active else {
                throw .invalid("subscriptionNotDeferrable", "Only an active subscription can be deferred.")
            }
            if let etag = body?.deferralContext?.etag, etag != PlayAnswers.etag(record) {
                throw PlayAPIFailure(
                    status: 409, googleStatus: "ABORTED", reason: "etagMismatch",
                    message: "The etag does not match the subscription's current state.")
            }
            let newExpiry = record.expiryTime.addingTimeInterval(seconds)
            if body?.deferralContext?.validateOnly != true {
                record.expiryTime = newExpiry
                record.lastEventDate = now
                state.subscriptions[token] = record
                state.emitSubscription(.deferred, record, at: now)
            }
            return DeferSubscriptionPurchaseResponse(itemExpiryTimeDetails: [
                ItemExpiryTimeDetails(productId: record.productId, expiryTime: PlayAnswers.time(newExpiry))
            ])
        }
    }

    /// `purchases.subscriptions.cancel` (v1): cancels as the developer; the subscription stays valid
    /// until its expiry.
    func apiCancelSubscriptionV1(packageName: String, subscriptionId: String, token: String) throws(PlayAPIFailure) {
        try api(packageName) { (state, now) throws(PlayAPIFailure) in
            let record = try state.subscription(token, packageName: packageName)
            guard record.productId == subscriptionId else {
                throw .invalid(
                    "purchaseTokenDoesNotMatchSubscriptionId", "The purchase token does not match the subscription ID.")
            }
            do throws(GooglePlaySimulationError) {
                try state.cancel(token, by: .developer, at: now)
            } catch {
                throw .invalid("subscriptionNotCancelable", error.description)
            }
        }
    }

    /// `orders.refund`: refunds the order as the developer (voided purchase, source developer); with
    /// `revoke` the purchase also ends now.
    func apiRefundOrder(packageName: String, orderId: String, revoke: Bool) throws(PlayAPIFailure) {
        try api(packageName) { (state, _) throws(PlayAPIFailure) in
            guard let order = state.orders[orderId], order.packageName == packageName else { throw .orderNotFound }
        }
        do throws(GooglePlaySimulationError) {
            try refund(orderId: orderId, revoke: revoke, reason: .other, source: .developer)
        } catch {
            if case .unknownOrder = error { throw .orderNotFound }
            throw .invalid("orderNotRefundable", error.description)
        }
    }

    func apiProductV1(packageName: String, productId: String, token: String) throws(PlayAPIFailure)
        -> ProductPurchase
    {
        try api(packageName) { (state, _) throws(PlayAPIFailure) in
            let record = try state.product(token, packageName: packageName, productId: productId)
            return PlayAnswers.productV1(record, app: state.apps[packageName])
        }
    }

    func apiProductV2(packageName: String, token: String) throws(PlayAPIFailure) -> ProductPurchaseV2 {
        try api(packageName) { (state, _) throws(PlayAPIFailure) in
            let record = try state.product(token, packageName: packageName, productId: nil)
            return PlayAnswers.productV2(record, app: state.apps[packageName])
        }
    }

    func apiAcknowledgeProduct(packageName: String, productId: String, token: String, payload: String?)
        throws(PlayAPIFailure)
    {
        try api(packageName) { (state, _) throws(PlayAPIFailure) in
            var record = try state.product(token, packageName: packageName, productId: productId)
            guard !record.pending, !record.canceled else {
                throw .invalid("productNotOwnedByUser", "The product purchase is not owned by the user.")
            }
            record.acknowledged = true
            if let payload { record.developerPayload = payload }
            state.productPurchases[token] = record
        }
    }

    func apiConsumeProduct(packageName: String, productId: String, token: String) throws(PlayAPIFailure) {
        try api(packageName) { (state, _) throws(PlayAPIFailure) in
            var record = try state.product(token, packageName: packageName, productId: productId)
            guard !record.pending, !record.canceled, !record.consumed else {
                throw .invalid("productNotOwnedByUser", "The product purchase is not owned by the user.")
            }
            record.consumed = true
            record.acknowledged = true
            state.productPurchases[token] = record
        }
    }

    func apiOrder(packageName: String, orderId: String) throws(PlayAPIFailure) -> Order {
        try api(packageName) { (state, _) throws(PlayAPIFailure) in
            guard let order = state.orders[orderId], order.packageName == packageName else { throw .orderNotFound }
            let pending = state.productPurchases[order.purchaseToken]?.pending ?? false
            return PlayAnswers.order(order, app: state.apps[packageName], pending: pending)
        }
    }

    /// A Google `Duration` in JSON (`"86400s"`, `"1.5s"`), in seconds.
    static func duration(_ text: String) -> TimeInterval? {
        guard text.hasSuffix("s"), let value = Double(text.dropLast()), value.isFinite else { return nil }
        return value
    }
}

extension GooglePlaySimulation.State {
    func subscription(_ token: String, packageName: String) throws(PlayAPIFailure) -> PlaySubscriptionRecord {
        guard let record = subscriptions[token] else { throw .tokenNotFound }
        guard record.packageName == packageName else { throw .packageMismatch }
        return record
    }

    func product(_ token: String, packageName: String, productId: String?) throws(PlayAPIFailure)
        -> PlayProductRecord
    {
        guard let record = productPurchases[token] else { throw .tokenNotFound }
        guard record.packageName == packageName else { throw .packageMismatch }
        if let productId, productId != record.productId {
            throw .invalid("purchaseTokenDoesNotMatchProductId", "The purchase token does not match the product ID.")
        }
        return record
    }
}
