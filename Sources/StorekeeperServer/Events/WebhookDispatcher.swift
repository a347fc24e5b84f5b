import AsyncHTTPClient
public import Foundation
public import Logging
import NIOCore
import NIOHTTP1
public import StoreCore
import Storekeeper
public import StorekeeperStorage
import Synchronization

/// Delivers events to the configured webhook endpoints (docs/events.md, "Delivery"): at least once,
/// each event with its id; a customer's events in order (a later one waits until the earlier one is
/// delivered or dead-lettered); failed attempts retried on ``WebhookSettings/retrySchedule``, then
/// dead-lettered; redirects never followed. Runs as a leased background job, so one instance among
/// those sharing the database delivers at a time.
public final class WebhookDispatcher: Sendable {
    public let settings: WebhookSettings
    let storage: any Storage
    let clock: any WallClock
    let logger: Logger
    let metrics: ServerMetrics?
    /// This instance's ingest: while it is busy, delivery sends one batch per ``busyPause``.
    let ingest: IngestActivity?
    /// Made at the first delivery (a deployment without endpoints never opens one); redirects are
    /// never followed.
    private let httpClient = Mutex<HTTPClient?>(nil)
    /// Keeps this dispatcher's rounds apart (see ``run()``).
    private let rounds = OneAtATime()

    /// What one round did.
    public struct Round: Sendable, Hashable {
        public var sequenced = 0
        public var queued = 0
        public var delivered = 0
        public var failed = 0
        public var deadLettered = 0
    }

    public convenience init(settings: WebhookSettings, storage: any Storage, clock: any WallClock, logger: Logger) {
        self.init(settings: settings, storage: storage, clock: clock, logger: logger, metrics: nil)
    }

    init(
        settings: WebhookSettings, storage: any Storage, clock: any WallClock, logger: Logger, metrics: ServerMetrics?,
        ingest: IngestActivity? = nil
    ) {
        self.ingest = ingest
        self.settings = settings
        self.storage = storage
        self.clock = clock
        self.logger = logger
        self.metrics = metrics
    }

    var client: HTTPClient {
        let timeout = TimeAmount.milliseconds(Int64(max(settings.timeout, 0.001) * 1000))
        return httpClient.withLock { client in
            if let client { return client }
            let made = HTTPClient(
                eventLoopGroupProvider: .singleton,
                configuration: HTTPClient.Configuration(
                    redirectConfiguration: .disallow, timeout: .init(connect: timeout, read: timeout)))
            client = made
            return made
        }
    }

    /// Closes the HTTP client, if one was opened; the next delivery opens another.
    public func shutdown() async throws {
        let client = httpClient.withLock { client in
            defer { client = nil }
            return client
        }
        try await client?.shutdown()
    }

    /// How long delivery waits between batches while this instance's ingest is busy (received or
    /// processed a notification within the last `busyPause`): on a machine whose cores ingest
    /// keeps busy, delivering at full speed would take them from it (the webhook benchmark: ingest
    /// 37–54 % slower). Delivery still goes on, a batch of ``WebhookSettings/concurrency`` per pause,
    /// and catches up once the burst is over; the lag metric shows how far behind it is.
    static let busyPause: Duration = .milliseconds(250)
    static let sequenceBatch = 1000
    static let fanOutBatch = 500

    /// One round: numbers the events committed since the last, queues them for each endpoint that
    /// takes them, and delivers whatever is due now until nothing is. Rounds of one dispatcher run
    /// one after another, the job's and any caller's: two at once both found a delivery due and
    /// sent it, each as its first attempt (a test's round beside the job's first one, started late
    /// on a loaded machine). The job lease keeps other instances' rounds apart.
    @discardableResult
    public func run() async throws -> Round {
        try await rounds.run { try await self.runRound() }
    }

    private func runRound() async throws -> Round {
        var round = Round()
        var enqueued: Enqueued
        // Few transactions per round: on SQLite each one takes turns with ingest on the one writer.
        repeat {
            enqueued = try await enqueueNew()
            round.sequenced += enqueued.sequenced
            round.queued += enqueued.queued
        } while enqueued.more
        let endpoints = enqueued.endpoints
        metrics?.webhookLag(keepingOnly: Set(endpoints.map(\.name)))
        metrics?.webhookEndpoints(existing: enqueued.existing)
        for endpoint in endpoints {
            try await deliverDue(to: endpoint, round: &round)
        }
        return round
    }

