public import Foundation
import Logging
import StoreCore
import Storekeeper
import StorekeeperStorage

/// Recovers what the stores failed to deliver (DESIGN.md, "Missed notifications"):
/// - each store's own step (``StoreAdapter/catchUp(_:_:)``): App Store: Get Notification History
///   from where the last catch-up ended, into the inbox like any delivered notification; Google
///   Play: the voided purchases list since the last sweep, for purchases Storekeeper knows;
/// - then each subscription still believed to grant access past its expiry (plus grace), or
///   without access and silent while it waits on news (billing retry, paused, pending), is asked
///   of its store individually — never a poll of every subscription.
///
/// Every step is idempotent: a window read twice stores nothing twice, and a fact already applied
/// is stale under the ordering rule.
public struct MissedNotificationRecovery: Sendable {
    public let inbox: NotificationInbox
    public let settings: CatchUpSettings

    public init(inbox: NotificationInbox, settings: CatchUpSettings) {
        self.inbox = inbox
        self.settings = settings
    }

    var storage: any Storage { inbox.storage }
    var clock: any WallClock { inbox.clock }
    var logger: Logger { inbox.logger }

    /// Runs each store's own step, then the overdue refresh; a failing step is logged and does
    /// not stop the others.
    public func run() async -> CatchUpReport {
        var report = CatchUpReport()
        let context = CatchUpContext(inbox: inbox, cursors: CatchUpCursors(storage: storage), settings: settings)
        for adapter in inbox.stores.all {
            await step("\(adapter.store.rawValue) catch-up", &report) { try await adapter.catchUp(context, &$0) }
        }
        if report[.history] > 0 {
            // Applied (here or by a worker that claimed them first) before looking for overdue
            // subscriptions, so that the ones the history brought up to date are not asked about
            // again. A failure is left to the worker.
            _ = try? await inbox.processUntilNonePending(timeout: .seconds(10))
        }
        await step("overdue subscriptions", &report) { try await refreshOverdueSubscriptions(&$0) }
        return report
    }

    private func step(
        _ name: String, _ report: inout CatchUpReport, _ body: (inout CatchUpReport) async throws -> Void
    ) async {
        do {
            try await body(&report)
        } catch {
            report.count(.failures)
            logger.warning(
                "catch-up step failed; next run retries", metadata: ["step": "\(name)", "error": "\(error)"])
        }
    }

    /// Asks its store about each subscription whose news is late, with the purchase's own app and
    /// environment, at most `refreshBatch` per run and each at most once per `refreshInterval`:
    /// first those whose access should have ended more than `overdueAfter` ago (a renewal or
    /// expiry notification went missing), then those without access that wait on news (billing
    /// retry, paused, pending) and heard nothing for `refreshInterval`, within `awaitingNewsWatch`
    /// of their last news (a recovery, resumption or completed payment went missing). Each kind
    /// comes least recently asked first: many stay due after being asked, and all of them must
    /// come round when more are due than a run asks. The kinds share the batch
    /// (``shareBatch(_:overdue:awaitingNews:)``), so that neither waits behind the other.
    public func refreshOverdueSubscriptions(_ report: inout CatchUpReport) async throws {
        let now = clock.now()
        let settings = self.settings
        let (due, counts) = try await storage.transaction { transaction in
            let accessEndedBefore = now - settings.overdueAfter
            let silentSince = now - settings.refreshInterval
            let overdue = try await transaction.subscriptionsOverdue(
                accessEndedBefore: accessEndedBefore, notRefreshedSince: silentSince, limit: settings.refreshBatch)
            // Counted only when a page is full: a shorter page is all there is.
            var counts: [RefreshReason: Int] = [.overdue: overdue.count, .awaitingNews: 0]
            if overdue.count == settings.refreshBatch {
                counts[.overdue] = try await transaction.countSubscriptionsOverdue(
                    accessEndedBefore: accessEndedBefore, notRefreshedSince: silentSince)
            }
            let watchedSince = now - settings.awaitingNewsWatch
            var awaiting: [Purchase] = []
            if watchedSince < silentSince {
                awaiting = try await transaction.subscriptionsAwaitingNews(
                    lastNews: watchedSince..<silentSince, notRefreshedSince: silentSince,
                    limit: settings.refreshBatch)
                counts[.awaitingNews] = awaiting.count
                if awaiting.count == settings.refreshBatch {
                    counts[.awaitingNews] = try await transaction.countSubscriptionsAwaitingNews(
                        lastNews: watchedSince..<silentSince, notRefreshedSince: silentSince)
                }
            }
            let (overdueTaken, awaitingTaken) = Self.shareBatch(
                settings.refreshBatch, overdue: overdue.count, awaitingNews: awaiting.count)
            let due =
                overdue.prefix(overdueTaken).map { ($0, RefreshReason.overdue) }
                + awaiting.prefix(awaitingTaken).map { ($0, RefreshReason.awaitingNews) }
            return (due, counts)
        }
        report.dueForRefresh = counts
        let dueInAll = counts.values.reduce(0, +)
        if dueInAll > settings.refreshBatch {
            logger.notice(
                """
                more subscriptions are due for a refresh than one catch-up run asks about: the rest wait for later \
                runs; if this persists, raise processing.catchUp.refreshBatch
                """,
                metadata: [
                    "overdue": "\(counts[.overdue] ?? 0)", "awaitingNews": "\(counts[.awaitingNews] ?? 0)",
                    "refreshBatch": "\(settings.refreshBatch)",
                ])
        }
        let context = CatchUpContext(inbox: inbox, cursors: CatchUpCursors(storage: storage), settings: settings)
        let recorder = inbox.recorder
        for (purchase, reason) in due {
            // Marked refreshed even when the store did not answer: one purchase it won't answer
            // for must not be asked about again on every run.
            let answer = try await context.eachItem("\(reason) subscription \(purchase.key)", &report) {
                try await inbox.stores(purchase.key.store).currentFact(of: purchase)
            }
            let fact = answer ?? nil
            if answer != nil { report.count(.refreshed) }
            let cause = ChangeCause(source: .refresh, event: reason.event, reference: purchase.key.id)
            try await storage.transaction { [fact] transaction in
                if let fact { _ = try await recorder.record(fact, cause: cause, in: transaction) }
                try await transaction.markRefreshed(purchase.key, at: now)
            }
        }
    }
}

