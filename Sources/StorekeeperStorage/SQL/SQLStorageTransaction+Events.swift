import Foundation
import SQLKit
import Storekeeper

// The outbox (`events`) and the webhook delivery queue and log (migration 9).
extension SQLStorageTransaction {
    static let eventColumns =
        "position, id, type, customer_id, environment, ordering_key, occurred_at, body"

    func storedEvent(from row: any SQLRow) throws -> StoredEvent {
        let reader = RowReader(row: row, table: "events")
        return StoredEvent(
            position: try reader.decodeIfPresent("position", as: Int.self), id: try reader.uuid("id"),
            type: try reader.raw("type", as: EventType.self),
            customerID: try reader.optionalString("customer_id").map { CustomerID($0) },
            environment: try reader.optionalRaw("environment", as: PurchaseEnvironment.self),
            orderingKey: try reader.string("ordering_key"), occurredAt: try reader.date("occurred_at"),
            body: try reader.data("body"))
    }

    func appendEvents(_ events: [StoredEvent]) async throws {
        guard !events.isEmpty, !batch.appendEvents(events) else { return }
        try await beforeStatement(writes: true)
        try await insertEvents(events)
    }

    /// Appends `events` in order, in one statement.
    func insertEvents(_ events: [StoredEvent]) async throws {
        let rows = SQLRows(columnCount: 7, events) { event in
            [
                .text(event.id.uuidString.lowercased()), .text(event.type.rawValue), .text(event.customerID?.rawValue),
                .text(event.environment?.rawValue), .text(event.orderingKey),
                .integer(StoredTime.milliseconds(event.occurredAt)), .blob(event.body),
            ]
        }
        try await execute(
            """
            INSERT INTO events (id, type, customer_id, environment, ordering_key, occurred_at, body)
            \(rows.source(flavor))
            """)
    }

    func sequenceEvents(limit: Int) async throws -> Int {
        guard limit > 0 else { return 0 }
        // PostgreSQL commits in any order, so positions are given by one numbering at a time (under
        // a lock), to rows already committed, above the highest given: never below one a reader
        // has passed. SQLite commits one transaction at a time, in `seq` order, so the same
        // statement numbers the same way there. Joined rather than a subquery per row, which read
        // `next` whole for each: 74 ms against 15 ms for a thousand events on PostgreSQL.
        try await lock("events:sequence")
        let numbered = try await rows(
            """
            WITH next AS (
                SELECT seq AS next_seq,
                       (SELECT COALESCE(MAX(position), 0) FROM events) + ROW_NUMBER() OVER (ORDER BY seq) AS next_position
                FROM events WHERE position IS NULL ORDER BY seq LIMIT \(bind: limit)
            )
            UPDATE events SET position = next.next_position FROM next WHERE events.seq = next.next_seq
            RETURNING seq
            """)
        return numbered.count
    }

    func events(after position: Int, customer: CustomerID?, types: Set<EventType>, limit: Int) async throws
        -> [StoredEvent]
    {
        var conditions: [SQLQueryString] = ["position > \(bind: position)"]
        if let customer { conditions.append("customer_id = \(bind: customer.rawValue)") }
        if !types.isEmpty {
            let list = types.sorted().map { "\(bind: $0.rawValue)" as SQLQueryString }
            conditions.append("type IN (\(list.joined(separator: ", ")))")
        }
        return try await rows(
            """
            SELECT \(unsafeRaw: Self.eventColumns) FROM events
            WHERE \(conditions.joined(separator: " AND "))
            ORDER BY position LIMIT \(bind: max(limit, 0))
            """
        ).map(storedEvent(from:))
    }

    func event(id: UUID) async throws -> StoredEvent? {
        try await row(
            "SELECT \(unsafeRaw: Self.eventColumns) FROM events WHERE id = \(bind: id.uuidString.lowercased())"
        ).map(storedEvent(from:))
    }

    func eventExists(position: Int) async throws -> Bool {
        try await row("SELECT position FROM events WHERE position = \(bind: position)") != nil
    }

