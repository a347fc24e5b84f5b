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
        for customer in changes.customers {
            let purchases = try await transaction.entitlementPurchases(of: customer)
            after[customer] = EntitlementView.current(of: purchases, catalog: catalog, access: access, at: now)
            before[customer] = changes.entitlementsBefore(
                purchases, of: customer, catalog: catalog, access: access, at: now)
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

    /// A version 7 UUID (RFC 9562) for an event made at `time`: its first 48 bits are `time` in
    /// Unix milliseconds, the other 74 (all but the version and the variant) random from the
    /// system's generator (`getrandom`; `UUID()` opens, reads and closes /dev/urandom for every id
    /// on Linux, about 2 % of the ingest profile's CPU).
    ///
    /// Why time first: the events' `id` index is a B-tree, and random ids put every event in a
    /// page of its own, each written again at every commit (a WAL frame on SQLite); ids that
    /// follow time put a batch's events in the index's last pages.
    static func newEventID(at time: Date) -> UUID {
        var generator = SystemRandomNumberGenerator()
        let random: (UInt64, UInt64) = (generator.next(), generator.next())
        let milliseconds = time.timeIntervalSince1970 * 1000
        // 48 bits hold every time from 1970 to the year 10889; outside, the nearest end.
        let stamp = milliseconds.isNaN ? 0 : UInt64(min(max(milliseconds, 0), Double(1 << 48 - 1)))
        func byte(_ value: UInt64, _ shift: UInt64) -> UInt8 { UInt8(truncatingIfNeeded: value >> shift) }
        return UUID(
            uuid: (
                byte(stamp, 40), byte(stamp, 32), byte(stamp, 24), byte(stamp, 16), byte(stamp, 8), byte(stamp, 0),
                0x70 | byte(random.0, 56) & 0x0F, byte(random.0, 48),
                0x80 | byte(random.0, 40) & 0x3F, byte(random.0, 32), byte(random.0, 24), byte(random.0, 16),
                byte(random.0, 8), byte(random.1, 56), byte(random.1, 48), byte(random.1, 40)
            ))
    }

    func append(
        _ drafts: [EventDraft], entitlements: [CustomerID: [EntitlementView]], at now: Date,
        in transaction: any StorageTransaction
    ) async throws {
        guard !drafts.isEmpty else { return }
        let stored = try drafts.map { draft in
            let event = Event(
                id: Self.newEventID(at: now), type: draft.type, occurredAt: now, customerID: draft.customerID,
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
