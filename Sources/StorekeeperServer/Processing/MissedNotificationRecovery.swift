public import AppStoreServer
public import Foundation
import GooglePlay
public import Logging
public import StoreCore
public import Storekeeper
public import StorekeeperStorage

/// Recovers what the stores failed to deliver (DESIGN.md, "Missed notifications"):
/// - App Store: Get Notification History from where the last catch-up ended, into the inbox like
///   any delivered notification (deduplicated by `notificationUUID`);
/// - Google Play: the voided purchases list since the last sweep, for purchases Storekeeper knows;
/// - both: each subscription still believed to grant access past its expiry (plus grace) is asked
///   of its store individually — never a poll of every subscription.
///
/// Every step is idempotent: a window read twice stores nothing twice, and a fact already applied
/// is stale under the ordering rule.
public struct MissedNotificationRecovery: Sendable {
    /// What one run found.
    public struct Report: Sendable, Hashable {
        /// App Store notifications from the history that the inbox did not have yet.
        public var historyNotificationsStored = 0
        /// Known Google Play purchases whose void was applied from the voided purchases list.
        public var voidedPurchasesApplied = 0
        /// Overdue subscriptions whose state was fetched from their store.
        public var subscriptionsRefreshed = 0
        /// Steps or items that failed (logged; retried next run).
        public var failures = 0

        public init() {}
    }

    public let inbox: NotificationInbox
    public let settings: CatchUpSettings

    public init(inbox: NotificationInbox, settings: CatchUpSettings) {
        self.inbox = inbox
        self.settings = settings
    }

    var storage: any Storage { inbox.storage }
    var clock: any WallClock { inbox.clock }
    var logger: Logger { inbox.logger }

    /// Runs all three steps; a failing step is logged and does not stop the others.
    public func run() async -> Report {
        var report = Report()
        await step("App Store notification history", &report) { try await catchUpAppStoreHistory(&$0) }
        if report.historyNotificationsStored > 0 {
            // Applied (here or by a worker that claimed them first) before looking for overdue
            // subscriptions, so that the ones the history brought up to date are not asked about
            // again. A failure is left to the worker.
            _ = try? await inbox.processUntilNonePending(timeout: .seconds(10))
        }
        await step("Google Play voided purchases", &report) { try await sweepVoidedPurchases(&$0) }
        await step("overdue subscriptions", &report) { try await refreshOverdueSubscriptions(&$0) }
        return report
    }

    private func step(
        _ name: String, _ report: inout Report, _ body: (inout Report) async throws -> Void
    ) async {
        do {
            try await body(&report)
        } catch {
            report.failures += 1
            logger.warning(
                "catch-up step failed; next run retries", metadata: ["step": "\(name)", "error": "\(error)"])
        }
    }

    // MARK: App Store: notification history

    /// Stores every notification Apple's history lists since the cursor (at first, `historyLookback`
    /// back), per app and environment with an API key, then moves the cursor to now less an
    /// overlap: Apple may list a notification a little after it was sent.
    public func catchUpAppStoreHistory(_ report: inout Report) async throws {
        let now = clock.now()
        for app in inbox.appStore.apps {
            for (environment, client) in app.clients.sorted(by: { $0.key < $1.key }) {
                let cursor = "app-store.notification-history.\(app.configuration.bundleID).\(environment)"
                // Apple keeps 180 days of history.
                let start = try await cursorDate(
                    cursor, default: now - settings.historyLookback, oldest: now - 179 * 86_400)
                let request = NotificationHistoryRequest(startDate: start, endDate: now)
                for try await entry in client.notificationHistory(request) {
                    let stored = try await eachItem("notification history entry", &report) {
                        try await storeFromHistory(entry.signedPayload)
                    }
                    report.historyNotificationsStored += stored == true ? 1 : 0
                }
                try await setCursor(cursor, to: max(start, now - settings.overlap))
            }
        }
        if report.historyNotificationsStored > 0 {
            logger.notice(
                "stored App Store notifications that were never delivered",
                metadata: ["count": "\(report.historyNotificationsStored)"])
        }
    }

    /// Stores one history entry through the inbox's own verification; returns whether it was new.
    private func storeFromHistory(_ signedPayload: String) async throws -> Bool {
        let body = try JSONEncoder().encode(["signedPayload": signedPayload])
        return try await inbox.receiveAppStore(body: body) == .stored
    }