    func lastEventPosition() async throws -> Int {
        guard let found = try await row("SELECT CAST(COALESCE(MAX(position), 0) AS BIGINT) AS last FROM events")
        else { return 0 }
        return try RowReader(row: found, table: "events").int("last")
    }

    // MARK: Webhook deliveries

    private static let deliveryColumns = """
        d.endpoint, d.position, d.event_id, d.event_type, d.ordering_key, d.status, d.attempts, d.next_attempt_at,
        d.last_status, d.last_error, d.delivered_at, d.occurred_at
        """

    private func delivery(from row: any SQLRow, withBody: Bool) throws -> EventDelivery {
        let reader = RowReader(row: row, table: "webhook_deliveries")
        return EventDelivery(
            endpoint: try reader.string("endpoint"), position: try reader.int("position"),
            eventID: try reader.uuid("event_id"), eventType: try reader.raw("event_type", as: EventType.self),
            orderingKey: try reader.string("ordering_key"),
            status: try reader.raw("status", as: EventDelivery.Status.self), attempts: try reader.int("attempts"),
            nextAttemptAt: try reader.optionalDate("next_attempt_at"),
            lastStatusCode: try reader.decodeIfPresent("last_status", as: Int.self),
            lastError: try reader.optionalString("last_error"), deliveredAt: try reader.optionalDate("delivered_at"),
            occurredAt: try reader.date("occurred_at"), body: withBody ? try reader.data("body") : Data())
    }

    func enqueueDeliveries(endpoint: String, events: [StoredEvent], now: Date) async throws {
        let numbered = events.compactMap { event in event.position.map { (event, $0) } }
        guard !numbered.isEmpty else { return }
        let given = SQLRows(columnCount: 5, numbered) { event, position in
            [
                .integer(position), .text(event.id.uuidString.lowercased()), .text(event.type.rawValue),
                .text(event.orderingKey), .integer(StoredTime.milliseconds(event.occurredAt)),
            ]
        }
        _ = try await queue(
            "queued (position, id, type, ordering_key, occurred_at) AS (\(given.source(flavor, ordered: false)))",
            for: endpoint, where: [], now: now)
    }

    func enqueueDeliveries(
        endpoint: String, after position: Int, types: Set<EventType>, environments: Set<PurchaseEnvironment>,
        limit: Int, now: Date
    ) async throws -> (lastRead: Int?, read: Int, queued: Int) {
        guard limit > 0 else { return (nil, 0, 0) }
        let page: SQLQueryString = """
            SELECT position, id, type, environment, ordering_key, occurred_at FROM events
            WHERE position > \(bind: position) ORDER BY position LIMIT \(bind: limit)
            """
        let lastRead = try await row(
            "SELECT CAST(MAX(position) AS BIGINT) AS last, CAST(COUNT(*) AS BIGINT) AS read FROM (\(page)) page"
        ).flatMap { found -> (last: Int, read: Int)? in
            let reader = RowReader(row: found, table: "events")
            guard let last = try reader.decodeIfPresent("last", as: Int.self) else { return nil }
            return (last, try reader.int("read"))
        }
        guard let lastRead else { return (nil, 0, 0) }
        var filters: [SQLQueryString] = []
        if !types.isEmpty {
            filters.append(
                "type IN (\(types.sorted().map { "\(bind: $0.rawValue)" as SQLQueryString }.joined(separator: ", ")))")
        }
        if !environments.isEmpty {
            let list = environments.map(\.rawValue).sorted().map { "\(bind: $0)" as SQLQueryString }
            filters.append("(environment IS NULL OR environment IN (\(list.joined(separator: ", "))))")
        }
        let queued = try await queue("queued AS (\(page))", for: endpoint, where: filters, now: now)
        return (lastRead.last, lastRead.read, queued)
    }

    /// Serializes what queues deliveries with what ends them (PostgreSQL; SQLite has one writer):
    /// a delivery queued as waiting behind one that a concurrent transaction is ending would
    /// otherwise never get a next attempt (see ``queue(_:for:where:now:)``).
    private static let deliveryQueueLock = "webhooks:delivery-queue"