    /// On an instance where another holds the delivery job: drops the attempt counters of
    /// endpoints deleted since this instance delivered (the holder's rounds drop its own), rather
    /// than show them until a restart. Reads the endpoints only while this instance shows counters
    /// of endpoints that are not configured (created through the API).
    public func dropMetricsOfDeletedEndpoints() async throws {
        guard let metrics else { return }
        let configured = settings.endpoints
        guard !metrics.attemptEndpointNames.isSubset(of: Self.names(configured: configured, records: [])) else {
            return
        }
        let records = try await storage.read { try await $0.webhookEndpointRecords() }
        metrics.webhookEndpoints(existing: Self.names(configured: configured, records: records))
    }

    /// Every endpoint's name: configured, and created through the API (disabled ones included).
    static func names(configured: [WebhookEndpoint], records: [WebhookEndpointRecord]) -> Set<String> {
        Set(configured.map(\.name)).union(records.map(\.name))
    }

    /// What one `enqueueNew` did, and the endpoints it found.
    struct Enqueued {
        var sequenced = 0
        var queued = 0
        /// More events may be waiting to be numbered or queued.
        var more = false
        /// The endpoints delivered to: configured, and enabled ones created through the API.
        var endpoints: [WebhookEndpoint] = []
        /// The names of every endpoint, disabled ones included.
        var existing: Set<String> = []
    }

    /// In one transaction: reads the endpoints (configured, and enabled ones created through the
    /// API, so a change is picked up at the next round), numbers committed events and queues, for
    /// each endpoint, those after its cursor that it takes, moving the cursor past every event read
    /// (taken or not). Without any endpoint it does nothing more than read them.
    func enqueueNew() async throws -> Enqueued {
        let now = clock.now()
        let configured = settings.endpoints
        let logger = self.logger
        return try await storage.transaction { transaction in
            let records = try await transaction.webhookEndpointRecords()
            var enqueued = Enqueued()
            enqueued.existing = Self.names(configured: configured, records: records)
            enqueued.endpoints = Self.merge(configured: configured, records: records, enabledOnly: true, logger: logger)
            guard !enqueued.endpoints.isEmpty else { return enqueued }
            enqueued.sequenced = try await transaction.sequenceEvents(limit: Self.sequenceBatch)
            enqueued.more = enqueued.sequenced == Self.sequenceBatch
            for endpoint in enqueued.endpoints {
                let name = Self.cursorName(endpoint.name)
                let after = try await transaction.cursor(name).flatMap { Int($0) } ?? 0
                // Filtered and copied inside the database: no event body is read to queue it.
                let (last, read, taken) = try await transaction.enqueueDeliveries(
                    endpoint: endpoint.name, after: after, types: endpoint.eventTypes,
                    environments: endpoint.environments, limit: Self.fanOutBatch, now: now)
                guard let last else { continue }
                try await transaction.setCursor(name, to: String(last))
                enqueued.queued += taken
                if read == Self.fanOutBatch { enqueued.more = true }
            }
            return enqueued
        }
    }

    /// The configured endpoints and those created through the API (a configured one wins a name
    /// both have: the API refuses to create it, but the file may gain it later); with
    /// `enabledOnly`, without the disabled ones.
    static func merge(
        configured: [WebhookEndpoint], records: [WebhookEndpointRecord], enabledOnly: Bool, logger: Logger
    ) -> [WebhookEndpoint] {
        let names = Set(configured.map(\.name))
        return configured
            + records.filter { !names.contains($0.name) && (!enabledOnly || $0.enabled) }.compactMap { record in
                do {
                    return try WebhookEndpoint(record: record)
                } catch {
                    // Validated when written; only a database edited by hand gets here.
                    logger.warning(
                        "webhook endpoint in the database can't be used", metadata: ["endpoint": "\(record.name)"])
                    return nil
                }
            }
    }

