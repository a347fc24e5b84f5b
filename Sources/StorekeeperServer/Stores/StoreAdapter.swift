public import Foundation
public import Storekeeper

/// One store behind the server: the only code that knows the store's wire formats, its apps and
/// environments, its API and its errors. Everything else (the inbox, submissions, the catch-up,
/// the sweeper, the routes) is store-neutral and talks to stores through this interface.
///
/// Every method that can fail throws ``ServerError``: an adapter translates its store's errors,
/// keeping the store's own as ``ServerError/underlying``.
public protocol StoreAdapter: Sendable {
    /// The store this adapter speaks for.
    var store: Store { get }

    /// Authenticates a webhook delivery (the signed payload, the push token) and returns the key
    /// it is deduplicated by, with whatever it verified that ``interpret(_:)`` may use instead of
    /// verifying again. Throws before anything is stored if the body is malformed, forged, or for
    /// an app or environment this server does not accept.
    func accept(_ delivery: WebhookDelivery) async throws -> AcceptedDelivery

    /// What a stored notification tells: the observations to record (fetched from the store's
    /// API where the notification only says that something changed) and their cause.
    ///
    /// A notification claimed with a kept record comes without its body
    /// (``InboxNotification/bodyWasRead``). Should the adapter need the body after all (a record
    /// it cannot read), it throws ``BodyNotRead``, and the inbox reads the notification whole and
    /// asks again.
    func interpret(_ notification: InboxNotification) async throws -> NotificationChange

    /// Whether ``interpret(_:)`` needs nothing but the stored notification (no store API call):
    /// such a notification is interpreted and applied in the transaction that claimed it, with no
    /// lease to write first and no second transaction.
    func interpretsFromStoredNotification(_ notification: InboxNotification) -> Bool

    /// What a purchase submission (the store's own JSON body, see docs/openapi.yaml) establishes,
    /// verified with the store before anything is recorded.
    func interpretSubmission(_ body: Data) async throws -> [PurchaseObservation]

    /// The purchase's current state, asked of its store with its own app and environment.
    func currentFact(of purchase: Purchase) async throws -> PurchaseFact?

    /// Tells the store what it waits for once a purchase is recorded: Google's acknowledgement
    /// (or consumption), or — with `accountToken`, for a submission — Apple's app account token
    /// on a purchase made outside the app. Returns what changed, nil when nothing was owed.
    func settle(_ purchase: Purchase, accountToken: UUID?) async throws -> PurchaseSettlement?

    /// Sends the answer to a refund consumption request (Apple: Send Consumption Information V2)
    /// with the purchase's own app and environment. A store that never asks throws
    /// ``ErrorCode/notConfigured``.
    func answer(_ request: RefundRequest, with answer: ConsumptionAnswer) async throws

    /// This store's share of catching up on what it failed to deliver (DESIGN.md, "Missed
    /// notifications"), counted into `report`. Overdue subscriptions are refreshed by the caller
    /// through ``currentFact(of:)``.
    func catchUp(_ context: CatchUpContext, _ report: inout CatchUpReport) async throws
}

/// ``StoreAdapter/interpret(_:)`` needs the body of a notification claimed without it.
public struct BodyNotRead: Error, Sendable, Hashable, CustomStringConvertible {
    public var store: Store
    public var dedupeKey: String

    public var description: String {
        "the \(store.rawValue) notification \(dedupeKey) was claimed without its body, which its kept record cannot replace"
    }
}

/// A webhook request as received.
public struct WebhookDelivery: Sendable {
    public var body: Data
    /// The `Authorization` header (Google's Pub/Sub push carries its OIDC token there).
    public var authorization: String?

    public init(body: Data, authorization: String? = nil) {
        self.body = body
        self.authorization = authorization
    }
}

/// A webhook delivery the store's adapter authenticated.
public struct AcceptedDelivery: Sendable, Hashable {
    /// The key the notification is deduplicated by (unique per store).
    public var dedupeKey: String
    /// What the adapter verified, in its own encoding, stored with the notification
    /// (``InboxNotification/verified``); nil when it keeps nothing.
    public var verified: Data?

    public init(dedupeKey: String, verified: Data? = nil) {
        self.dedupeKey = dedupeKey
        self.verified = verified
    }
}

/// What one store word says about a purchase.
public enum PurchaseObservation: Sendable, Hashable {
    /// The purchase's state; `supersedes` lists purchases further back in an upgrade chain than
    /// `fact.replaces` that it replaces too (Google's `linkedPurchaseToken` chain).
    case purchase(PurchaseFact, supersedes: [PurchaseKey] = [])
    /// Only a billing event of `key`: it does not speak for the purchase's state (an upgraded
    /// App Store transaction; the subscription continues under the new product).
    case billingEvent(TransactionFact, of: PurchaseKey)
}

/// What one stored notification changes, worked out outside any storage transaction.
public struct NotificationChange: Sendable, Hashable {
    public var observations: [PurchaseObservation]
    public var cause: ChangeCause
    /// A refund consumption request to answer (Apple's `CONSUMPTION_REQUEST`), stored with the
    /// observations in one transaction.
    public var refundRequest: RefundRequest?

    public init(_ observations: [PurchaseObservation], cause: ChangeCause, refundRequest: RefundRequest? = nil) {
        self.observations = observations
        self.cause = cause
        self.refundRequest = refundRequest
    }
}

/// What settling a purchase changed.
public enum PurchaseSettlement: Sendable, Hashable {
    /// The store no longer waits for an acknowledgement.
    case acknowledged
    /// The store now carries this account token for the purchase.
    case accountTokenSet(String)
}

/// The adapters of the configured stores.
public struct StoreAdapters: Sendable {
    public let all: [any StoreAdapter]

    public init(_ adapters: [any StoreAdapter]) {
        all = adapters
    }

    /// The adapter of `store`; every store has one, configured apps or not.
    public func callAsFunction(_ store: Store) -> any StoreAdapter {
        guard let adapter = all.first(where: { $0.store == store }) else {
            preconditionFailure("no adapter for \(store): StorekeeperApplication creates one per store")
        }
        return adapter
    }
}