    /// Queues the rows of the `WITH` clause `source` (a table `queued` with position, id, type,
    /// ordering_key and occurred_at) that pass `filters`, for `endpoint`, as pending from the first
    /// attempt; returns how many. Each is due at `now` unless an earlier delivery of its ordering
    /// key is pending, already or among these: then it waits without a next attempt, out of
    /// `webhook_deliveries_due_in_order`, until ``recordDeliveryAttempts(_:)`` ends the one before
    /// it. Behind a receiver that is down, a round then reads each customer's first delivery, not
    /// every one queued behind it (325–458 ms a round on PostgreSQL, 72–80 ms on SQLite, with 100,000
    /// queued: `ingest-throughput --receiver-down`).
    private func queue(
        _ source: SQLQueryString, for endpoint: String, where filters: [SQLQueryString], now: Date
    ) async throws -> Int {
        try await lock(Self.deliveryQueueLock)
        // The WHERE before ON CONFLICT is required by SQLite's parser for an upsert from a SELECT.
        return try await rows(
            """
            WITH \(source)
            INSERT INTO webhook_deliveries
                (endpoint, position, event_id, event_type, ordering_key, status, attempts, next_attempt_at, occurred_at)
            SELECT \(bind: endpoint), position, id, type, ordering_key, 'pending', 0,
                CASE WHEN ROW_NUMBER() OVER (PARTITION BY ordering_key ORDER BY position) > 1 OR EXISTS (
                    SELECT 1 FROM webhook_deliveries earlier
                    WHERE earlier.endpoint = \(bind: endpoint) AND earlier.status = 'pending'
                      AND earlier.ordering_key = queued.ordering_key AND earlier.position < queued.position)
                THEN NULL ELSE \(bind: StoredTime.milliseconds(now)) END,
                occurred_at
            FROM queued WHERE \((["TRUE"] + filters).joined(separator: " AND "))
            ON CONFLICT (endpoint, position) DO UPDATE SET
                status = 'pending', attempts = 0, next_attempt_at = excluded.next_attempt_at, last_status = NULL,
                last_error = NULL, delivered_at = NULL
            RETURNING position
            """
        ).count
    }

    func dueDeliveries(endpoint: String, now: Date, limit: Int) async throws -> [EventDelivery] {
        guard limit > 0 else { return [] }
        // A delivery is due only as its customer's earliest pending one. Those queued behind it
        // wait without a next attempt, out of the index (`queue`); one queued again before it (a
        // redelivery or a replay) is in it until then, and this test keeps it waiting. Asked as a scalar
        // subquery, not `NOT EXISTS`: PostgreSQL turns the latter into an anti-join, which without
        // statistics it ran as a nested loop testing every pending row against every other; a
        // scalar subquery stays a search by (customer, position) for each row read. Rows are read
        // in position order from `webhook_deliveries_due_in_order` until the limit (migration 23).
        return try await rows(
            """
            SELECT \(unsafeRaw: Self.deliveryColumns), e.body FROM webhook_deliveries d
            JOIN events e ON e.position = d.position
            WHERE d.endpoint = \(bind: endpoint) AND d.status = 'pending'
              AND d.next_attempt_at <= \(bind: StoredTime.milliseconds(now))
              AND (
                SELECT 1 FROM webhook_deliveries earlier
                WHERE earlier.endpoint = d.endpoint AND earlier.status = 'pending'
                  AND earlier.ordering_key = d.ordering_key AND earlier.position < d.position
                LIMIT 1) IS NULL
            ORDER BY d.position LIMIT \(bind: limit)
            """
        ).map { try delivery(from: $0, withBody: true) }
    }

    func nextDeliveryDue(endpoint: String) async throws -> Date? {
        guard
            let found = try await row(
                """
                SELECT MIN(next_attempt_at) AS due FROM webhook_deliveries
                WHERE endpoint = \(bind: endpoint) AND status = 'pending'
                """)
        else { return nil }
        return try RowReader(row: found, table: "webhook_deliveries").optionalDate("due")
    }

