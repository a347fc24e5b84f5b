public import AppStoreServer
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
    public let appStore: AppStoreApps
    public let googlePlay: GooglePlayPurchases
    public let clock: any WallClock
    public let logger: Logger

    public init(
        storage: any Storage, recorder: PurchaseRecorder, policies: Policies, appStore: AppStoreApps,
        googlePlay: GooglePlayPurchases, clock: any WallClock, logger: Logger
    ) {
        self.storage = storage
        self.recorder = recorder
        self.policies = policies
        self.appStore = appStore
        self.googlePlay = googlePlay
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
        let catalog = recorder.catalog
        return try await storage.transaction { transaction in
            guard let customer = try await transaction.customer(id) else { return nil }
            let purchases = try await transaction.purchases(of: id)
            let balances = try await transaction.balances(of: id)
            return CustomerView(customer: customer, purchases: purchases, balances: balances, catalog: catalog, at: now)
        }
    }

    /// Records what the store says about a purchase the customer presents, and links it to them
    /// under the ownership policy.
    ///
    /// - Parameter olderChain: purchases further back in an upgrade chain than `fact.replaces`,
    ///   superseded with it (see ``GooglePlayPurchases/olderChain(of:packageName:)``).
    public func submit(
        _ fact: PurchaseFact, cause: ChangeCause, for id: CustomerID, olderChain: [PurchaseKey] = []
    ) async throws -> (view: CustomerView, purchase: Purchase) {
        let now = clock.now()
        let recorder = self.recorder
        let policy = policies.ownershipConflict
        let catalog = recorder.catalog
        return try await storage.transaction { transaction in
            guard let customer = try await transaction.customer(id) else {
                throw ServiceError.customerNotFound(id)
            }
            let outcome = try await recorder.record(fact, cause: cause, in: transaction)
            for older in olderChain { _ = try await recorder.supersede(older, by: fact, cause: cause, in: transaction) }
            var purchase = outcome.purchase
            switch policy.decide(purchase, presentedBy: id, at: now) {
            case .alreadyOwned: break
            case .link:
                purchase = try await recorder.link(purchase, to: id, in: transaction, at: now)
            case .conflict(let owner):
                throw ServiceError.ownershipConflict(purchase.key, owner: owner)
            case .transfer(let owner):
                purchase = try await recorder.link(
                    purchase, to: id,
                    transfer: OwnershipTransfer(key: purchase.key, from: owner, to: id, policy: policy, at: now),
                    in: transaction, at: now
                )
            }
            let purchases = try await transaction.purchases(of: id)
            let balances = try await transaction.balances(of: id)
            let view = CustomerView(
                customer: customer, purchases: purchases, balances: balances, catalog: catalog, at: now
            )
            return (view, purchase)
        }
    }

    /// The fact an App Store submission (a signed transaction, or a transaction id looked up with
    /// the API) establishes, verified before anything is stored.
    public func appStoreFact(signedTransaction: String) async throws -> PurchaseFact {
        let (_, verifier) = try appStore.verifier(for: signedTransaction)
        let transaction = try await verifier.verify(signedTransaction, as: JWSTransaction.self)
        return try await appStoreFact(for: transaction)
    }

    public func appStoreFact(transactionID: String, environment: String?) async throws -> PurchaseFact {
        var lastError: (any Error)?
        for environment in environment.map({ [$0] }) ?? ["Production", "Sandbox"] {
            do {
                let client = try appStore.client(bundleID: nil, environment: environment)
                let transaction = try await client.getTransactionInfo(transactionId: transactionID)
                return try await appStoreFact(for: transaction)
            } catch let error as AppStoreServerAPIError where error.httpStatus == 404 {
                lastError = error
            } catch let error as ProcessingError where error.reason == .notConfigured {
                lastError = error
            }
        }
        throw lastError ?? ProcessingError(.purchaseNotFound, "transaction \(transactionID) not found")
    }

    /// The facts a StoreKit 1 app receipt leads to. The receipt only names a transaction; what
    /// counts is the customer's transaction history as the App Store Server API answers it (signed
    /// by Apple and verified): the latest transaction of each original purchase.
    public func appStoreFacts(appReceipt: String, environment: String?) async throws -> [PurchaseFact] {
        let receipt: AppReceipt
        let transactionID: String
        do {
            receipt = try AppReceipt(base64: appReceipt)
            transactionID = try receipt.requireTransactionId()
        } catch {
            throw ProcessingError(.malformedPayload, "the app receipt: \(error.description)")
        }
        var lastError: (any Error)?
        for environment in environment.map({ [$0] }) ?? ["Production", "Sandbox"] {
            do {
                let client = try appStore.client(bundleID: receipt.bundleId, environment: environment)
                var latest: [String: JWSTransaction] = [:]
                for try await transaction in client.transactionHistory(transactionId: transactionID) {
                    let original = transaction.originalTransactionId ?? transaction.transactionId ?? ""
                    if let known = latest[original],
                        (known.purchaseDate ?? .distantPast)
                            >= (transaction.purchaseDate ?? .distantPast)
                    {
                        continue
                    }
                    latest[original] = transaction
                }
                var facts: [PurchaseFact] = []
                for transaction in latest.values.sorted(by: {
                    ($0.purchaseDate ?? .distantPast) < ($1.purchaseDate ?? .distantPast)
                }) {
                    facts.append(try await appStoreFact(for: transaction))
                }
                guard !facts.isEmpty else { break }
                return facts
            } catch let error as AppStoreServerAPIError where error.httpStatus == 404 {
                lastError = error
            } catch let error as ProcessingError where error.reason == .notConfigured {
                lastError = error
            }
        }
        throw lastError
            ?? ProcessingError(.purchaseNotFound, "the receipt's transaction \(transactionID) has no history")
    }

    /// Sets the customer's appAccountToken on an App Store purchase that carries none (bought
    /// outside the app: an offer code, a purchase in the App Store), when the policy says so, so
    /// that the store's later notifications name the customer. Best effort: the purchase is
    /// recorded either way.
    func setAppAccountTokenIfMissing(on purchase: Purchase, fact: PurchaseFact, view: CustomerView) async {
        let originalTransactionID = purchase.key.id
        guard policies.setAppAccountToken, purchase.key.store == .appStore, fact.accountHint == nil,
            let client = try? appStore.client(bundleID: nil, environment: fact.environment)
        else { return }
        do {
            try await client.setAppAccountToken(
                originalTransactionId: originalTransactionID, appAccountToken: view.appAccountToken)
        } catch {
            logger.warning(
                "could not set the appAccountToken of a purchase made outside the app",
                metadata: ["originalTransactionId": "\(originalTransactionID)", "error": "\(error)"])
        }
    }

    func appStoreFact(for transaction: JWSTransaction) async throws -> PurchaseFact {
        let observedAt = transaction.signedDate ?? clock.now()
        let environment = transaction.environment?.rawValue ?? "Production"
        // A subscription's state also needs its renewal info; the status endpoint gives both.
        var renewalInfo: JWSRenewalInfo?
        var status: SubscriptionStatus?
        if transaction.type == .autoRenewableSubscription, let original = transaction.originalTransactionId,
            let client = try? appStore.client(bundleID: transaction.bundleId, environment: environment)
        {
            let item = try await client.getAllSubscriptionStatuses(transactionId: original)
                .subscription(originalTransactionId: original)
            renewalInfo = item?.renewalInfo
            status = item?.status
        }
        let observation = try AppStoreFacts.observation(
            transaction: transaction, renewalInfo: renewalInfo, status: status, observedAt: observedAt,
            catalog: recorder.catalog
        )
        guard case .purchase(let fact) = observation else {
            throw ProcessingError(
                .malformedPayload, "transaction \(transaction.transactionId ?? "?") was upgraded; submit the newer one"
            )
        }
        return fact
    }

    /// A Google Play submission: the purchase's state fetched from the API, recorded and linked
    /// under the ownership policy (superseding the tokens it replaced), then acknowledged — or,
    /// for a consumable, consumed once its credits are in the ledger.
    public func submitGooglePlay(
        token: String, productID: String?, packageName: String?, for id: CustomerID
    ) async throws -> CustomerView {
        guard try await storage.transaction({ try await $0.customer(id) }) != nil else {
            throw ServiceError.customerNotFound(id)
        }
        let fact = try await googlePlay.fact(packageName: packageName, productID: productID, token: token)
        let olderChain = try await googlePlay.olderChain(of: fact, packageName: packageName)
        let cause = ChangeCause(source: "submission", event: "google-play", reference: fact.key.id)
        let (view, purchase) = try await submit(fact, cause: cause, for: id, olderChain: olderChain)
        guard purchase.needsAcknowledgement else { return view }
        await googlePlay.settle(purchase, packageName: packageName)
        return try await self.view(of: id) ?? view
    }

    /// Debits a balance once per idempotency key; a repeat returns the first result.
    public func debit(
        _ id: CustomerID, balance: String, amount: Int, idempotencyKey: String
    ) async throws -> (entry: LedgerEntry, balance: Int) {
        let now = clock.now()
        return try await storage.transaction { transaction in
            guard try await transaction.customer(id) != nil else { throw ServiceError.customerNotFound(id) }
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
                throw ServiceError.idempotencyKeyReused(idempotencyKey)
            }
            let after = try await transaction.balances(of: id)[balance] ?? 0
            guard after == before || before >= amount else {
                throw ServiceError.insufficientBalance(balance, available: before, requested: amount)
            }
            return (entry, after)
        }
    }
}

/// Request-level failures the HTTP layer maps to 4xx answers.
public enum ServiceError: Error, Sendable {
    case customerNotFound(CustomerID)
    case ownershipConflict(PurchaseKey, owner: CustomerID)
    case insufficientBalance(String, available: Int, requested: Int)
    case idempotencyKeyReused(String)
}
