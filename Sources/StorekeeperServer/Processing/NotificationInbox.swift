public import AppStoreServer
public import Foundation
public import Logging
public import StoreCore
public import Storekeeper
public import StorekeeperStorage

/// Receives store notifications: verifies them, stores them durably with their dedupe key, and
/// processes stored ones (retrying failures with backoff). The webhook answers 2xx only after
/// ``receiveAppStore(body:)`` returned, i.e. once the notification is durable.
public struct NotificationInbox: Sendable {
    public let storage: any Storage
    public let recorder: PurchaseRecorder
    public let appStore: AppStoreApps
    public let googlePlay: GooglePlayPurchases
    public let settings: ProcessingSettings
    public let clock: any WallClock
    public let logger: Logger
    /// Told of every processing attempt's outcome (for metrics).
    let onProcessed: @Sendable (_ store: Store, _ succeeded: Bool) -> Void

    public init(
        storage: any Storage, recorder: PurchaseRecorder, appStore: AppStoreApps, googlePlay: GooglePlayPurchases,
        settings: ProcessingSettings, clock: any WallClock, logger: Logger,
        onProcessed: @escaping @Sendable (_ store: Store, _ succeeded: Bool) -> Void = { _, _ in }
    ) {
        self.storage = storage
        self.recorder = recorder
        self.appStore = appStore
        self.googlePlay = googlePlay
        self.settings = settings
        self.clock = clock
        self.logger = logger
        self.onProcessed = onProcessed
    }

    /// What receiving a notification did.
    public enum Receipt: Sendable, Equatable {
        case stored
        case duplicate
    }

    /// Verifies an App Store Server Notification V2 request body (`{"signedPayload": …}`) and stores
    /// it. Throws before anything is written if the body is malformed or the signature is forged.
    public func receiveAppStore(body: Data) async throws -> Receipt {
        let notification = try await verifiedAppStoreNotification(body: body)
        guard let uuid = notification.payload.notificationUUID, !uuid.isEmpty else {
            throw ProcessingError(.malformedPayload, "the notification has no notificationUUID")
        }
        let item = InboxNotification(store: .appStore, dedupeKey: uuid, body: body, receivedAt: clock.now())
        let isNew = try await storage.transaction { try await $0.insertNotification(item) }
        return isNew ? .stored : .duplicate
    }

    func verifiedAppStoreNotification(body: Data) async throws -> VerifiedNotification {
        struct Body: Decodable { var signedPayload: String }
        guard let decoded = try? JSONDecoder().decode(Body.self, from: body) else {
            throw ProcessingError(.malformedPayload, "the body is not {\"signedPayload\": \"<JWS>\"}")
        }
        let (_, verifier) = try appStore.verifier(for: decoded.signedPayload)
        return try await verifier.verifyNotification(decoded.signedPayload)
    }

    // MARK: Processing

    /// Processes every stored notification due now (at most `limit`); returns how many it handled.
    /// App Store notifications are applied as one batch (``processAppStore(_:)``); Google Play ones
    /// one by one, as each needs the Android Publisher API.
    @discardableResult
    public func processDue(limit: Int = 50) async throws -> Int {
        let now = clock.now()
        let lease = settings.lease
        let claimed = try await storage.transaction { transaction in
            try await transaction.claimDueNotifications(now: now, limit: limit, lease: lease)
        }
        await processAppStore(claimed.filter { $0.store == .appStore })
        for item in claimed where item.store == .googlePlay {
            do {
                try await processGooglePlay(item)
                onProcessed(.googlePlay, true)
            } catch {
                await recordFailure(of: item, "\(error)")
            }
        }
        return claimed.count
    }

    /// Processes batches of `settings.batchSize` until none is due.
    public func processUntilNoneDue() async throws {
        while try await processDue(limit: settings.batchSize) > 0 {}
    }