    /// Two statements per chunk of outcomes, however many (a round's are
    /// ``WebhookSettings/concurrency``, 16 by default): two per outcome were most of a delivery
    /// round's round trips to PostgreSQL.
    func recordDeliveryAttempts(_ outcomes: [(DeliveryAttempt, EventDelivery)]) async throws {
        let ending = outcomes.contains { $0.1.status != .pending }
        if ending { try await lock(Self.deliveryQueueLock) }
        for chunk in flavor.statementChunks(outcomes, limit: Self.rowsPerStatement) {
            let states = SQLRows(columnCount: 8, chunk) { _, delivery in
                [
                    .text(delivery.endpoint), .integer(delivery.position), .text(delivery.status.rawValue),
                    .integer(delivery.attempts), .integer(StoredTime.milliseconds(delivery.nextAttemptAt)),
                    .integer(delivery.lastStatusCode), .text(delivery.lastError),
                    .integer(StoredTime.milliseconds(delivery.deliveredAt)),
                ]
            }
            try await run(
                """
                WITH given (endpoint, position, status, attempts, next_attempt_at, last_status, last_error, delivered_at)
                AS (\(states.source(flavor, ordered: false)))
                UPDATE webhook_deliveries SET status = given.status, attempts = given.attempts,
                    next_attempt_at = given.next_attempt_at, last_status = given.last_status,
                    last_error = given.last_error, delivered_at = given.delivered_at
                FROM given
                WHERE webhook_deliveries.endpoint = given.endpoint AND webhook_deliveries.position = given.position
                """)
            let attempts = SQLRows(columnCount: 8, chunk) { attempt, _ in
                [
                    .text(attempt.endpoint), .text(attempt.eventID.uuidString.lowercased()), .integer(attempt.position),
                    .integer(attempt.attempt), .integer(StoredTime.milliseconds(attempt.attemptedAt)),
                    .integer(attempt.statusCode), .integer(attempt.latencyMilliseconds), .text(attempt.error),
                ]
            }
            try await run(
                """
                INSERT INTO webhook_attempts
                    (endpoint, event_id, position, attempt, attempted_at, status_code, latency_ms, error)
                \(attempts.source(flavor))
                """)
            if ending { try await startWaitingDeliveries(after: chunk.filter { $0.1.status != .pending }) }
        }
    }

    /// For each delivery just ended: the first pending delivery of its endpoint and ordering key
    /// after it, if it waits without a next attempt (``queue(_:for:where:now:)``), becomes due at
    /// the time of the round's last attempt. (One queued again before the ended one, by a
    /// redelivery or a replay, already has a next attempt; and one started behind it is still held
    /// by ``dueDeliveries(endpoint:now:limit:)``'s order test.)
    ///
    /// One `UPDATE` per endpoint, by primary key from a list of positions that scalar subqueries
    /// find (on PostgreSQL an array, computed once: the key's condition then goes to the index).
    /// Joined to the ended deliveries, or with `status = 'pending'` on the updated rows, PostgreSQL
    /// with statistics from before a burst (a few pending expected) read every pending delivery
    /// and, for each, the keys again: 0.5 s a round at 5,400 pending in the webhook benchmark. The
    /// first one *after* the ended delivery, rather than the customer's first: PostgreSQL may read
    /// either through an index in position order (its statistics from a burst's start say most
    /// rows are pending), and from the ended one on that reads the recent deliveries, where from
    /// the endpoint's start it read its whole delivered history each time (6 ms a search at 6,000).
    private func startWaitingDeliveries(after ended: [(DeliveryAttempt, EventDelivery)]) async throws {
        let byEndpoint = Dictionary(grouping: ended) { $0.1.endpoint }
        for endpoint in byEndpoint.keys.sorted() {
            let ofEndpoint = byEndpoint[endpoint] ?? []
            guard let at = ofEndpoint.map(\.0.attemptedAt).max() else { continue }
            let keys = SQLRows(columnCount: 2, ofEndpoint) { _, delivery in
                [.text(delivery.orderingKey), .integer(delivery.position)]
            }
            let following: SQLQueryString = """
                SELECT (
                    SELECT MIN(pending.position) FROM webhook_deliveries pending
                    WHERE pending.endpoint = \(bind: endpoint) AND pending.status = 'pending'
                      AND pending.ordering_key = ended.ordering_key AND pending.position > ended.position)
                FROM ended
                """
            let positions: SQLQueryString =
                switch flavor {
                case .postgresql: "= ANY(ARRAY(\(following)))"
                case .sqlite: "IN (\(following))"
                }
            try await run(
                """
                WITH ended (ordering_key, position) AS (\(keys.source(flavor, ordered: false)))
                UPDATE webhook_deliveries SET next_attempt_at = \(bind: StoredTime.milliseconds(at))
                WHERE endpoint = \(bind: endpoint) AND position \(positions) AND next_attempt_at IS NULL
                """)
        }
    }