    /// The endpoint with this name, configured or created through the API (enabled or not).
    public func endpoint(named name: String) async throws -> WebhookEndpoint? {
        if let configured = settings.endpoint(named: name) { return configured }
        guard let record = try await storage.transaction({ try await $0.webhookEndpointRecord(named: name) }) else {
            return nil
        }
        return Self.merge(configured: [], records: [record], enabledOnly: false, logger: logger).first
    }

    /// Gives positions to committed events (also run by the feed before it reads).
    func sequence() async throws -> Int {
        var total = 0
        while true {
            let count = try await storage.transaction { try await $0.sequenceEvents(limit: Self.sequenceBatch) }
            total += count
            if count < Self.sequenceBatch { return total }
        }
    }

    static func cursorName(_ endpoint: String) -> String { "webhook.\(endpoint)" }

    /// Sends what is due to `endpoint`, a batch at a time, until nothing is due now: each batch's
    /// outcomes are recorded in the transaction that reads the next batch (and, at the end, the lag).
    func deliverDue(to endpoint: WebhookEndpoint, round: inout Round) async throws {
        var outcomes: [(DeliveryAttempt, EventDelivery)] = []
        while true {
            let now = clock.now()
            let limit = max(settings.concurrency, 1)
            let recorded = outcomes
            // Deferred (CommitDurability): an outcome a power cut undoes is only sent again, with
            // the same event id; what is sent was made durable by `enqueueNew`'s flushed commit.
            let (due, oldestPending) = try await storage.transaction(durability: .deferred) { transaction in
                try await transaction.recordDeliveryAttempts(recorded)
                let due = try await transaction.dueDeliveries(endpoint: endpoint.name, now: now, limit: limit)
                let oldest = due.isEmpty ? try await transaction.oldestPendingDelivery(endpoint: endpoint.name) : nil
                return (due, oldest)
            }
            count(recorded, for: endpoint, in: &round)
            if due.isEmpty {
                metrics?.webhookLag(
                    endpoint: endpoint.name, seconds: oldestPending.map { max(now.timeIntervalSince($0), 0) } ?? 0)
                return
            }
            if let ingest, ingest.isBusy(within: Self.busyPause) { try await Task.sleep(for: Self.busyPause) }
            outcomes = await withTaskGroup(of: (DeliveryAttempt, EventDelivery).self) { group in
                for delivery in due { group.addTask { await self.attempt(delivery, to: endpoint) } }
                var outcomes: [(DeliveryAttempt, EventDelivery)] = []
                for await outcome in group { outcomes.append(outcome) }
                return outcomes
            }
        }
    }

    /// Counts recorded outcomes in the round and the metrics.
    func count(_ outcomes: [(DeliveryAttempt, EventDelivery)], for endpoint: WebhookEndpoint, in round: inout Round) {
        for (attempt, delivery) in outcomes {
            switch delivery.status {
            case .delivered:
                round.delivered += 1
            case .dead:
                round.deadLettered += 1
                logger.warning(
                    "webhook delivery dead-lettered after its last retry",
                    metadata: [
                        "endpoint": "\(endpoint.name)", "event": "\(delivery.eventID)",
                        "error": "\(attempt.error ?? attempt.statusCode.map { "HTTP \($0)" } ?? "")",
                    ])
            case .pending:
                round.failed += 1
            }
            metrics?.webhookAttempt(
                endpoint: endpoint.name, status: delivery.status, latency: attempt.latencyMilliseconds)
        }
    }

