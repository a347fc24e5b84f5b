import Foundation
import Hummingbird
import HummingbirdTesting
import StoreSimulator
import Storekeeper
import StorekeeperServer
import StorekeeperStorage
import Testing

/// Pruning events and delivery attempts past their retention (docs/events.md, "Retention"), on both
/// backends with the clock injected: strictly by age, in bounded batches, never an event an endpoint
/// still has to deliver, never the newest; a feed cursor that was pruned gets `cursor-expired`.
@Suite struct EventPruningTests {
    static let start = WebhookEndpointRoutesTests.start
    static let day: TimeInterval = 86_400

    /// Appends `count` events of `customer` that occurred at `date`, then numbers them.
    static func append(_ storage: any Storage, _ count: Int, at date: Date, customer: String = "alice")
        async throws
    {
        let events = try (0..<count).map { _ in
            let event = Event(id: UUID(), type: .balanceChanged, occurredAt: date, customerID: CustomerID(customer))
            return StoredEvent(
                id: event.id, type: event.type, customerID: event.customerID, environment: nil,
                orderingKey: event.orderingKey, occurredAt: date, body: try EventWriter.encoder.encode(event))
        }
        try await storage.transaction { try await $0.appendEvents(events) }
        _ = try await storage.transaction { try await $0.sequenceEvents(limit: 10_000) }
    }

    static func positions(_ storage: any Storage) async throws -> [Int] {
        try await storage.transaction { try await $0.events(after: 0, customer: nil, types: [], limit: 10_000) }
            .compactMap(\.position)
    }

    /// A router on a fresh database of `backend`, its application on `clock` with `retention`.
    static func withApplication(
        _ backend: StorageBackend, clock: ManualClock, retention: RetentionSettings,
        configuredEndpoint: Bool = false,
        _ body: @Sendable (any TestClientProtocol, StorekeeperApplication) async throws -> Void
    ) async throws {
        try await backend.withFreshDatabase { url in
            let storage = try await StorageFactory.open(url, logger: TemporaryStorage.quietLogger)
            do {
                try await storage.migrate()
                var configuration = try WebhookEndpointRoutesTests.configuration(storageURL: url)
                if !configuredEndpoint { configuration.webhooks.endpoints = [] }
                configuration.retention = retention
                let application = try StorekeeperApplication(
                    configuration: configuration, storage: storage, clock: clock, logger: TemporaryStorage.quietLogger)
                let app = Application(router: application.makeRouter(), logger: TemporaryStorage.quietLogger)
                try await app.test(.router) { client in try await body(client, application) }
            } catch {
                try? await storage.close()
                throw error
            }
            try await storage.close()
        }
    }

    static func feed(_ client: any TestClientProtocol, after: Int) async throws -> WebhookEndpointRoutesTests.Answer {
        try await WebhookEndpointRoutesTests.call(client, .get, "/v1/events?after=\(after)")
    }