/// Why the overdue refresh asks a store about a subscription (also the `kind` label of
/// `storekeeper_refresh_due`).
public enum RefreshReason: String, Sendable, Hashable, CaseIterable {
    /// Still granting access past its end (plus `overdueAfter`): a renewal or expiry notification
    /// went missing.
    case overdue
    /// Without access and waiting on news (billing retry, paused, pending), silent for
    /// `refreshInterval`: a recovery, resumption or completed payment went missing.
    case awaitingNews = "awaiting_news"

    /// The refresh's word for why it asked, recorded as the change's event.
    var event: String {
        switch self {
        case .overdue: "overdue"
        case .awaitingNews: "awaiting news"
        }
    }
}

extension MissedNotificationRecovery {
    /// How many of each kind a run of `batch` asks about, given how many of each are due (each
    /// count at most `batch`): overdue ones first, but each kind gets half the batch (overdue the
    /// odd one) when it has that many due. Overdue first alone left no room for those awaiting
    /// news while a batch's worth stayed overdue (the store not answering for them).
    static func shareBatch(_ batch: Int, overdue: Int, awaitingNews: Int) -> (overdue: Int, awaitingNews: Int) {
        let overdueTaken = min(overdue, max(batch - awaitingNews, (batch + 1) / 2))
        return (overdueTaken, min(awaitingNews, batch - overdueTaken))
    }
}

/// How missed notifications are caught up (``MissedNotificationRecovery``).
public struct CatchUpSettings: Sendable, Hashable {
    /// Whether the catch-up runs at all (at startup, then every `interval`).
    public var enabled: Bool
    /// How often the catch-up runs.
    public var interval: TimeInterval
    /// How far back the first App Store history read goes (Apple keeps 180 days).
    public var historyLookback: TimeInterval
    /// How far back the first voided purchases read goes (Google keeps 30 days).
    public var voidedLookback: TimeInterval
    /// How far each read goes back before where the previous one ended (stores list late).
    public var overlap: TimeInterval
    /// How long after its access ended a subscription without news counts as overdue.
    public var overdueAfter: TimeInterval
    /// How long before the same overdue subscription is asked about again.
    public var refreshInterval: TimeInterval
    /// The most overdue subscriptions asked about per run.
    public var refreshBatch: Int
    /// How long after its last news a subscription in billing retry, paused or pending is still
    /// asked about (Apple retries billing for up to 60 days). Past it, one its store never settles
    /// is left as it is rather than asked about every `refreshInterval` forever.
    public var awaitingNewsWatch: TimeInterval

    public init(
        enabled: Bool = true, interval: TimeInterval = 3600, historyLookback: TimeInterval = 86_400,
        voidedLookback: TimeInterval = 86_400,
        overlap: TimeInterval = 600, overdueAfter: TimeInterval = 3600, refreshInterval: TimeInterval = 6 * 3600,
        refreshBatch: Int = 100, awaitingNewsWatch: TimeInterval = 60 * 86_400
    ) {
        self.enabled = enabled
        self.interval = interval
        self.historyLookback = historyLookback
        self.voidedLookback = voidedLookback
        self.overlap = overlap
        self.overdueAfter = overdueAfter
        self.refreshInterval = refreshInterval
        self.refreshBatch = refreshBatch
        self.awaitingNewsWatch = awaitingNewsWatch
    }
}
