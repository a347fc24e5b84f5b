public import Foundation
import Logging
import StoreCore
import StorekeeperStorage

/// How long events, delivery attempts and processed store notifications are kept (docs/events.md,
/// "Retention"; docs/configuration.md `retention.*`).
public struct RetentionSettings: Sendable, Hashable {
    /// How long an event is kept after it occurred (nil: forever). An event some endpoint still
    /// has to deliver is kept longer, until it is delivered or dead-lettered.
    public var events: TimeInterval?
    /// How long a delivery attempt stays in the log (nil: forever).
    public var deliveryAttempts: TimeInterval?
    /// How long a processed store notification (with its payload) is kept after it arrived (nil:
    /// forever). Pending and failed ones are kept until processed. The stores redeliver for days
    /// at most; a redelivery after this is stored and applied again, which changes nothing (its
    /// facts are older than what the purchase has).
    public var notifications: TimeInterval?
    /// How often the pruning job runs.
    public var interval: TimeInterval
    /// Rows deleted per transaction (each a short one, taking turns with ingest).
    public var batchSize: Int

    public static let defaultEvents: TimeInterval = 30 * 86_400
    public static let defaultDeliveryAttempts: TimeInterval = 30 * 86_400
    public static let defaultNotifications: TimeInterval = 30 * 86_400

    public init(
        events: TimeInterval? = RetentionSettings.defaultEvents,
        deliveryAttempts: TimeInterval? = RetentionSettings.defaultDeliveryAttempts,
        notifications: TimeInterval? = RetentionSettings.defaultNotifications, interval: TimeInterval = 3_600,
        batchSize: Int = 1_000
    ) {
        self.events = events
        self.deliveryAttempts = deliveryAttempts
        self.notifications = notifications
        self.interval = interval
        self.batchSize = batchSize
    }

    /// Whether anything is ever pruned.
    public var prunes: Bool { events != nil || deliveryAttempts != nil || notifications != nil }
}

/// Deletes events, delivery attempts and processed notifications older than their retention,
/// strictly by age (never an event younger than the retention), in bounded batches through
/// indexes. Never an event an endpoint still has to deliver (at or after the lowest pending
/// delivery, or after an endpoint's cursor), nor the newest event (positions continue from it).
/// Runs as a leased job.
public final class EventPruner: Sendable {
    public let settings: RetentionSettings
    let webhooks: WebhookSettings
    let storage: any Storage
    let clock: any WallClock
    let logger: Logger
    let metrics: ServerMetrics?

    /// What one run deleted.
    public struct Report: Sendable, Hashable {
        public var events: Int
        public var deliveryAttempts: Int
        public var notifications: Int

        public init(events: Int = 0, deliveryAttempts: Int = 0, notifications: Int = 0) {
            self.events = events
            self.deliveryAttempts = deliveryAttempts
            self.notifications = notifications
        }
    }

    init(
        settings: RetentionSettings, webhooks: WebhookSettings, storage: any Storage, clock: any WallClock,
        logger: Logger, metrics: ServerMetrics?
    ) {
        self.settings = settings
        self.webhooks = webhooks
        self.storage = storage
        self.clock = clock
        self.logger = logger
        self.metrics = metrics
    }

    /// Prunes until nothing old enough is left.
    @discardableResult
    public func run() async throws -> Report {
        var report = Report()
        let now = clock.now()
        let batch = max(settings.batchSize, 1)
        /// Batches of `batch` rows older than `retention`, until a batch comes back short.
        func prune(_ retention: TimeInterval?, _ batchBefore: (Date) async throws -> Int) async throws -> Int {
            guard let retention else { return 0 }
            let cutoff = now.addingTimeInterval(-retention)
            var total = 0
            while true {
                let deleted = try await batchBefore(cutoff)
                total += deleted
                if deleted < batch { return total }
            }
        }
        report.events = try await prune(settings.events) { try await pruneEvents(before: $0, limit: batch) }
        report.deliveryAttempts = try await prune(settings.deliveryAttempts) { cutoff in
            try await storage.transaction { try await $0.pruneDeliveryAttempts(attemptedBefore: cutoff, limit: batch) }
        }
        report.notifications = try await prune(settings.notifications) { cutoff in
            try await storage.transaction {
                try await $0.pruneNotifications(processedReceivedBefore: cutoff, limit: batch)
            }
        }
        metrics?.pruned(.events, count: report.events)
        metrics?.pruned(.webhookAttempts, count: report.deliveryAttempts)
        metrics?.pruned(.inbox, count: report.notifications)
        if report != Report() {
            logger.info(
                "pruned events, delivery attempts and processed notifications past their retention",
                metadata: [
                    "events": "\(report.events)", "deliveryAttempts": "\(report.deliveryAttempts)",
                    "notifications": "\(report.notifications)",
                ])
        }
        return report
    }

    /// One batch, in one transaction holding the webhook cursors (a replay or redelivery can't
    /// queue an event this deletes): the bound is the newest event, every endpoint's cursor and
    /// the lowest pending delivery.
    func pruneEvents(before cutoff: Date, limit: Int) async throws -> Int {
        let configured = webhooks.endpoints.map(\.name)
        return try await storage.transaction { transaction in
            try await transaction.lockWebhookCursors()
            var bound = try await transaction.lastEventPosition() - 1
            let names = configured + (try await transaction.webhookEndpointRecords()).map(\.name)
            for name in names {
                let cursor = try await transaction.cursor(WebhookDispatcher.cursorName(name)).flatMap { Int($0) } ?? 0
                bound = min(bound, cursor)
            }
            if let pending = try await transaction.firstPendingDeliveryPosition() {
                bound = min(bound, pending - 1)
            }
            guard bound > 0 else { return 0 }
            return try await transaction.pruneEvents(occurredBefore: cutoff, through: bound, limit: limit)
        }
    }
}