    /// One item's work within a step: a storage failure ends the step (the next run retries it);
    /// any other failure is logged, counted and skipped, so one item a store won't answer for (or
    /// no configured verifier accepts) cannot hold back the rest, nor the cursor.
    private func eachItem<Result>(
        _ what: String, _ report: inout Report, _ body: () async throws -> Result
    ) async throws -> Result? {
        do {
            return try await body()
        } catch let error as StorageError {
            throw error
        } catch {
            report.failures += 1
            logger.warning("catch-up skipped an item", metadata: ["item": "\(what)", "error": "\(error)"])
            return nil
        }
    }

    // MARK: Google Play: voided purchases

    /// Applies the voids Google lists since the cursor (at first, `voidedLookback` back; Google keeps
    /// 30 days) to the purchases Storekeeper knows and has not seen revoked. Quantity-based partial
    /// refunds of one-time products come from a second list, as Google lists them only there.
    public func sweepVoidedPurchases(_ report: inout Report) async throws {
        let now = clock.now()
        for app in inbox.googlePlay.apps.apps {
            guard let client = app.client else { continue }
            let package = app.configuration.packageName
            let cursor = "google-play.voided-purchases.\(package)"
            let start = try await cursorDate(cursor, default: now - settings.voidedLookback, oldest: now - 29 * 86_400)
            var voided: [String: [VoidedPurchase]] = [:]
            for query in [
                VoidedPurchasesQuery(startTime: start, endTime: now, type: .productsAndSubscriptions),
                VoidedPurchasesQuery(
                    startTime: start, endTime: now, type: .oneTimeProducts, includeQuantityBasedPartialRefund: true),
            ] {
                let entries = try await GooglePlayPurchases.calling {
                    var entries: [VoidedPurchase] = []
                    for try await entry in client.voidedPurchases(packageName: package, query) {
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
            for (token, entries) in voided.sorted(by: { $0.key < $1.key }) {
                let applied = try await eachItem("voided purchase \(entries.first?.orderId ?? "")", &report) {
                    try await applyVoid(token: token, entries: entries, packageName: package)
                }
                report.voidedPurchasesApplied += applied == true ? 1 : 0
            }
            try await setCursor(cursor, to: max(start, now - settings.overlap))
        }
    }

    /// Records the void of a known purchase; returns whether it was applied (unknown and already
    /// revoked purchases are left alone).
    private func applyVoid(token: String, entries: [VoidedPurchase], packageName: String) async throws -> Bool {
        let key = PurchaseKey.googlePlay(token)
        guard let stored = try await storage.transaction({ try await $0.purchase(key) }), stored.state != .revoked
        else { return false }
        let fact: PurchaseFact
        if stored.kind == .subscription {
            fact = try await inbox.googlePlay.subscriptionFact(packageName: packageName, token: token, revoked: true)
        } else {
            // A partial refund lists the units it voided; a full void lists none (or all of them).
            let units = entries.compactMap(\.voidedQuantity).reduce(0, +)
            let partial = units > 0 && units < stored.quantity ? units : nil
            fact = try await inbox.googlePlay.productFact(
                packageName: packageName, productID: stored.productID, token: token, voided: true,
                voidedQuantity: partial)
        }
        let cause = ChangeCause(source: "catch-up", event: "voided-purchase", reference: entries.first?.orderId)
        let recorder = inbox.recorder
        return try await storage.transaction { try await recorder.record(fact, cause: cause, in: $0).applied }
    }

    // MARK: Both stores: overdue subscriptions

    /// Asks the store about each subscription whose access should have ended more than
    /// `overdueAfter` ago (a renewal or expiry notification went missing), at most `refreshBatch`
    /// per run and each at most once per `refreshInterval`.
    public func refreshOverdueSubscriptions(_ report: inout Report) async throws {
        let now = clock.now()
        let settings = self.settings
        let overdue = try await storage.transaction {
            try await $0.subscriptionsOverdue(
                accessEndedBefore: now - settings.overdueAfter, notRefreshedSince: now - settings.refreshInterval,
                limit: settings.refreshBatch)
        }
        let recorder = inbox.recorder
        for purchase in overdue {
            // Marked refreshed even when the store did not answer: one purchase it won't answer
            // for must not be asked about again on every run.
            let answer = try await eachItem("overdue subscription \(purchase.key)", &report) {
                try await currentFact(of: purchase)
            }
            let fact = answer ?? nil
            if answer != nil { report.subscriptionsRefreshed += 1 }
            let cause = ChangeCause(source: "refresh", event: "overdue", reference: purchase.key.id)
            try await storage.transaction { [fact] transaction in
                if let fact { _ = try await recorder.record(fact, cause: cause, in: transaction) }
                try await transaction.markRefreshed(purchase.key, at: now)
            }
        }
    }

    /// The purchase's current state, fetched from its store. A purchase does not record which
    /// configured app it belongs to, so each app that could own it is asked in turn until one
    /// knows it (one call in the usual one-app deployment).
    private func currentFact(of purchase: Purchase) async throws -> PurchaseFact? {
        let id = purchase.key.id
        switch purchase.key.store {
        case .googlePlay:
            let packages = inbox.googlePlay.apps.apps.filter { $0.client != nil }.map(\.configuration.packageName)
            return try await firstThatKnows(id, packages) { package in
                try await inbox.googlePlay.subscriptionFact(packageName: package, token: id)
            }
        case .appStore:
            let clients = inbox.appStore.apps.compactMap { $0.clients[purchase.environment] }
            return try await firstThatKnows(id, clients) { client in
                let item: SubscriptionGroupStatus.Subscription?
                do {
                    item = try await client.getAllSubscriptionStatuses(transactionId: id)
                        .subscription(originalTransactionId: id)
                } catch let error as AppStoreServerAPIError where error.httpStatus == 404 {
                    throw ProcessingError(.purchaseNotFound, "the App Store does not know \(id): \(error)")
                }
                guard let item, let transaction = item.transaction else {
                    throw ProcessingError(.purchaseNotFound, "the App Store lists no status for \(id)")
                }
                let signed = [transaction.signedDate, item.renewalInfo?.signedDate].compactMap { $0 }.max()
                let observation = try AppStoreFacts.observation(
                    transaction: transaction, renewalInfo: item.renewalInfo, status: item.status,
                    observedAt: signed ?? clock.now(), catalog: inbox.recorder.catalog)
                guard case .purchase(let fact) = observation else { return nil }
                return fact
            }
        }
    }

    /// The answer of the first app (in configuration order) that knows the purchase.
    private func firstThatKnows<App: Sendable>(
        _ id: String, _ apps: [App], _ ask: (App) async throws -> PurchaseFact?
    ) async throws -> PurchaseFact? {
        var notFound: (any Error)?
        for app in apps {
            do {
                return try await ask(app)
            } catch let error as ProcessingError where error.reason == .purchaseNotFound {
                notFound = error
            }
        }
        throw notFound ?? ProcessingError(.notConfigured, "no configured app can ask its store about \(id)")
    }

    // MARK: Cursors

    private func cursorDate(_ name: String, default fallback: Date, oldest: Date) async throws -> Date {
        let stored = try await storage.transaction { try await $0.cursor(name) }
        let date = stored.flatMap(Int64.init).map { Date(timeIntervalSince1970: Double($0) / 1000) } ?? fallback
        return max(date, oldest)
    }

    private func setCursor(_ name: String, to date: Date) async throws {
        let value = String(Int64((date.timeIntervalSince1970 * 1000).rounded()))
        try await storage.transaction { try await $0.setCursor(name, to: value) }
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

    public init(
        enabled: Bool = true, interval: TimeInterval = 3600, historyLookback: TimeInterval = 86_400,
        voidedLookback: TimeInterval = 86_400,
        overlap: TimeInterval = 600, overdueAfter: TimeInterval = 3600, refreshInterval: TimeInterval = 6 * 3600,
        refreshBatch: Int = 100
    ) {
        self.enabled = enabled
        self.interval = interval
        self.historyLookback = historyLookback
        self.voidedLookback = voidedLookback
        self.overlap = overlap
        self.overdueAfter = overdueAfter
        self.refreshInterval = refreshInterval
        self.refreshBatch = refreshBatch
    }
}
