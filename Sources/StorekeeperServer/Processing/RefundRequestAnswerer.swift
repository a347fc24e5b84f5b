import Foundation
public import Logging
public import StoreCore
public import Storekeeper
public import StorekeeperStorage

/// Answers stored refund consumption requests (the `refund_requests` outbox): each once, computed
/// from what the server knows when it is sent (``ConsumptionFacts``), retried with backoff while
/// the store is unavailable, and given up once the store's window has passed. A store's refusal
/// (4xx) is final and kept with its error code. Runs as a leased background job, so with several
/// instances one sends at a time; a restart loses nothing, as the row stays pending until settled.
public struct RefundRequestAnswerer: Sendable {
    public let storage: any Storage
    public let stores: StoreAdapters
    public let catalog: Catalog
    public let access: EnvironmentAccess
    /// Each App Store app's policy (an app without one answers by the default policy).
    public let policies: [AppID: RefundPolicy]
    public let settings: RefundAnswerSettings
    public let clock: any WallClock
    public let logger: Logger
    /// Writes the `refund_request.settled` event with each settled request, in its transaction.
    public let events: EventWriter
    /// Told of every request settled (for metrics).
    let onSettled: @Sendable (RefundRequest) -> Void

    public init(
        storage: any Storage, stores: StoreAdapters, catalog: Catalog, access: EnvironmentAccess,
        policies: [AppID: RefundPolicy], settings: RefundAnswerSettings, events: EventWriter, clock: any WallClock,
        logger: Logger, onSettled: @escaping @Sendable (RefundRequest) -> Void = { _ in }
    ) {
        self.events = events
        self.storage = storage
        self.stores = stores
        self.catalog = catalog
        self.access = access
        self.policies = policies
        self.settings = settings
        self.clock = clock
        self.logger = logger
        self.onSettled = onSettled
    }

    /// Answers (or skips, or gives up on) every request due now, at most `limit`; returns how many
    /// it tried.
    @discardableResult
    public func answerDue(limit: Int = 50) async throws -> Int {
        let now = clock.now()
        let lease = settings.lease
        let claimed = try await storage.transaction {
            try await $0.claimDueRefundRequests(now: now, limit: limit, lease: lease)
        }
        for request in claimed {
            let next = await attempt(request, at: now)
            let events = self.events
            try await storage.transaction { transaction in
                try await transaction.updateRefundRequest(next)
                // Its outcome and its event commit together.
                if next.status != .pending {
                    try await events.refundRequestSettled(
                        next, purchase: try await transaction.purchase(next.purchaseKey), in: transaction)
                }
            }
            if next.status != .pending { onSettled(next) }
        }
        return claimed.count
    }

    /// One attempt at a request: what it stands at afterwards.
    func attempt(_ request: RefundRequest, at now: Date) async -> RefundRequest {
        var next = request
        next.attempts += 1
        next.updatedAt = now
        next.nextAttemptAt = nil
        guard now < request.deadline else {
            next.status = .expired
            next.lastError = next.lastError ?? "the store's window to answer closed before an answer could be sent"
            logger.warning(
                "a refund consumption request went unanswered: its window closed",
                metadata: ["request": "\(request.id)", "purchase": "\(request.purchaseKey)"])
            return next
        }
        let facts: ConsumptionFacts
        do {
            facts = try await storage.transaction { try await self.facts(for: request, in: $0) }
        } catch {
            return retrying(next, after: "\(error)", at: now)
        }
        next.customerID = facts.customerID
        switch facts.decision() {
        case .failure(let skip):
            next.status = .skipped
            next.skipReason = skip.reason
            logger.info(
                "a refund consumption request was not answered",
                metadata: ["request": "\(request.id)", "reason": "\(skip.reason.rawValue)"])
            return next
        case .success(let answer):
            do {
                try await stores(request.purchaseKey.store).answer(request, with: answer)
                next.status = .sent
                next.answer = answer
                next.lastError = nil
                next.storeErrorCode = nil
                return next
            } catch {
                let serverError = error as? ServerError
                guard serverError?.isRetryable ?? true else {
                    next.status = .failed
                    next.answer = answer
                    next.storeErrorCode = serverError?.storeErrorCode
                    next.lastError = serverError?.message ?? "\(error)"
                    logger.error(
                        "the store refused a refund consumption answer",
                        metadata: ["request": "\(request.id)", "error": "\(error)"])
                    return next
                }
                next.storeErrorCode = serverError?.storeErrorCode
                return retrying(next, after: serverError?.message ?? "\(error)", at: now)
            }
        }
    }

    /// The request left pending, due again after a backoff — at the latest at its deadline, when
    /// the next attempt gives it up.
    func retrying(_ request: RefundRequest, after error: String, at now: Date) -> RefundRequest {
        var next = request
        next.status = .pending
        next.lastError = error
        let delay = min(
            settings.initialRetryDelay * pow(2, Double(max(request.attempts - 1, 0))), settings.maxRetryDelay)
        next.nextAttemptAt = min(now.addingTimeInterval(delay), request.deadline)
        logger.warning(
            "a refund consumption answer could not be sent; will retry",
            metadata: ["request": "\(request.id)", "attempts": "\(request.attempts)", "error": "\(error)"])
        return next
    }

    /// What the server knows of the request's purchase now (docs/architecture.md, "Answering
    /// refund requests"): its customer and their consent; whether it was delivered (linked,
    /// admitted in this deployment, in the catalog, a consumable's credits posted — or a problem
    /// the app reported); the share consumed (a consumable's from the ledger, oldest credits spent
    /// first; a one-time purchase's as the app reported it; none for a subscription); the policy.
    func facts(for request: RefundRequest, in transaction: any StorageTransaction) async throws -> ConsumptionFacts {
        let purchase = try await transaction.purchase(request.purchaseKey)
        let product = purchase.flatMap { catalog.product($0.productID, in: $0.key.store) }
        let kind = product?.kind ?? purchase?.kind ?? .nonConsumable
        let policy = (policies[request.app] ?? RefundPolicy()).overridden(by: product?.refundPolicy)
        guard let purchase, let customer = purchase.customerID else {
            return ConsumptionFacts(
                kind: kind, customerID: nil, consent: nil, delivery: .undeliveredOther, consumedMilliPercent: nil,
                policy: policy)
        }
        let consent = try await transaction.consumptionConsent(of: customer)
        let usage = try await transaction.purchaseUsage(purchase.key)
        var delivery: DeliveryStatus = product != nil && access.admits(purchase) ? .delivered : .undeliveredOther
        var consumed: Int?
        switch kind {
        case .consumable:
            let entries = try await transaction.ledgerEntries(of: customer)
            consumed = product?.balance.flatMap {
                ConsumedShare.ofCredit(request.transactionID, in: entries, balance: $0)
            }
            // Never credited: nothing was delivered.
            if consumed == nil { delivery = .undeliveredOther }
        case .nonConsumable, .nonRenewingSubscription:
            consumed = usage?.consumedMilliPercent
        case .subscription:
            consumed = nil
        }
        if let problem = usage?.deliveryProblem { delivery = problem }
        return ConsumptionFacts(
            kind: kind, customerID: customer, consent: consent, delivery: delivery, consumedMilliPercent: consumed,
            policy: policy)
    }
}