    /// Sends one delivery and works out its next state; never throws (a failure is an outcome).
    func attempt(_ delivery: EventDelivery, to endpoint: WebhookEndpoint) async -> (DeliveryAttempt, EventDelivery) {
        let timestamp = Int(clock.now().timeIntervalSince1970)
        var request = HTTPClientRequest(url: endpoint.url.absoluteString)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "storekeeper-webhooks")
        request.headers.add(name: "Storekeeper-Event-Id", value: delivery.eventID.uuidString)
        request.headers.add(name: "Storekeeper-Event-Type", value: delivery.eventType.rawValue)
        request.headers.add(
            name: WebhookSignature.headerName,
            value: WebhookSignature.header(timestamp: timestamp, body: delivery.body, secrets: endpoint.secrets))
        request.body = .bytes(ByteBuffer(data: delivery.body))
        let started = ContinuousClock.now
        var statusCode: Int?
        var failure: String?
        do {
            let response = try await client.execute(request, timeout: .milliseconds(Int64(settings.timeout * 1000)))
            statusCode = Int(response.status.code)
            try await Self.drain(response.body, until: started + .seconds(settings.timeout))
            if !(200..<300).contains(Int(response.status.code)) {
                failure =
                    (300..<400).contains(Int(response.status.code))
                    ? "HTTP \(response.status.code): redirects are not followed" : "HTTP \(response.status.code)"
            }
        } catch {
            failure = Self.describe(error)
        }
        let elapsed = ContinuousClock.now - started
        let latency = Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
        let now = clock.now()
        var next = delivery
        next.attempts += 1
        next.lastStatusCode = statusCode
        next.lastError = failure
        if failure == nil {
            next.status = .delivered
            next.deliveredAt = now
            next.nextAttemptAt = nil
        } else if next.attempts > settings.retrySchedule.count {
            next.status = .dead
            next.nextAttemptAt = nil
        } else {
            next.nextAttemptAt = now.addingTimeInterval(settings.retrySchedule[next.attempts - 1])
        }
        let attempt = DeliveryAttempt(
            endpoint: endpoint.name, eventID: delivery.eventID, position: delivery.position, attempt: next.attempts,
            attemptedAt: now, statusCode: statusCode, latencyMilliseconds: latency, error: failure)
        return (attempt, next)
    }

    /// Most of an answer's body read before the connection is given up rather than kept for the next delivery.
    static let answerBodyLimit = 64 * 1024

    /// Reads an answer's body, which means nothing, so that its connection can carry the next
    /// delivery; but no more than ``answerBodyLimit`` bytes, and no chunk after `deadline`. The
    /// request's deadline ends with the head and the read timeout with each chunk, so a receiver
    /// answering with an endless body, or one byte a second, held the endpoint's deliveries for as
    /// long as it went on. Ending the iteration early closes the connection; the answer's status
    /// stands.
    static func drain(_ body: HTTPClientResponse.Body, until deadline: ContinuousClock.Instant) async throws {
        var read = 0
        for try await chunk in body {
            read += chunk.readableBytes
            if read > answerBodyLimit || ContinuousClock.now >= deadline { return }
        }
    }

    /// A failure's cause in a few words: never the body, the URL's query or a secret.
    static func describe(_ error: any Error) -> String {
        if let error = error as? HTTPClientError {
            switch error {
            case .deadlineExceeded, .readTimeout, .connectTimeout: return "timed out"
            case .remoteConnectionClosed: return "connection closed by the receiver"
            default: return "HTTP client error: \(error)"
            }
        }
        return "\(type(of: error)): \(error)"
    }

    // MARK: Operations through the API

    /// Queues one event again for `endpoint`, from its first attempt.
    public func redeliver(_ eventID: UUID, to endpointName: String) async throws {
        guard let endpoint = try await endpoint(named: endpointName) else {
            throw ServerError(.webhookNotFound, "no webhook endpoint named \(endpointName) is configured")
        }
        let now = clock.now()
        _ = try await sequence()
        try await storage.transaction { transaction in
            try await transaction.lockWebhookCursors()
            guard let event = try await transaction.event(id: eventID), event.position != nil else {
                throw ServerError(.eventNotFound, "no event has id \(eventID.uuidString.lowercased())")
            }
            try await transaction.enqueueDeliveries(endpoint: endpoint.name, events: [event], now: now)
        }
    }

    /// Moves `endpoint`'s cursor back to `after` (0: the beginning): every event after it that the
    /// endpoint takes is delivered again, in order.
    public func replay(to endpointName: String, after position: Int) async throws {
        guard let endpoint = try await endpoint(named: endpointName) else {
            throw ServerError(.webhookNotFound, "no webhook endpoint named \(endpointName) is configured")
        }
        try await storage.transaction { transaction in
            try await transaction.lockWebhookCursors()
            try await EventCursor.validate(position, in: transaction)
            try await transaction.setCursor(Self.cursorName(endpoint.name), to: String(position))
        }
    }
}
