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
    @discardableResult
    public func processDue(limit: Int = 50) async throws -> Int {
        let now = clock.now()
        let lease = settings.lease
        let claimed = try await storage.transaction { transaction in
            try await transaction.claimDueNotifications(now: now, limit: limit, lease: lease)
        }
        for item in claimed { await process(item) }
        return claimed.count
    }

    /// Processes one stored notification: its effects and its `processed` mark are committed in one
    /// transaction, so a crash in between re-processes it rather than losing it or applying it twice.
    func process(_ item: InboxNotification) async {
        do {
            switch item.store {
            case .appStore: try await processAppStore(item)
            case .googlePlay: try await processGooglePlay(item)
            }
            onProcessed(item.store, true)
        } catch {
            onProcessed(item.store, false)
            let attempts = item.attempts + 1
            let delay = min(settings.initialRetryDelay * pow(2, Double(attempts - 1)), settings.maxRetryDelay)
            var failed = item
            failed.status = .failed
            failed.attempts = attempts
            failed.lastError = "\(error)"
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
    }

    func processAppStore(_ item: InboxNotification) async throws {
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
        let now = clock.now()
        let recorder = self.recorder
        try await storage.transaction { [observation] transaction in
            switch observation {
            case .purchase(let fact)?:
                _ = try await recorder.record(fact, cause: cause, in: transaction)
            case .upgradedTransaction(let key, let record)?:
                try await recorder.record(record, of: key, in: transaction)
            case nil:
                break
            }
            try await transaction.updateNotification(item.markedProcessed(at: now))
        }
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
