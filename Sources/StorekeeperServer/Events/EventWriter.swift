public import Foundation
public import StoreCore
public import Storekeeper
public import StorekeeperStorage

/// Turns what one transaction changed into events and appends them to the outbox in that same
/// transaction (DESIGN.md, "Events"): a crash never keeps a change without its events, or events
/// without their change.
public struct EventWriter: Sendable {
    public let catalog: Catalog
    public let access: EnvironmentAccess
    /// The events' time, and the moment entitlements are evaluated at.
    public let clock: any WallClock

    public init(catalog: Catalog, access: EnvironmentAccess, clock: any WallClock) {
        self.catalog = catalog
        self.access = access
        self.clock = clock
    }

    /// The JSON of an event, as delivered and as the feed shows it. `append` writes the same bytes
    /// with the faster `Event.jsonData()`; this encoder stays the reference they are checked against.
    public static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    public static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()

    /// Appends the events of `changes`: each changed customer's entitlements are read once, after
    /// the change, and compared with what they were.
    public func write(_ changes: ChangeSet, in transaction: any StorageTransaction) async throws {
        guard !changes.isEmpty else { return }
        let now = clock.now()
        var before: [CustomerID: [EntitlementView]] = [:]
        var after: [CustomerID: [EntitlementView]] = [:]
        var balances: [CustomerID: [String: Int]] = [:]
        let ledgerCustomers = Set(changes.ledger.map(\.customerID))
        let beforeTime = changes.earliestFact.map { min($0.addingTimeInterval(-0.001), now) } ?? now
        for customer in changes.customers {
            let purchases = try await transaction.entitlementPurchases(of: customer)
            after[customer] = EntitlementView.current(of: purchases, catalog: catalog, access: access, at: now)
            before[customer] = EntitlementView.current(
                of: changes.purchasesBefore(purchases, of: customer), catalog: catalog, access: access,
                at: beforeTime)
            if ledgerCustomers.contains(customer) { balances[customer] = try await transaction.balances(of: customer) }
        }
        let drafts = changes.events(entitlementsBefore: before, entitlementsAfter: after, balancesAfter: balances)
        try await append(drafts, entitlements: after, at: now, in: transaction)
    }

    /// Appends the `balance.changed` event of a debit the app made.
    public func debited(
        _ entry: LedgerEntry, balanceAfter: Int, in transaction: any StorageTransaction
    ) async throws {
        let now = clock.now()
        let purchases = try await transaction.entitlementPurchases(of: entry.customerID)
        let entitlements = EntitlementView.current(of: purchases, catalog: catalog, access: access, at: now)
        let draft = EventDraft(
            type: .balanceChanged, customerID: entry.customerID, purchase: nil,
            details: EventDetails(
                balance: entry.balance, amount: entry.amount, balanceAfter: balanceAfter, reason: entry.reason.rawValue)
        )
        try await append([draft], entitlements: [entry.customerID: entitlements], at: now, in: transaction)
    }

    /// Appends the `refund_request.settled` event of a settled refund consumption request.
    public func refundRequestSettled(
        _ request: RefundRequest, purchase: Purchase?, in transaction: any StorageTransaction
    ) async throws {
        let now = clock.now()
        var entitlements: [CustomerID: [EntitlementView]] = [:]
        if let customer = request.customerID {
            let purchases = try await transaction.entitlementPurchases(of: customer)
            entitlements[customer] = EntitlementView.current(of: purchases, catalog: catalog, access: access, at: now)
        }
        var details = EventDetails(
            transactionID: request.transactionID,
            reason: request.skipReason?.rawValue ?? request.storeErrorCode.map { "store error \($0)" })
        details.refundRequestStatus = request.status
        details.consumptionAnswer = request.answer
        let draft = EventDraft(
            type: .refundRequestSettled, customerID: request.customerID, purchase: purchase, details: details)
        try await append([draft], entitlements: entitlements, at: now, in: transaction)
    }

    /// A random (version 4) UUID from the system's generator, two `getrandom` calls. `UUID()`
    /// opens, reads and closes /dev/urandom for every id on Linux: in the ingest profile those
    /// three system calls per event were about 2 % of the CPU.
    static func newEventID() -> UUID {
        var generator = SystemRandomNumberGenerator()
        return UUID.random(using: &generator)
    }

    func append(
        _ drafts: [EventDraft], entitlements: [CustomerID: [EntitlementView]], at now: Date,
        in transaction: any StorageTransaction
    ) async throws {
        guard !drafts.isEmpty else { return }
        let stored = try drafts.map { draft in
            let event = Event(
                id: Self.newEventID(), type: draft.type, occurredAt: now, customerID: draft.customerID,
                store: draft.purchase?.key.store, app: draft.purchase?.app, environment: draft.purchase?.environment,
                purchaseID: draft.purchase?.key.id, productID: draft.purchase?.productID, details: draft.details,
                entitlements: draft.customerID.flatMap { entitlements[$0] } ?? [])
            return StoredEvent(
                id: event.id, type: event.type, customerID: event.customerID, environment: event.environment,
                orderingKey: event.orderingKey, occurredAt: now, body: try event.jsonData())
        }
        try await transaction.appendEvents(stored)
    }
}
