import Foundation
import Storekeeper
import Testing

@testable import StorekeeperStorage

/// The event outbox and the delivery queue (migration 9) on each backend.
@Suite(.serialized) struct EventOutboxTests {
    static func event(_ customer: String, _ type: EventType = .purchaseStarted) -> StoredEvent {
        StoredEvent(
            id: UUID(), type: type, customerID: CustomerID(customer), environment: .production,
            orderingKey: "customer:\(customer)", occurredAt: Date(timeIntervalSince1970: 1_767_225_600),
            body: Data(#"{"customer":"\#(customer)"}"#.utf8))
    }

    @Test(arguments: StorageBackend.available)
    func eventsAreNumberedAfterCommitInTheOrderFound(backend: StorageBackend) async throws {
        try await TestDatabase.withFresh(backend) { storage, _ async throws in
            let first = Self.event("a")
            let second = Self.event("b", .balanceChanged)
            try await storage.transaction { try await $0.appendEvents([first, second]) }
            let read = try await storage.transaction { tx async throws in
                #expect(try await tx.events(after: 0, customer: nil, types: [], limit: 10).isEmpty, "unnumbered")
                #expect(try await tx.sequenceEvents(limit: 10) == 2)
                #expect(try await tx.sequenceEvents(limit: 10) == 0)
                return try await tx.events(after: 0, customer: nil, types: [], limit: 10)
            }
            #expect(read.map(\.id) == [first.id, second.id])
            #expect(read.map(\.position) == [1, 2])
            #expect(read[0].body == first.body && read[0].customerID == CustomerID("a"))
            try await storage.transaction { tx async throws in
                #expect(try await tx.events(after: 1, customer: nil, types: [], limit: 10).map(\.id) == [second.id])
                #expect(try await tx.events(after: 0, customer: CustomerID("a"), types: [], limit: 10).count == 1)
                #expect(
                    try await tx.events(after: 0, customer: nil, types: [.balanceChanged], limit: 10).map(\.id)
                        == [second.id])
                #expect(try await tx.eventExists(position: 2))
                #expect(try await !tx.eventExists(position: 3))
                #expect(try await tx.lastEventPosition() == 2)
                #expect(try await tx.event(id: second.id)?.position == 2)
            }
        }
    }

    /// On PostgreSQL an event inserted first may commit last: it must get a position after the
    /// ones a reader has already passed, never below them.
    @Test(.disabled(if: StorageBackend.postgresURL == nil, StorageBackend.skippedPostgresMessage))
    func anEventCommittedLateIsNumberedAfterThoseAlreadyRead() async throws {
        try await TestDatabase.withFresh(.postgresql) { storage, database async throws in
            let other = try await database.open()
            let late = Self.event("late")
            let early = Self.event("early")
            let (inserted, insertedContinuation) = AsyncStream.makeStream(of: Void.self)
            let (release, releaseContinuation) = AsyncStream.makeStream(of: Void.self)
            async let slow: Void = other.transaction { tx async throws in
                try await tx.appendEvents([late])  // takes the lower seq
                insertedContinuation.yield()
                var waiting = release.makeAsyncIterator()
                _ = await waiting.next()
            }
            var started = inserted.makeAsyncIterator()
            _ = await started.next()
            try await storage.transaction { try await $0.appendEvents([early]) }
            let firstRead = try await storage.transaction { tx async throws in
                _ = try await tx.sequenceEvents(limit: 10)
                return try await tx.events(after: 0, customer: nil, types: [], limit: 10)
            }
            #expect(firstRead.map(\.id) == [early.id])
            releaseContinuation.yield()
            try await slow
            let cursor = try #require(firstRead.last?.position)
            let nextRead = try await storage.transaction { tx async throws in
                _ = try await tx.sequenceEvents(limit: 10)
                return try await tx.events(after: cursor, customer: nil, types: [], limit: 10)
            }
            #expect(nextRead.map(\.id) == [late.id], "the late event is after the cursor, not lost below it")
            try await other.close()
        }
    }

    @Test(arguments: StorageBackend.available)
    func deliveriesWaitForTheCustomersEarlierOneAndRecordAttempts(backend: StorageBackend) async throws {
        try await TestDatabase.withFresh(backend) { storage, _ async throws in
            let events = [Self.event("a"), Self.event("a"), Self.event("b")]
            let now = Date(timeIntervalSince1970: 1_767_225_600)
            let numbered = try await storage.transaction { tx async throws in
                try await tx.appendEvents(events)
                _ = try await tx.sequenceEvents(limit: 10)
                let numbered = try await tx.events(after: 0, customer: nil, types: [], limit: 10)
                try await tx.enqueueDeliveries(endpoint: "x", events: numbered, now: now)
                return numbered
            }
            var due = try await storage.transaction { try await $0.dueDeliveries(endpoint: "x", now: now, limit: 10) }
            #expect(due.map(\.position) == [1, 3], "a's second event waits for its first")
            #expect(due[0].body == numbered[0].body)
            var failed = due[0]
            failed.attempts = 1
            failed.nextAttemptAt = now.addingTimeInterval(60)
            failed.lastStatusCode = 503
            let attempt = DeliveryAttempt(
                endpoint: "x", eventID: failed.eventID, position: 1, attempt: 1, attemptedAt: now, statusCode: 503,
                latencyMilliseconds: 12, error: "HTTP 503")
            let failedOnce = failed
            try await storage.transaction { try await $0.recordDeliveryAttempts([(attempt, failedOnce)]) }
            due = try await storage.transaction { try await $0.dueDeliveries(endpoint: "x", now: now, limit: 10) }
            #expect(due.map(\.position) == [3], "not due yet, and a's second still waits")
            var dead = failed
            dead.status = .dead
            dead.nextAttemptAt = nil
            let deadLetter = dead
            try await storage.transaction { try await $0.recordDeliveryAttempts([(attempt, deadLetter)]) }
            due = try await storage.transaction { try await $0.dueDeliveries(endpoint: "x", now: now, limit: 10) }
            #expect(due.map(\.position) == [2, 3], "a dead letter lets the next one go")
            try await storage.transaction { tx async throws in
                #expect(try await tx.deliveryCounts(endpoint: "x") == [.pending: 2, .delivered: 0, .dead: 1])
                #expect(try await tx.deliveryAttempts(endpoint: "x", eventID: nil, limit: 10).count == 2)
                #expect(try await tx.oldestPendingDelivery(endpoint: "x") == now)
                // Queued again (a redelivery): from its first attempt.
                try await tx.enqueueDeliveries(endpoint: "x", events: [numbered[0]], now: now)
                #expect(try await tx.deliveries(endpoint: "x", status: .dead, limit: 10).isEmpty)
            }
        }
    }

    /// A customer's later deliveries wait without a next attempt, out of the due deliveries'
    /// index, until the earlier one is delivered or dead; then the next becomes due at the time of
    /// the attempt that ended it. Behind a receiver that is down, a round so reads each customer's
    /// first delivery only (the `receiver-down` benchmark).
    @Test(arguments: StorageBackend.available)
    func laterDeliveriesWaitWithoutANextAttemptUntilTheEarlierEnds(backend: StorageBackend) async throws {
        try await TestDatabase.withFresh(backend) { storage, _ async throws in
            let now = Date(timeIntervalSince1970: 1_767_225_600)
            let numbered = try await storage.transaction { tx async throws in
                try await tx.appendEvents([Self.event("a"), Self.event("a"), Self.event("a"), Self.event("b")])
                _ = try await tx.sequenceEvents(limit: 10)
                let queued = try await tx.enqueueDeliveries(
                    endpoint: "x", after: 0, types: [], environments: [], limit: 10, now: now)
                #expect(queued.queued == 4)
                return try await tx.events(after: 0, customer: nil, types: [], limit: 10)
            }
            func nextAttempts() async throws -> [Date?] {
                try await storage.transaction { try await $0.deliveries(endpoint: "x", status: nil, limit: 10) }
                    .map(\.nextAttemptAt)
            }
            func due(at time: Date) async throws -> [Int] {
                try await storage.transaction { try await $0.dueDeliveries(endpoint: "x", now: time, limit: 10) }
                    .map(\.position)
            }
            #expect(try await nextAttempts() == [now, nil, nil, now])
            let first = try #require(
                try await storage.transaction { try await $0.dueDeliveries(endpoint: "x", now: now, limit: 10) }.first)
            #expect(first.position == 1)

            let retry = now.addingTimeInterval(60)
            try await storage.transaction {
                try await $0.recordDeliveryAttempts([Self.outcome(first, .pending, at: now, next: retry)])
            }
            #expect(try await nextAttempts() == [retry, nil, nil, now], "a failure leaves the rest waiting")
            #expect(try await due(at: now) == [4])
            #expect(try await due(at: retry) == [1, 4])

            let ended = retry.addingTimeInterval(1)
            try await storage.transaction {
                try await $0.recordDeliveryAttempts([Self.outcome(first, .delivered, at: ended)])
            }
            #expect(
                try await nextAttempts() == [nil, ended, nil, now], "the next waits no more; the one after still does")
            #expect(try await due(at: ended) == [2, 4])

            // Queued again before the customer's pending ones (a redelivery): due at once, and the
            // one already due waits behind it by the order test; one queued again behind an
            // earlier pending one waits.
            try await storage.transaction { tx async throws in
                try await tx.enqueueDeliveries(endpoint: "x", events: [numbered[0], numbered[2]], now: ended)
            }
            #expect(try await nextAttempts() == [ended, ended, nil, now])
            #expect(try await due(at: ended) == [1, 4])
            #expect(try await storage.transaction { try await $0.oldestPendingDelivery(endpoint: "x") } == now)
        }
    }

    /// On PostgreSQL what ends a delivery and what queues one behind it take turns: a delivery
    /// queued as waiting while the one before it was being ended by another transaction, unseen by
    /// each other, would wait for ever.
    @Test(.enabled(if: StorageBackend.postgresURL != nil, StorageBackend.skippedPostgresMessage))
    func aDeliveryQueuedWhileTheOneBeforeItEndsGetsItsTurn() async throws {
        try await TestDatabase.withFresh(.postgresql) { storage, database async throws in
            let now = Date(timeIntervalSince1970: 1_767_225_600)
            let numbered = try await storage.transaction { tx async throws in
                try await tx.appendEvents([Self.event("a"), Self.event("a")])
                _ = try await tx.sequenceEvents(limit: 10)
                let numbered = try await tx.events(after: 0, customer: nil, types: [], limit: 10)
                try await tx.enqueueDeliveries(endpoint: "x", events: [numbered[0]], now: now)
                return numbered
            }
            let first = try #require(
                try await storage.transaction { try await $0.dueDeliveries(endpoint: "x", now: now, limit: 10) }.first)
            let other = try await database.open()
            let (recorded, recordedContinuation) = AsyncStream.makeStream(of: Void.self)
            let (release, releaseContinuation) = AsyncStream.makeStream(of: Void.self)
            async let ending: Void = storage.transaction { tx async throws in
                try await tx.recordDeliveryAttempts([Self.outcome(first, .delivered, at: now)])
                recordedContinuation.yield()
                var waiting = release.makeAsyncIterator()
                _ = await waiting.next()
            }
            var started = recorded.makeAsyncIterator()
            _ = await started.next()
            async let queueing: Void = other.transaction { tx async throws in
                try await tx.enqueueDeliveries(endpoint: "x", events: [numbered[1]], now: now)
            }
            // Time for the queueing transaction to read the first delivery as still pending, were
            // it not held back until the ending one commits.
            try await Task.sleep(for: .milliseconds(300))
            releaseContinuation.yield()
            try await ending
            try await queueing
            try await other.close()
            #expect(
                try await storage.transaction { try await $0.dueDeliveries(endpoint: "x", now: now, limit: 10) }
                    .map(\.position) == [2])
        }
    }

    /// `delivery`'s outcome of an attempt at `time`: `status`, with `next` as its next attempt.
    static func outcome(
        _ delivery: EventDelivery, _ status: EventDelivery.Status, at time: Date, next: Date? = nil
    ) -> (DeliveryAttempt, EventDelivery) {
        var after = delivery
        after.status = status
        after.attempts += 1
        after.nextAttemptAt = next
        after.lastStatusCode = status == .delivered ? 200 : 503
        after.lastError = status == .delivered ? nil : "HTTP 503"
        after.deliveredAt = status == .delivered ? time : nil
        let attempt = DeliveryAttempt(
            endpoint: delivery.endpoint, eventID: delivery.eventID, position: delivery.position,
            attempt: after.attempts, attemptedAt: time, statusCode: after.lastStatusCode, latencyMilliseconds: 5,
            error: after.lastError)
        return (attempt, after)
    }

    /// A round's outcomes are saved together: each delivery's own new state, and the attempts
    /// in the log in the order given.
    @Test(arguments: StorageBackend.available)
    func aRoundsOutcomesAreRecordedTogether(backend: StorageBackend) async throws {
        try await TestDatabase.withFresh(backend) { storage, _ async throws in
            let now = Date(timeIntervalSince1970: 1_767_225_600)
            try await storage.transaction { tx async throws in
                try await tx.appendEvents([Self.event("a"), Self.event("b"), Self.event("c")])
                _ = try await tx.sequenceEvents(limit: 10)
                let numbered = try await tx.events(after: 0, customer: nil, types: [], limit: 10)
                try await tx.enqueueDeliveries(endpoint: "x", events: numbered, now: now)
            }
            let due = try await storage.transaction { try await $0.dueDeliveries(endpoint: "x", now: now, limit: 10) }
            try #require(due.map(\.position) == [1, 2, 3])
            let later = now.addingTimeInterval(60)
            var outcomes: [(DeliveryAttempt, EventDelivery)] = []
            for (delivery, (status, code)) in zip(
                due, [(EventDelivery.Status.delivered, 200), (.pending, 503), (.dead, 410)])
            {
                var next = delivery
                next.status = status
                next.attempts = 1
                next.lastStatusCode = code
                next.lastError = code == 200 ? nil : "HTTP \(code)"
                next.nextAttemptAt = status == .pending ? later : nil
                next.deliveredAt = status == .delivered ? now : nil
                let attempt = DeliveryAttempt(
                    endpoint: "x", eventID: delivery.eventID, position: delivery.position, attempt: 1,
                    attemptedAt: now, statusCode: code, latencyMilliseconds: delivery.position, error: next.lastError)
                outcomes.append((attempt, next))
            }
            let recorded = outcomes
            try await storage.transaction { try await $0.recordDeliveryAttempts(recorded) }
            try await storage.transaction { tx async throws in
                let stored = try await tx.deliveries(endpoint: "x", status: nil, limit: 10)
                #expect(stored.map { $0.withoutBody } == recorded.map { $0.1.withoutBody })
                #expect(try await tx.dueDeliveries(endpoint: "x", now: now, limit: 10).isEmpty)
                #expect(try await tx.dueDeliveries(endpoint: "x", now: later, limit: 10).map(\.position) == [2])
                // Newest first.
                #expect(
                    try await tx.deliveryAttempts(endpoint: "x", eventID: nil, limit: 10)
                        == recorded.map(\.0).reversed())
            }
        }
    }
}

extension EventDelivery {
    /// As ``StorageTransaction/deliveries(endpoint:status:limit:)`` reads it: without the body.
    fileprivate var withoutBody: EventDelivery {
        var delivery = self
        delivery.body = Data()
        return delivery
    }
}
