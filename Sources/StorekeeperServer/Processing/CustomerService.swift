public import Foundation
public import Logging
public import StoreCore
public import Storekeeper
public import StorekeeperStorage

/// What the customer API does, apart from HTTP: create customers, answer their view, link
/// submitted purchases under the ownership policy, and debit balances.
public struct CustomerService: Sendable {
    public let storage: any Storage
    public let recorder: PurchaseRecorder
    public let policies: Policies
    public let stores: StoreAdapters
    public let settler: PurchaseSettler
    public let clock: any WallClock
    public let logger: Logger

    public init(
        storage: any Storage, recorder: PurchaseRecorder, policies: Policies, stores: StoreAdapters,
        settler: PurchaseSettler, clock: any WallClock, logger: Logger
    ) {
        self.storage = storage
        self.recorder = recorder
        self.policies = policies
        self.stores = stores
        self.settler = settler
        self.clock = clock
        self.logger = logger
    }

    /// Creates the customer if new (issuing its appAccountToken), and links purchases that arrived
    /// for its token before it existed.
    public func createOrFetch(_ id: CustomerID) async throws -> (customer: Customer, created: Bool) {
        let now = clock.now()
        let recorder = self.recorder
        return try await storage.transaction { transaction in
            if let existing = try await transaction.customer(id) { return (existing, false) }
            let customer = Customer(id: id, appAccountToken: UUID(), createdAt: now)
            try await transaction.insertCustomer(customer)
            try await recorder.claimUnlinked(for: customer, in: transaction, at: now)
            return (customer, true)
        }
    }

    /// The customer view at the current time; nil for an unknown customer.
    public func view(of id: CustomerID) async throws -> CustomerView? {
        let now = clock.now()
        // A read (Storage.read): on SQLite beside ingest's writes, on PostgreSQL in one round trip.
        let snapshot = try await storage.read { try await $0.customerSnapshot(id) }
        return snapshot.map { view(of: $0, at: now) }
    }

    /// Up to `limit` of the customer's purchases of every kind, consumables included, that follow
    /// `after` in key order (store, then purchase id), and whether more follow; nil for an unknown
    /// customer. The history behind the view, which leaves consumables out.
    public func purchaseHistory(of id: CustomerID, after: PurchaseKey?, limit: Int) async throws
        -> (purchases: [PurchaseView], hasMore: Bool)?
    {
        let now = clock.now()
        let access = recorder.access
        return try await storage.read { transaction in
            guard try await transaction.customer(id) != nil else { return nil }
            let found = try await transaction.purchases(of: id, after: after, limit: limit + 1)
            let page = found.prefix(limit).map { PurchaseView($0, access: access, at: now) }
            return (page, found.count > limit)
        }
    }

    /// The customer view as `transaction` sees it (after its writes).
    func view(of customer: Customer, in transaction: any StorageTransaction, at now: Date) async throws
        -> CustomerView
    {
        guard let snapshot = try await transaction.customerSnapshot(customer.id) else {
            throw ServerError.customerNotFound(customer.id)
        }
        return view(of: snapshot, at: now)
    }

    private func view(of snapshot: CustomerSnapshot, at now: Date) -> CustomerView {
        // Consumables are not listed (their credits are the balances): not read either.
        CustomerView(
            customer: snapshot.customer, purchases: snapshot.entitlementPurchases, balances: snapshot.balances,
            catalog: recorder.catalog, access: recorder.access, consumptionConsent: snapshot.consent, at: now)
    }

    // MARK: Refund decisions

    /// Records whether the customer consents to share consumption data (nil: unknown again).
    /// The customer must exist: consent is never the way a customer is created.
    public func setConsumptionConsent(_ consented: Bool?, for id: CustomerID) async throws -> CustomerView {
        let now = clock.now()
        return try await storage.transaction { transaction in
            guard let customer = try await transaction.customer(id) else { throw ServerError.customerNotFound(id) }
            try await transaction.saveConsumptionConsent(
                consented.map { ConsumptionConsent(consented: $0, decidedAt: now) }, of: id)
            return try await view(of: customer, in: transaction, at: now)
        }
    }

    /// Records how much of one of the customer's one-time purchases they used (and a delivery
    /// problem the app knows of), for answering refund requests. A consumable's share comes from
    /// its ledger and a subscription's is Apple's to compute: for those only a delivery problem
    /// may be reported.
    public func reportUsage(
        _ key: PurchaseKey, of id: CustomerID, consumedMilliPercent: Int?, deliveryProblem: DeliveryStatus?
    ) async throws -> PurchaseUsage {
        let now = clock.now()
        if let consumedMilliPercent, !(0...PurchaseUsage.allOfIt).contains(consumedMilliPercent) {
            throw ServerError(.invalidUsage, "consumedPercent must be from 0 to 100")
        }
        if deliveryProblem == .delivered {
            throw ServerError(
                .invalidUsage, "deliveryProblem names a problem; leave it out when the purchase was delivered")
        }
        return try await storage.transaction { transaction in
            guard try await transaction.customer(id) != nil else { throw ServerError.customerNotFound(id) }
            guard let purchase = try await transaction.purchase(key) else {
                throw ServerError(.purchaseNotFound, "no purchase \(key.id) in \(key.store.pathSegment)")
            }
            guard purchase.customerID == id else {
                throw ServerError(.purchaseNotOwned, "purchase \(key.id) does not belong to customer \(id)")
            }
            let kind = self.recorder.catalog.product(purchase.productID, in: key.store)?.kind ?? purchase.kind
            if consumedMilliPercent != nil && (kind == .consumable || kind == .subscription) {
                throw ServerError(
                    .invalidUsage,
                    kind == .consumable
                        ? "a consumable's consumed share comes from its ledger; report only a deliveryProblem"
                        : "Apple computes a subscription's consumed share; report only a deliveryProblem")
            }
            let previous = try await transaction.purchaseUsage(key)
            guard
                let share = consumedMilliPercent ?? previous?.consumedMilliPercent
                    ?? (kind == .consumable || kind == .subscription ? 0 : nil)
            else {
                throw ServerError(.invalidUsage, "consumedPercent is required for a \(kind.rawValue)")
            }
            let usage = PurchaseUsage(
                key: key, customerID: id, consumedMilliPercent: share, deliveryProblem: deliveryProblem, reportedAt: now
            )
            try await transaction.savePurchaseUsage(usage)
            return usage
        }
    }

