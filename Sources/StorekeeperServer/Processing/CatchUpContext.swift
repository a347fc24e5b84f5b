public import Foundation
public import Logging
public import StoreCore
public import Storekeeper
public import StorekeeperStorage

/// What a catch-up recovered, by kind (also the `kind` label of `storekeeper_catch_up_total`).
public enum CatchUpKind: String, Sendable, Hashable, CaseIterable {
    /// App Store notifications from the history that the inbox did not have yet.
    case history
    /// Known Google Play purchases whose void was applied from the voided purchases list.
    case voided
    /// Subscriptions overdue or awaiting news whose state was fetched from their store.
    case refreshed
    /// Steps or items that failed (logged; retried next run).
    case failures
}

/// What one catch-up run found.
public struct CatchUpReport: Sendable, Hashable {
    public private(set) var counts: [CatchUpKind: Int] = [:]
    /// Items skipped for a reason that may pass (the store unreachable, refusing or out of quota),
    /// so that a step leaves its cursor where it was (``CatchUpContext/eachItem(_:_:_:)``).
    public private(set) var itemsToReadAgain = 0
    /// How many subscriptions were due for the overdue refresh when it ran, by why (nil if it did
    /// not get as far as counting them). More than `refreshBatch` in all: the rest wait for later
    /// runs.
    public internal(set) var dueForRefresh: [RefreshReason: Int]?

    public init() {}

    public subscript(kind: CatchUpKind) -> Int { counts[kind] ?? 0 }

    public mutating func count(_ kind: CatchUpKind, _ amount: Int = 1) {
        counts[kind, default: 0] += amount
    }

    mutating func noteItemToReadAgain() {
        itemsToReadAgain += 1
    }
}

/// A position a catch-up step keeps between runs: where the last read of a store list ended.
public enum CatchUpCursor: Sendable, Hashable, CustomStringConvertible {
    /// Apple's notification history of one app in one environment.
    case notificationHistory(AppID, PurchaseEnvironment)
    /// Google's voided purchases list of one app.
    case voidedPurchases(AppID)

    /// The stored name (spelled as before environments were typed, so cursors survive upgrades).
    public var description: String {
        switch self {
        case .notificationHistory(let app, let environment):
            "app-store.notification-history.\(app).\(environment == .production ? "Production" : "Sandbox")"
        case .voidedPurchases(let app):
            "google-play.voided-purchases.\(app)"
        }
    }
}

/// Cursors as dates, kept in storage as whole milliseconds.
public struct CatchUpCursors: Sendable {
    public let storage: any Storage

    public init(storage: any Storage) {
        self.storage = storage
    }

    /// Where `cursor` stands, `fallback` before its first run, never before `oldest` (how far back
    /// the store keeps the list).
    public func date(_ cursor: CatchUpCursor, default fallback: Date, oldest: Date) async throws -> Date {
        let stored = try await storage.transaction { try await $0.cursor(cursor.description) }
        let date = stored.flatMap(Int64.init).map { Date(timeIntervalSince1970: Double($0) / 1000) } ?? fallback
        return max(date, oldest)
    }

    public func set(_ cursor: CatchUpCursor, to date: Date) async throws {
        let value = String(Int64((date.timeIntervalSince1970 * 1000).rounded()))
        try await storage.transaction { try await $0.setCursor(cursor.description, to: value) }
    }
}

/// What a store's catch-up step may use: the inbox to store what the store's history lists, the
/// recorder to apply what a list says, the cursors, and the per-item failure rule.
public struct CatchUpContext: Sendable {
    public let inbox: NotificationInbox
    public let cursors: CatchUpCursors
    public let settings: CatchUpSettings

    var storage: any Storage { inbox.storage }
    public var clock: any WallClock { inbox.clock }
    public var logger: Logger { inbox.logger }

    /// Stores a notification found in a store's history through the webhook's own verification
    /// and deduplication; returns whether it was new.
    public func storeFromHistory(_ store: Store, body: Data) async throws -> Bool {
        try await inbox.receive(store, WebhookDelivery(body: body)) == .stored
    }

    /// The stored purchase `key`, if known.
    public func purchase(_ key: PurchaseKey) async throws -> Purchase? {
        try await storage.transaction { try await $0.purchase(key) }
    }

    /// Records `fact`; returns whether it was newer than what was applied.
    public func record(_ fact: PurchaseFact, cause: ChangeCause) async throws -> Bool {
        let recorder = inbox.recorder
        return try await storage.transaction { try await recorder.record(fact, cause: cause, in: $0).applied }
    }

    /// One item's work within a step: a storage failure ends the step (the next run retries it);
    /// any other failure is logged, counted and skipped, so that one item cannot hold back the
    /// rest. A failure that says something about the item (the store does not know the purchase,
    /// no configured verifier accepts the notification) lets the step's cursor move on past it, or
    /// it would be read again forever; any other (the store unreachable, refusing, or out of
    /// quota) is noted in `report`, and the step keeps its cursor (``step(after:from:movingTo:_:_:)``):
    /// a void or a notification found but not applied is looked for again at the next run.
    public func eachItem<Result>(
        _ what: String, _ report: inout CatchUpReport, _ body: () async throws -> Result
    ) async throws -> Result? {
        do {
            return try await body()
        } catch let error as StorageError {
            throw error
        } catch {
            report.count(.failures)
            let aboutTheItem = Self.isAboutTheItem(error)
            if !aboutTheItem { report.noteItemToReadAgain() }
            logger.warning(
                "catch-up skipped an item",
                metadata: ["item": "\(what)", "error": "\(error)", "readAgain": "\(!aboutTheItem)"])
            return nil
        }
    }

    /// Runs one step, `body`, over what a store lists after `cursor` (from `start`, where the
    /// cursor was or, at first, the lookback), then moves the cursor to `date`, unless one of the
    /// step's items failed for a reason that may pass (``eachItem(_:_:_:)``): then the cursor
    /// stays at `start` (stored, so that a first run's lookback does not slide on), the next run
    /// reads the same items again, and what this one applied is not applied twice (a fact is
    /// recorded once, a stored notification not stored again).
    public func step(
        after cursor: CatchUpCursor, from start: Date, movingTo date: Date, _ report: inout CatchUpReport,
        _ body: (inout CatchUpReport) async throws -> Void
    ) async throws {
        let before = report.itemsToReadAgain
        try await body(&report)
        guard report.itemsToReadAgain == before else {
            logger.notice(
                "catch-up keeps its cursor: items to read again at the next run",
                metadata: ["cursor": "\(cursor)", "items": "\(report.itemsToReadAgain - before)"])
            try await cursors.set(cursor, to: start)
            return
        }
        try await cursors.set(cursor, to: date)
    }

    /// Whether `error` is the store's (or this server's) verdict on the item itself, which trying
    /// again will not change.
    static func isAboutTheItem(_ error: any Error) -> Bool {
        guard let error = error as? ServerError else { return false }
        return switch error.code {
        case .purchaseNotFound, .invalidSignedData, .malformedPayload, .unknownApp, .environmentNotAccepted,
            .sandboxPurchaseInProduction, .unknownProduct, .purchaseAppUnknown:
            true
        default:
            false
        }
    }
}