    @Test(arguments: StorageBackend.available) func oldEventsGoStrictlyByAgeInBatchesAndExpiredCursorsSaySo(
        _ backend: StorageBackend
    ) async throws {
        let clock = ManualClock(Self.start)
        let retention = RetentionSettings(events: 30 * Self.day, deliveryAttempts: 30 * Self.day, batchSize: 2)
        try await Self.withApplication(backend, clock: clock, retention: retention) { client, application in
            let storage = application.storage
            try await Self.append(storage, 5, at: Self.start)  // 1...5
            try await Self.append(storage, 2, at: Self.start + 20 * Self.day)  // 6, 7
            try await Self.append(storage, 1, at: Self.start + 10 * Self.day)  // 8: younger than 6 and 7 are not
            try await Self.append(storage, 2, at: Self.start + 40 * Self.day)  // 9, 10

            clock.set(Self.start + 30 * Self.day)  // exactly 30 days after 1...5: not older than the retention
            #expect(try await application.pruner.run() == EventPruner.Report())
            #expect(try await Self.positions(storage) == Array(1...10))

            clock.set(Self.start + 45 * Self.day)
            // 1...5 and 8 are older than 30 days; 6 and 7 (25 days) are not, so 8 waits behind them:
            // what is kept stays one run of positions.
            let report = try await application.pruner.run()
            #expect(report.events == 5)
            #expect(try await Self.positions(storage) == Array(6...10))

            // A cursor that was pruned: a specific error, not an empty page.
            let expired = try await Self.feed(client, after: 3)
            WebhookEndpointRoutesTests.expectError(expired, .cursorExpired)
            #expect(expired.text.contains("after=0"))
            WebhookEndpointRoutesTests.expectError(try await Self.feed(client, after: 99), .unknownCursor)
            let fromStart = try await Self.feed(client, after: 0)
            #expect(
                (fromStart.json["events"] as? [[String: Any]])?.compactMap { $0["position"] as? Int } == Array(6...10))
            WebhookEndpointRoutesTests.expectError(try await Self.feed(client, after: 5), .cursorExpired)
            #expect(try await Self.feed(client, after: 6).status == .ok)

            // Later everything but the newest is old: the newest stays, positions go on from it.
            clock.set(Self.start + 200 * Self.day)
            #expect(try await application.pruner.run().events == 4)
            #expect(try await Self.positions(storage) == [10])
            try await Self.append(storage, 1, at: clock.now())
            #expect(try await Self.positions(storage) == [10, 11])

            let metrics = try await client.execute(uri: "/metrics", method: .get) { String(buffer: $0.body) }
            #expect(metrics.contains(#"storekeeper_pruned_rows_total{table="events"} 9"#), "\(metrics)")
        }
    }

    @Test(arguments: StorageBackend.available) func eventsAnEndpointStillHasToDeliverAreKept(_ backend: StorageBackend)
        async throws
    {
        let clock = ManualClock(Self.start)
        let retention = RetentionSettings(events: 30 * Self.day, deliveryAttempts: nil)
        try await Self.withApplication(backend, clock: clock, retention: retention, configuredEndpoint: true) {
            client, application in
            let storage = application.storage
            try await Self.append(storage, 6, at: Self.start, customer: "alice")  // 1...6
            clock.set(Self.start + 60 * Self.day)
            // The configured endpoint has read nothing yet (its cursor is at 0): nothing goes.
            #expect(try await application.pruner.run().events == 0)

            // It reads through 4 and has 3 pending (a retry far off): 1 and 2 go, 3 on stays.
            try await storage.transaction { transaction in
                let events = try await transaction.events(after: 0, customer: nil, types: [], limit: 4)
                try await transaction.enqueueDeliveries(endpoint: "configured", events: events, now: Self.start)
                try await transaction.setCursor("webhook.configured", to: "4")
                for event in events where event.position != 3 {
                    try await transaction.recordDeliveryAttempts([
                        (
                            DeliveryAttempt(
                                endpoint: "configured", eventID: event.id, position: event.position ?? 0, attempt: 1,
                                attemptedAt: Self.start, statusCode: 200, latencyMilliseconds: 1, error: nil),
                            EventDelivery(
                                endpoint: "configured", position: event.position ?? 0, eventID: event.id,
                                eventType: event.type, orderingKey: event.orderingKey, status: .delivered, attempts: 1,
                                nextAttemptAt: nil, deliveredAt: Self.start, occurredAt: event.occurredAt)
                        )
                    ])
                }
            }
            #expect(try await application.pruner.run().events == 2)
            #expect(try await Self.positions(storage) == [3, 4, 5, 6])
            // Their delivery rows went with them; the pending one stays.
            let deliveries = try await storage.transaction {
                try await $0.deliveries(endpoint: "configured", status: nil, limit: 100)
            }
            #expect(deliveries.map(\.position) == [3, 4])

            // An endpoint created through the API that has read nothing holds everything too.
            _ = try await application.webhookEndpoints.create(.init(name: "late", url: "https://late.example/in"))
            try await storage.transaction { transaction in
                try await transaction.setCursor("webhook.configured", to: "6")
                let pending = try #require(
                    try await transaction.deliveries(endpoint: "configured", status: .pending, limit: 10).first)
                var delivered = pending
                delivered.status = .delivered
                delivered.attempts = 1
                delivered.nextAttemptAt = nil
                try await transaction.recordDeliveryAttempts([
                    (
                        DeliveryAttempt(
                            endpoint: "configured", eventID: pending.eventID, position: pending.position, attempt: 1,
                            attemptedAt: Self.start, statusCode: 200, latencyMilliseconds: 1, error: nil),
                        delivered
                    )
                ])
            }
            #expect(try await application.pruner.run().events == 0)
            // Once it has read through 5, everything up to 5 goes (6 is the newest).
            try await storage.transaction { try await $0.setCursor("webhook.late", to: "5") }
            #expect(try await application.pruner.run().events == 3)
            #expect(try await Self.positions(storage) == [6])

            // Redelivering or replaying to a pruned event is refused by name.
            WebhookEndpointRoutesTests.expectError(
                try await WebhookEndpointRoutesTests.call(client, .post, "/v1/webhooks/late/replay", #"{"after": 2}"#),
                .cursorExpired)
        }
    }

    @Test(arguments: StorageBackend.available) func oldDeliveryAttemptsGo(_ backend: StorageBackend) async throws {
        let clock = ManualClock(Self.start)
        let retention = RetentionSettings(events: nil, deliveryAttempts: 7 * Self.day, batchSize: 3)
        try await Self.withApplication(backend, clock: clock, retention: retention, configuredEndpoint: true) {
            _, application in
            let storage = application.storage
            try await Self.append(storage, 1, at: Self.start)
            let event = try #require(try await Self.positions(storage).first)
            try await storage.transaction { transaction in
                for attempt in 1...8 {
                    try await transaction.recordDeliveryAttempts([
                        (
                            DeliveryAttempt(
                                endpoint: "configured", eventID: UUID(), position: event, attempt: attempt,
                                attemptedAt: Self.start + Double(attempt) * Self.day, statusCode: 503,
                                latencyMilliseconds: 1, error: "HTTP 503"),
                            EventDelivery(
                                endpoint: "configured", position: event, eventID: UUID(), eventType: .balanceChanged,
                                orderingKey: "customer:alice", nextAttemptAt: nil, occurredAt: Self.start)
                        )
                    ])
                }
            }
            clock.set(Self.start + 12 * Self.day)  // attempts 1...4 are more than 7 days old
            let report = try await application.pruner.run()
            #expect(report == EventPruner.Report(events: 0, deliveryAttempts: 4))
            let left = try await storage.transaction {
                try await $0.deliveryAttempts(endpoint: "configured", eventID: nil, limit: 100)
            }
            #expect(left.map(\.attempt).sorted() == [5, 6, 7, 8])
            #expect(try await Self.positions(storage) == [event])  // events: kept forever
        }
    }

    /// Processed notifications go after `retention.notifications`, in batches; one still to do
    /// stays; with the retention off (nil) nothing goes.
    @Test(arguments: StorageBackend.available) func processedNotificationsGoAfterTheirRetention(
        _ backend: StorageBackend
    ) async throws {
        let clock = ManualClock(Self.start)
        for kept in [30 * Self.day, nil] {
            let retention = RetentionSettings(events: nil, deliveryAttempts: nil, notifications: kept, batchSize: 2)
            try await Self.withApplication(backend, clock: clock, retention: retention) { _, application in
                let storage = application.storage
                let notifications = (0..<6).map { day in
                    InboxNotification(
                        store: .appStore, dedupeKey: "n-\(day)", body: Data("{}".utf8),
                        receivedAt: Self.start + Double(day) * Self.day)
                }
                try await storage.transaction { transaction in
                    _ = try await transaction.insertNotifications(notifications)
                    // n-0 stays pending: never pruned, whatever its age.
                    try await transaction.markNotificationsProcessed(Array(notifications.dropFirst()), at: Self.start)
                }
                clock.set(Self.start + 33.5 * Self.day)  // n-0…n-3 arrived more than 30 days ago
                let report = try await application.pruner.run()
                let left = try await storage.transaction { transaction in
                    try await transaction.notificationCounts()
                }
                if kept == nil {
                    #expect(report == EventPruner.Report())
                    #expect(left[.processed] == 5)
                } else {
                    #expect(report == EventPruner.Report(notifications: 3))
                    #expect(left[.processed] == 2)
                }
                #expect(left[.pending] == 1)
                clock.set(Self.start)
            }
        }
    }
}