    func deliveries(endpoint: String, status: EventDelivery.Status?, limit: Int) async throws -> [EventDelivery] {
        let statusCondition: SQLQueryString = status.map { " AND d.status = \(bind: $0.rawValue)" } ?? ""
        return try await rows(
            """
            SELECT \(unsafeRaw: Self.deliveryColumns) FROM webhook_deliveries d
            WHERE d.endpoint = \(bind: endpoint)\(statusCondition)
            ORDER BY d.position LIMIT \(bind: max(limit, 0))
            """
        ).map { try delivery(from: $0, withBody: false) }
    }

    func deliveryAttempts(endpoint: String, eventID: UUID?, limit: Int) async throws -> [DeliveryAttempt] {
        let eventCondition: SQLQueryString =
            eventID.map { " AND event_id = \(bind: $0.uuidString.lowercased())" } ?? ""
        return try await rows(
            """
            SELECT endpoint, event_id, position, attempt, attempted_at, status_code, latency_ms, error
            FROM webhook_attempts WHERE endpoint = \(bind: endpoint)\(eventCondition)
            ORDER BY seq DESC LIMIT \(bind: max(limit, 0))
            """
        ).map { row in
            let reader = RowReader(row: row, table: "webhook_attempts")
            return DeliveryAttempt(
                endpoint: try reader.string("endpoint"), eventID: try reader.uuid("event_id"),
                position: try reader.int("position"), attempt: try reader.int("attempt"),
                attemptedAt: try reader.date("attempted_at"),
                statusCode: try reader.decodeIfPresent("status_code", as: Int.self),
                latencyMilliseconds: try reader.int("latency_ms"), error: try reader.optionalString("error"))
        }
    }

    func deliveryCounts(endpoint: String) async throws -> [EventDelivery.Status: Int] {
        var counts = Dictionary(uniqueKeysWithValues: EventDelivery.Status.allCases.map { ($0, 0) })
        for row in try await rows(
            """
            SELECT status, CAST(COUNT(*) AS BIGINT) AS count FROM webhook_deliveries
            WHERE endpoint = \(bind: endpoint) GROUP BY status
            """)
        {
            let reader = RowReader(row: row, table: "webhook_deliveries")
            counts[try reader.raw("status", as: EventDelivery.Status.self)] = try reader.int("count")
        }
        return counts
    }

    func oldestPendingDelivery(endpoint: String) async throws -> Date? {
        // Over the deliveries with a next attempt only: each customer's earliest pending one has
        // one, and those waiting behind it occurred later, so the oldest is among them. Read whole
        // from `webhook_deliveries_due_in_order`, not all pending deliveries (a scan each round that
        // found nothing due: 39 ms at 100,000 behind a receiver that is down). Not as the lowest
        // position's (`ORDER BY position LIMIT 1`): PostgreSQL read that through any index in
        // position order, filtering, from the oldest delivered one on.
        guard
            let found = try await row(
                """
                SELECT MIN(occurred_at) AS oldest FROM webhook_deliveries
                WHERE endpoint = \(bind: endpoint) AND status = 'pending' AND next_attempt_at IS NOT NULL
                """)
        else { return nil }
        return try RowReader(row: found, table: "webhook_deliveries").optionalDate("oldest")
    }
}