    /// The refund consumption requests of the customer's purchases and how each was answered.
    public func refundRequests(of id: CustomerID) async throws -> [RefundRequest] {
        try await storage.transaction { transaction in
            guard try await transaction.customer(id) != nil else { throw ServerError.customerNotFound(id) }
            return try await transaction.refundRequests(of: id)
        }
    }

    /// Records what the store says about a purchase the customer presents (superseding the older
    /// purchases the observation names), and links it to them under the ownership policy.
    func submit(
        _ observation: PurchaseObservation, cause: ChangeCause, for id: CustomerID
    ) async throws -> (view: CustomerView, purchase: Purchase) {
        let now = clock.now()
        let recorder = self.recorder
        let policy = policies.ownershipConflict
        return try await storage.transaction { transaction in
            guard let customer = try await transaction.customer(id) else {
                throw ServerError.customerNotFound(id)
            }
            guard let outcome = try await recorder.record(observation, cause: cause, in: transaction) else {
                throw ServerError(.malformedSubmission, "the submission names no purchase")
            }
            var purchase = outcome.purchase
            switch policy.decide(purchase, presentedBy: id, at: now) {
            case .alreadyOwned: break
            case .link:
                purchase = try await recorder.link(purchase, to: id, in: transaction, at: now)
            case .conflict:
                throw ServerError(
                    .ownershipConflict,
                    "purchase \(purchase.key.id) belongs to another customer and the ownership policy keeps it there")
            case .transfer(let owner):
                purchase = try await recorder.link(
                    purchase, to: id,
                    transfer: OwnershipTransfer(key: purchase.key, from: owner, to: id, policy: policy, at: now),
                    in: transaction, at: now
                )
            }
            return (try await view(of: customer, in: transaction, at: now), purchase)
        }
    }

    /// A purchase submission for `store` (its own JSON body): everything the adapter verifies with
    /// the store before anything is recorded; a sandbox purchase this deployment does not let
    /// grant access is refused; then each purchase is recorded, linked under the ownership policy
    /// and settled with its store (acknowledged, or given the customer's account token).
    public func submit(_ body: Data, to store: Store, for id: CustomerID) async throws -> CustomerView {
        guard let customer = try await storage.transaction({ try await $0.customer(id) }) else {
            throw ServerError.customerNotFound(id)
        }
        let observations = try await stores(store).interpretSubmission(body)
        for case .purchase(let fact, _) in observations
        where !recorder.access.admits(fact.environment, of: StoreApp(store, fact.app)) {
            throw ServerError(
                .sandboxPurchaseInProduction,
                "purchase \(fact.key.id) of \(fact.app) was made in the \(fact.environment) environment; this "
                    + "production deployment lets \(fact.app)'s sandbox purchases grant access only when "
                    + "its configuration says so")
        }
        var view: CustomerView?
        for observation in observations {
            guard case .purchase(let fact, _) = observation else { continue }
            let cause = ChangeCause(source: .submission, event: store.rawValue, reference: fact.key.id)
            let (submitted, purchase) = try await submit(observation, cause: cause, for: id)
            view = submitted
            if await settler.settle(purchase, accountToken: customer.appAccountToken) {
                view = try await self.view(of: id)
            }
        }
        guard let view else { throw ServerError(.purchaseNotFound, "the submission names no purchase") }
        return view
    }

    /// Debits a balance once per idempotency key; a repeat returns the first result.
    public func debit(
        _ id: CustomerID, balance: String, amount: Int, idempotencyKey: String
    ) async throws -> (entry: LedgerEntry, balance: Int) {
        let now = clock.now()
        return try await storage.transaction { transaction in
            guard try await transaction.customer(id) != nil else { throw ServerError.customerNotFound(id) }
            // Taking turns with everything else that decides on this customer's ledger (other
            // debits, processing batches, transfers), the debit is checked against a balance no one
            // is about to change (at READ COMMITTED it would see their rows too late).
            try await transaction.lockBalances(of: [id])
            // The ledger's own idempotency decides whether this debit is new: a repeat leaves the
            // balance as it was. A new one beyond the balance is refused, and throwing rolls its
            // insert back.
            let before = try await transaction.balances(of: id)[balance] ?? 0
            let entry = try await transaction.appendLedgerEntry(
                LedgerEntry(
                    customerID: id, balance: balance, amount: -amount, reason: .debit,
                    idempotencyKey: "debit:\(idempotencyKey)", createdAt: now
                )
            )
            guard entry.balance == balance, entry.amount == -amount else {
                throw ServerError(
                    .idempotencyKeyReused, "idempotency key \(idempotencyKey) was used for a different debit")
            }
            let after = try await transaction.balances(of: id)[balance] ?? 0
            guard after == before || before >= amount else {
                throw ServerError(
                    .insufficientBalance, "balance \(balance) has \(before), \(amount) requested")
            }
            if after != before { try await recorder.events.debited(entry, balanceAfter: after, in: transaction) }
            return (entry, after)
        }
    }
}