    /// Processes what is due, then waits up to `timeout` (real time) until no notification is
    /// pending — including those another worker claimed and is still applying, which are not due
    /// to this one. Returns whether none is pending.
    @discardableResult
    public func processUntilNonePending(timeout: Duration) async throws -> Bool {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            try await processUntilNoneDue()
            let counts = try await storage.transaction { try await $0.notificationCounts() }
            if (counts[.pending] ?? 0) == 0 { return true }
            guard ContinuousClock.now < deadline else { return false }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Leaves a notification whose processing failed in the inbox, due again after a backoff.
    func recordFailure(of item: InboxNotification, _ error: String) async {
        onProcessed(item.store, false)
        let attempts = item.attempts + 1
        let delay = min(settings.initialRetryDelay * pow(2, Double(attempts - 1)), settings.maxRetryDelay)
        var failed = item
        failed.status = .failed
        failed.attempts = attempts
        failed.lastError = error
        failed.nextAttemptAt = clock.now().addingTimeInterval(delay)
        logger.warning(
            "notification processing failed; will retry",
            metadata: [
                "store": "\(item.store.rawValue)", "dedupeKey": "\(item.dedupeKey)", "attempts": "\(attempts)",
                "error": "\(error)",
            ]
        )
        _ = try? await storage.transaction { [failed] in try await $0.updateNotification(failed) }
    }

    /// What one App Store notification changes, worked out before any transaction.
    struct AppStoreChange: Sendable {
        var item: InboxNotification
        var observation: AppStoreObservation?
        var cause: ChangeCause
    }

    /// Processes App Store notifications: each is verified again and mapped to a fact outside any
    /// transaction, then all are applied in one transaction — each with its `processed` mark, in a
    /// savepoint of its own, so one that fails is undone alone and retried later while the rest
    /// commit together (on SQLite, one commit instead of one per notification). A crash before
    /// the commit re-processes them all; nothing is lost or applied twice.
    func processAppStore(_ items: [InboxNotification]) async {
        var changes: [AppStoreChange] = []
        for item in items {
            do {
                changes.append(try await appStoreChange(item))
            } catch {
                await recordFailure(of: item, "\(error)")
            }
        }
        guard !changes.isEmpty else { return }
        let now = clock.now()
        let recorder = self.recorder
        let failures: [String: String]
        do {
            failures = try await storage.transaction { [changes] transaction in
                var failures: [String: String] = [:]
                for change in changes {
                    do {
                        try await transaction.savepoint {
                            try await Self.apply(change, recorder: recorder, in: transaction, at: now)
                        }
                    } catch let error as StorageError where error.isRetryable {
                        throw error
                    } catch {
                        failures[change.item.dedupeKey] = "\(error)"
                    }
                }
                return failures
            }
        } catch {
            for change in changes { await recordFailure(of: change.item, "\(error)") }
            return
        }
        for change in changes {
            if let failure = failures[change.item.dedupeKey] {
                await recordFailure(of: change.item, failure)
            } else {
                onProcessed(.appStore, true)
            }
        }
    }

    func appStoreChange(_ item: InboxNotification) async throws -> AppStoreChange {
        let notification = try await verifiedAppStoreNotification(body: item.body)
        let payload = notification.payload
        let event = [payload.notificationType?.rawValue, payload.subtype?.rawValue].compactMap { $0 }.joined(
            separator: "/")
        let cause = ChangeCause(source: "notification", event: event, reference: payload.notificationUUID)
        var observation: AppStoreObservation?
        if let transaction = notification.transaction {
            observation = try AppStoreFacts.observation(
                transaction: transaction, renewalInfo: notification.renewalInfo, status: payload.data?.status,
                observedAt: payload.signedDate ?? transaction.signedDate ?? item.receivedAt,
                catalog: recorder.catalog
            )
        }
        return AppStoreChange(item: item, observation: observation, cause: cause)
    }

    static func apply(
        _ change: AppStoreChange, recorder: PurchaseRecorder, in transaction: any StorageTransaction, at now: Date
    ) async throws {
        switch change.observation {
        case .purchase(let fact)?:
            _ = try await recorder.record(fact, cause: change.cause, in: transaction)
        case .upgradedTransaction(let key, let record)?:
            try await recorder.record(record, of: key, in: transaction)
        case nil:
            break
        }
        try await transaction.updateNotification(change.item.markedProcessed(at: now))
    }
}

extension InboxNotification {
    /// This notification, processed at `now`.
    func markedProcessed(at now: Date) -> InboxNotification {
        var done = self
        done.status = .processed
        done.attempts = attempts + 1
        done.processedAt = now
        done.nextAttemptAt = nil
        done.lastError = nil
        return done
    }
}
