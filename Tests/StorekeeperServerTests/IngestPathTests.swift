import AppStoreServer
import AsyncHTTPClient
import Foundation
import NIOCore
import SQLKit
import StoreSimulator
import Storekeeper
import Synchronization
import Testing

@testable import StorekeeperServer
@testable import StorekeeperStorage

/// The ingest path's own rules: what the webhook verified is stored and processing works from it;
/// concurrent deliveries are committed together, each still answered only once durable; a batch
/// in which one notification fails to apply commits the others.
@Suite struct IngestPathTests {
    /// A batch large enough for every test here, and a worker that only runs when woken by the
    /// webhook route (the tests below store through the inbox itself and process by hand).
    static let processing = ProcessingSettings(
        initialRetryDelay: 0.05, maxRetryDelay: 1, pollInterval: 3600, catchUp: CatchUpSettings(enabled: false),
        batchSize: 50, workers: 1)

    /// `count` consumable purchases made in the simulator but not sent: their signed payloads.
    static func unsentPurchases(_ h: ServerHarness, customer: String, count: Int) async throws -> [(
        transactionID: String, payload: String
    )] {
        let store = h.simulator.appStore
        try store.setNotificationURL(nil, bundleId: ServerHarness.bundleID)
        let token = try await h.createCustomer(customer)
        var purchases: [(String, String)] = []
        for _ in 0..<count {
            let bought = try store.purchase(customer: customer, product: "coins.100", appAccountToken: token)
            guard let sent = store.notifications.last else { throw IngestTestError("no notification was made") }
            purchases.append((bought.transactionId, sent.signedPayload))
        }
        return purchases
    }

    static func body(_ payload: String) -> Data { Data(#"{"signedPayload":"\#(payload)"}"#.utf8) }

    @Test(arguments: StorageBackend.available) func processingUsesWhatTheWebhookVerified(_ backend: StorageBackend)
        async throws
    {
        try await ServerHarness.run(on: backend, processing: Self.processing) { h in
            let payload = try await Self.unsentPurchases(h, customer: "vera", count: 1)[0].payload
            let inbox = h.application.inbox
            #expect(try await inbox.receive(.appStore, WebhookDelivery(body: Self.body(payload))) == .stored)
            let stored = try #require(
                try await h.storage.transaction { transaction in
                    try await transaction.notifications(status: .pending, limit: 10).first
                })
            let kept = try #require(stored.verified, "the webhook kept nothing it verified")

            // What was kept is enough: a row whose body no longer verifies (here: is not even JSON)
            // reads the same as the real one, so processing did not verify the body again.
            let adapter = h.application.stores(.appStore)
            var unverifiable = stored
            unverifiable.body = Data("not a notification".utf8)
            let fromKept = try await adapter.interpret(unverifiable)
            // A row stored before anything was kept (or whose record can't be read) is verified
            // from its body, and reads the same.
            var old = stored
            old.verified = nil
            let fromBody = try await adapter.interpret(old)
            #expect(fromKept == fromBody)
            // The first read of the kept record took this process's decoded notification
            // (RecentlyVerified); a second decodes the record, and reads the same.
            #expect(try await adapter.interpret(stored) == fromKept)
            #expect(fromKept.observations.count == 1)
            // Without either, nothing is made up: the body is verified, and refused.
            unverifiable.verified = nil
            await #expect(throws: ServerError.self) { try await adapter.interpret(unverifiable) }
            // The record holds the decoded payloads, not the signed strings they came from: the
            // notification as verified, without them (its nested payloads go in as signed).
            let appStore = try #require(adapter as? AppStoreAdapter)
            let verified = try await appStore.verifiedNotification(body: stored.body)
            #expect(verified.transaction != nil)
            #expect(VerifiedNotificationRecord.decode(kept) == verified.withoutSignedFields)
            #expect(kept.count < stored.body.count)
            #expect(!String(decoding: kept, as: UTF8.self).contains("signedTransactionInfo\":\"ey"))

            try await inbox.processUntilNoneDue()
            #expect(try await h.balances("vera")["coins"] == 100)
        }
    }

    /// An App Store body is stored with its certificate chain once and its tokens decoded
    /// (`StoredNotificationBody`): under a third of its size, in its row on PostgreSQL (migration 19:
    /// nothing in the TOAST table), and read back byte for byte, so that it still verifies.
    @Test(arguments: StorageBackend.available) func aBodyIsStoredWithItsChainOnceAndReadBackAsReceived(
        _ backend: StorageBackend
    ) async throws {
        try await ServerHarness.run(on: backend, processing: Self.processing) { h in
            let body = Self.body(try await Self.unsentPurchases(h, customer: "una", count: 1)[0].payload)
            #expect(try await h.application.inbox.receive(.appStore, WebhookDelivery(body: body)) == .stored)
            let stored = try #require(
                try await h.storage.transaction { try await $0.notifications(status: .pending, limit: 10).first })
            #expect(stored.body == body)
            let (size, outOfLine) = try await h.storage.transaction { transaction -> (Int, Int) in
                let database = try #require((transaction as? SQLStorageTransaction)?.database)
                let length = backend == .sqlite ? "length" : "octet_length"
                let size = try #require(
                    try await database.raw(
                        """
                        SELECT CAST(\(unsafeRaw: length)(body) AS BIGINT) AS size FROM inbox_payloads
                        WHERE dedupe_key = \(bind: stored.dedupeKey)
                        """
                    ).first()?.decode(column: "size", as: Int.self))
                guard backend == .postgresql else { return (size, 0) }
                let toast = try #require(
                    try await database.raw(
                        """
                        SELECT CAST(pg_relation_size(reltoastrelid) AS BIGINT) AS size FROM pg_class
                        WHERE relname = 'inbox_payloads'
                        """
                    ).first()?.decode(column: "size", as: Int.self))
                return (size, toast)
            }
            #expect(size * 3 < body.count, "\(size) bytes stored for a body of \(body.count)")
            #expect(outOfLine == 0, "PostgreSQL moved the body out of its row")
            // Verified again from the body as read back, as a notification stored without a
            // kept record is.
            var withoutRecord = stored
            withoutRecord.verified = nil
            #expect(try await h.application.stores(.appStore).interpret(withoutRecord).observations.count == 1)
        }
    }

    /// A claim reads a notification's kept record instead of its body (~8.6 KB for the App Store,
    /// read back for nothing), and the body only where nothing was kept; a record that cannot be
    /// read has the notification read whole and verified from its body.
    @Test(arguments: StorageBackend.available) func aClaimReadsTheKeptRecordInsteadOfTheBody(
        _ backend: StorageBackend
    ) async throws {
        try await ServerHarness.run(on: backend, processing: Self.processing) { h in
            let payloads = try await Self.unsentPurchases(h, customer: "ida", count: 2).map(\.payload)
            let inbox = h.application.inbox
            #expect(try await inbox.receive(.appStore, WebhookDelivery(body: Self.body(payloads[0]))) == .stored)
            let kept = try #require(
                try await h.storage.transaction { try await $0.notifications(status: .pending, limit: 10).first })
            // As stored before records were kept.
            let old = InboxNotification(
                store: .appStore, dedupeKey: "stored-before-records", body: Self.body(payloads[1]),
                receivedAt: inbox.clock.now())
            _ = try await h.storage.transaction { try await $0.insertNotification(old) }

            let claimed = try await h.storage.transaction { transaction in
                try await transaction.lockDueNotifications(now: inbox.clock.now(), limit: 10)
            }
            let withRecord = try #require(claimed.first { $0.dedupeKey == kept.dedupeKey })
            #expect(!withRecord.bodyWasRead && withRecord.body.isEmpty)
            #expect(withRecord.verified == kept.verified)
            let withoutRecord = try #require(claimed.first { $0.dedupeKey == old.dedupeKey })
            #expect(withoutRecord.bodyWasRead && withoutRecord.body == old.body)
            // Read by key, a notification is whole.
            let whole = try await h.storage.transaction {
                try await $0.notification(store: .appStore, dedupeKey: kept.dedupeKey)
            }
            #expect(whole?.bodyWasRead == true && whole?.body == kept.body)

            // A kept record that cannot be read (nor is this process's decoded notification, which
            // it no longer matches): the adapter asks for the body, and gets it.
            try await h.storage.transaction { transaction in
                let database = try #require((transaction as? SQLStorageTransaction)?.database)
                try await database.raw(
                    "UPDATE inbox_payloads SET verified = \(bind: Data("not a record".utf8)) WHERE dedupe_key = \(bind: kept.dedupeKey)"
                ).run()
            }
            let withUnreadableRecord = try #require(
                try await h.storage.transaction { transaction in
                    try await transaction.lockDueNotifications(now: inbox.clock.now(), limit: 10)
                }.first { $0.dedupeKey == kept.dedupeKey })
            let adapter = h.application.stores(.appStore)
            await #expect(throws: BodyNotRead.self) { try await adapter.interpret(withUnreadableRecord) }
            // Read whole wherever the inbox interprets it: in the claiming transaction, or after
            // it (a leased notification), as here.
            let change = try await NotificationInbox.interpret(withUnreadableRecord, with: adapter) {
                try await h.storage.read { try await $0.notification(store: .appStore, dedupeKey: kept.dedupeKey) }
            }
            #expect(change.observations.count == 1)
            await #expect(throws: BodyNotRead.self) {
                try await NotificationInbox.interpret(withUnreadableRecord, with: adapter) { nil }
            }
            try await inbox.processUntilNoneDue()
            let counts = try await h.storage.transaction { try await $0.notificationCounts() }
            #expect(counts[.processed] == 2 && (counts[.failed] ?? 0) == 0)
            #expect(try await h.balances("ida")["coins"] == 200)
        }
    }

    /// An App Store notification is interpreted from what the webhook verified, with no API call:
    /// it is claimed, applied and marked processed in one transaction, its claim a row lock, with
    /// no lease written first (a lease was a transaction and a row update of its own per batch).
    @Test(arguments: StorageBackend.available) func appStoreNotificationsAreAppliedWhereTheyAreClaimedWithoutALease(
        _ backend: StorageBackend
    ) async throws {
        try await ServerHarness.run(on: backend, processing: Self.processing) { h in
            let purchases = try await Self.unsentPurchases(h, customer: "lea", count: 6)
            // Every lease of a pending notification is logged by the database itself.
            try await h.storage.transaction { transaction in
                let database = try #require((transaction as? SQLStorageTransaction)?.database)
                try await database.raw("CREATE TABLE leases_written (dedupe_key TEXT NOT NULL)").run()
                switch h.storage.backend {
                case .sqlite:
                    try await database.raw(
                        """
                        CREATE TRIGGER log_leases AFTER UPDATE OF next_attempt_at ON inbox
                        WHEN NEW.status = 'pending' BEGIN INSERT INTO leases_written VALUES (NEW.dedupe_key); END
                        """
                    ).run()
                case .postgresql:
                    try await database.raw(
                        """
                        CREATE FUNCTION log_leases() RETURNS trigger AS $$
                        BEGIN INSERT INTO leases_written VALUES (NEW.dedupe_key); RETURN NEW; END $$ LANGUAGE plpgsql
                        """
                    ).run()
                    try await database.raw(
                        """
                        CREATE TRIGGER log_leases AFTER UPDATE OF next_attempt_at ON inbox
                        FOR EACH ROW WHEN (NEW.status = 'pending') EXECUTE FUNCTION log_leases()
                        """
                    ).run()
                }
            }
            let inbox = h.application.inbox
            for purchase in purchases {
                _ = try await inbox.receive(.appStore, WebhookDelivery(body: Self.body(purchase.payload)))
            }
            func leasesWritten() async throws -> Int {
                try await h.storage.transaction { transaction in
                    let database = try #require((transaction as? SQLStorageTransaction)?.database)
                    return try await database.raw("SELECT dedupe_key FROM leases_written").all().count
                }
            }
            // The log works: a lease (what a claim for work outside the transaction writes), due at once.
            try await h.storage.transaction { transaction in
                let due = try await transaction.lockDueNotifications(now: inbox.clock.now(), limit: 1)
                _ = try await transaction.leaseNotifications(due, until: inbox.clock.now())
            }
            #expect(try await leasesWritten() == 1)

            #expect(try await inbox.processDue(limit: 50) == 6)
            #expect(try await leasesWritten() == 1, "processing leased App Store notifications")
            let counts = try await h.storage.transaction { try await $0.notificationCounts() }
            #expect(counts[.processed] == 6)
            #expect(try await h.balances("lea")["coins"] == 600)
        }
    }

    @Test(arguments: StorageBackend.available) func concurrentDeliveriesAreEachStoredOnceAndAnsweredWhenDurable(
        _ backend: StorageBackend
    ) async throws {
        try await ServerHarness.run(on: backend, processing: Self.processing) { h in
            let purchases = try await Self.unsentPurchases(h, customer: "gus", count: 24)
            // Every payload twice, all at once: the second of each is a duplicate wherever it lands
            // (in the same group commit as the first, or a later one).
            let deliveries = purchases.map(\.payload) + purchases.map(\.payload)
            let url = h.baseURL + "/v1/notifications/app-store"
            let statuses = try await withThrowingTaskGroup(of: UInt.self) { group in
                for payload in deliveries {
                    group.addTask {
                        var request = HTTPClientRequest(url: url)
                        request.method = .POST
                        request.headers.add(name: "Content-Type", value: "application/json")
                        request.body = .bytes(ByteBuffer(data: Self.body(payload)))
                        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
                        _ = try await response.body.collect(upTo: 1 << 16)
                        return response.status.code
                    }
                }
                return try await group.reduce(into: [UInt]()) { $0.append($1) }
            }
            #expect(statuses.count == 48 && statuses.allSatisfy { $0 == 200 })
            try await h.settle()
            let counts = try await h.storage.transaction { try await $0.notificationCounts() }
            #expect(counts[.processed] == 24 && counts[.pending] == 0 && counts[.failed] == 0)
            #expect(try await h.balances("gus")["coins"] == 2_400)
        }
    }

    /// Concurrent webhooks' inserts run as many at once as the storage asks (on PostgreSQL one per
    /// server, each a statement the database plans, locks and commits; on SQLite two, so the next
    /// is written while the last one's commit is flushed), however many webhooks wait.
    @Test(arguments: StorageBackend.available) func concurrentDeliveriesAreInsertedAsManyAtOnceAsTheStorageAsks(
        _ backend: StorageBackend
    ) async throws {
        try await ServerHarness.run(on: backend, processing: Self.processing) { h in
            let purchases = try await Self.unsentPurchases(h, customer: "oli", count: 24)
            let storage = InsertCountingStorage(h.storage)
            let served = h.application.inbox
            let inbox = NotificationInbox(
                storage: storage, recorder: served.recorder, stores: served.stores, settler: served.settler,
                settings: served.settings, clock: served.clock, logger: served.logger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for purchase in purchases {
                    group.addTask {
                        let receipt = try await inbox.receive(
                            .appStore, WebhookDelivery(body: Self.body(purchase.payload)))
                        #expect(receipt == .stored)
                    }
                }
                try await group.waitForAll()
            }
            let (most, inserts) = storage.insertsSeen
            #expect(most == h.storage.notificationInsertsAtOnce, "at most \(most) at once in \(inserts) inserts")
            #expect(inserts < purchases.count, "no webhook waited for another's insert")
            let counts = try await h.storage.read { try await $0.notificationCounts() }
            #expect(counts[.pending] == purchases.count)
        }
    }

    @Test(arguments: StorageBackend.available) func oneNotificationFailingToApplyFailsAloneInItsBatch(
        _ backend: StorageBackend
    ) async throws {
        try await ServerHarness.run(on: backend, processing: Self.processing) { h in
            let purchases = try await Self.unsentPurchases(h, customer: "ida", count: 5)
            let poisoned = purchases[2].transactionID
            // The database itself refuses to store that one purchase: a failure in the middle of
            // applying the batch, after the notifications before it were applied.
            try await h.storage.transaction { transaction in
                let database = try #require((transaction as? SQLStorageTransaction)?.database)
                switch h.storage.backend {
                case .sqlite:
                    try await database.raw(
                        """
                        CREATE TRIGGER refuse_poisoned BEFORE INSERT ON purchases
                        WHEN NEW.id = \(literal: poisoned) BEGIN SELECT RAISE(ABORT, 'refused by test'); END
                        """
                    ).run()
                case .postgresql:
                    try await database.raw(
                        """
                        CREATE FUNCTION refuse_poisoned() RETURNS trigger AS $$
                        BEGIN IF NEW.id = \(literal: poisoned) THEN RAISE EXCEPTION 'refused by test'; END IF;
                        RETURN NEW; END $$ LANGUAGE plpgsql
                        """
                    ).run()
                    try await database.raw(
                        """
                        CREATE TRIGGER refuse_poisoned BEFORE INSERT ON purchases
                        FOR EACH ROW EXECUTE FUNCTION refuse_poisoned()
                        """
                    ).run()
                }
            }
            let inbox = h.application.inbox
            for purchase in purchases {
                _ = try await inbox.receive(.appStore, WebhookDelivery(body: Self.body(purchase.payload)))
            }
            #expect(try await inbox.processDue(limit: 50) == 5)

            let failed = try await h.storage.transaction { try await $0.notifications(status: .failed, limit: 10) }
            #expect(failed.count == 1)
            #expect(failed.first?.lastError?.contains("refused by test") == true)
            let counts = try await h.storage.transaction { try await $0.notificationCounts() }
            #expect(counts[.processed] == 4)
            #expect(try await h.balances("ida")["coins"] == 400)
        }
    }
}

extension IngestPathTests {
    /// A claim takes what is due when it begins, not what was due when it was asked for: a worker's
    /// loop may wait for its turn while webhooks are stored, and ``NotificationWorker`` wakes no
    /// other loop meanwhile, counting on that claim to take them.
    @Test(arguments: StorageBackend.available) func aClaimTakesWhatIsDueWhenItBegins(_ backend: StorageBackend)
        async throws
    {
        try await ServerHarness.run(on: backend, processing: Self.processing) { h in
            let purchases = try await Self.unsentPurchases(h, customer: "nils", count: 3)
            let inbox = h.application.inbox
            let clock = h.simulator.clock
            let dueAt = clock.now().addingTimeInterval(30)
            try await h.storage.transaction { transaction in
                for (index, purchase) in purchases.enumerated() {
                    _ = try await transaction.insertNotification(
                        InboxNotification(
                            store: .appStore, dedupeKey: "due-later-\(index)", body: Self.body(purchase.payload),
                            receivedAt: clock.now(), nextAttemptAt: dueAt))
                }
            }
            // Asked for before they are due; due by the time the claim begins.
            #expect(try await inbox.processDue(limit: 50) { clock.advance(by: 30) } == purchases.count)
            #expect(try await h.balances("nils")["coins"] == 300)
        }
    }

    /// However large the batch, it leases at most ``NotificationInbox/leasedPerBatch`` of the
    /// notifications that need a store API call (each a call after the commit, one after another,
    /// within one lease); the rest stay due, untouched, for the next claim.
    @Test(arguments: StorageBackend.available) func aBatchLeasesNoMoreThanItsAPICallsHaveTimeFor(
        _ backend: StorageBackend
    ) async throws {
        try await ServerHarness.run(on: backend, processing: Self.processing) { h in
            let inbox = h.application.inbox
            let extra = 10
            let count = NotificationInbox.leasedPerBatch + extra
            try await h.storage.transaction { transaction in
                for index in 0..<count {
                    // Not a push Google's adapter can read: each leased one fails when interpreted.
                    _ = try await transaction.insertNotification(
                        InboxNotification(
                            store: .googlePlay, dedupeKey: "push-\(index)", body: Data("{}".utf8),
                            receivedAt: inbox.clock.now()))
                }
            }
            #expect(try await inbox.processDue(limit: 4 * count) == count)
            let (failed, untouched) = try await h.storage.transaction { transaction in
                (
                    try await transaction.notifications(status: .failed, limit: 1000),
                    try await transaction.notifications(status: .pending, limit: 1000)
                )
            }
            #expect(failed.count == NotificationInbox.leasedPerBatch)
            #expect(untouched.count == extra)
            #expect(untouched.allSatisfy { $0.attempts == 0 })
        }
    }

    /// A batch's leased notifications are interpreted one API call after another; once their
    /// lease has run out (here: the first call answers after it), the rest are left to the next
    /// claim, untouched, instead of being asked about by both: each is asked of Google once.
    @Test func leasedNotificationsLeftWhenTheLeaseRanOutAreAskedAboutOnce() async throws {
        var processing = Self.processing
        processing.lease = 60
        try await ServerHarness.run(processing: processing) { h in
            let play = h.simulator.googlePlay
            let buyer = try await h.googlePlayBuyer("lena")
            let tokens = try (0..<4).map { _ in
                try play.purchaseSubscription(
                    packageName: ServerHarness.packageName, productId: "premium",
                    options: buyer
                ).purchaseToken
            }
            try await h.settle()
            let inbox = h.application.inbox
            let clock = h.simulator.clock
            // Due only from a moment ahead: the worker may still drain once after `settle` (a
            // wake-up kept from the last push), and under load that drain came after these were
            // stored and claimed some of them first.
            let dueAt = clock.now().addingTimeInterval(30)
            try await h.storage.transaction { transaction in
                for token in tokens {
                    let body = try GooglePlayLifecycleTests.pushBody(
                        packageName: ServerHarness.packageName, purchaseToken: token)
                    _ = try await transaction.insertNotification(
                        InboxNotification(
                            store: .googlePlay, dedupeKey: "late-\(token)", body: Data(body.utf8),
                            receivedAt: clock.now(), nextAttemptAt: dueAt))
                }
            }
            try await Task.sleep(for: .milliseconds(300))
            clock.advance(by: 30)
            let before = play.apiRequests.count
            // The first call answers seconds later; meanwhile the lease runs out.
            h.simulator.faults.add([APIFault(pathPrefix: "/androidpublisher/", delaySeconds: 3)])
            let leaseRunsOut = Task {
                try await Task.sleep(for: .milliseconds(200))
                clock.advance(by: 61)
            }
            // At least these four were due (in a clean-clone CI run the claim found more: another
            // notification stored meanwhile was due too).
            #expect(try await inbox.processDue(limit: 50) >= tokens.count)
            try await leaseRunsOut.value
            let left = try await h.storage.transaction { try await $0.notifications(status: .pending, limit: 100) }
            #expect(left.count >= tokens.count - 1)
            #expect(left.allSatisfy { $0.attempts == 0 && $0.nextAttemptAt.map { $0 <= clock.now() } == true })

            // The next claim takes them: every notification processed, each asked about once.
            #expect(try await inbox.processDue(limit: 50) == left.count)
            let counts = try await h.storage.transaction { try await $0.notificationCounts() }
            #expect(counts[.pending] ?? 0 == 0)
            #expect(counts[.failed] ?? 0 == 0)
            let asked = play.apiRequests[before...].filter { $0.path.contains("/subscriptionsv2/tokens/") }
            #expect(asked.count == tokens.count)
        }
    }

    /// Two workers' batches credit the same customers, one batch in the opposite order of the
    /// other. Each credit locks its customer's running balance until the commit: applied in the
    /// order they came, the two batches deadlocked on PostgreSQL (one was rolled back after a
    /// second and its notifications retried later). Applied in one lock order, the later batch
    /// waits for the earlier one, and both commit.
    @Test(arguments: StorageBackend.available) func batchesCreditingTheSameCustomersInOppositeOrdersBothCommit(
        _ backend: StorageBackend
    ) async throws {
        try await ServerHarness.run(on: backend, processing: Self.processing) { h in
            let store = h.simulator.appStore
            try store.setNotificationURL(nil, bundleId: ServerHarness.bundleID)
            var tokens: [String: UUID] = [:]
            for index in 0..<6 { tokens["lock-\(index)"] = try await h.createCustomer("lock-\(index)") }
            let inbox = h.application.inbox
            let adapter = h.application.stores(.appStore)
            let rounds = 4
            for _ in 0..<rounds {
                // Two purchases per customer, stored (not processed) through the inbox.
                for (customer, token) in tokens {
                    for _ in 0..<2 {
                        try store.purchase(customer: customer, product: "coins.100", appAccountToken: token)
                        guard let sent = store.notifications.last else { throw IngestTestError("no notification") }
                        _ = try await inbox.receive(.appStore, WebhookDelivery(body: Self.body(sent.signedPayload)))
                    }
                }
                let pending = try await h.storage.read { try await $0.notifications(status: .pending, limit: 100) }
                var byCustomer: [String: [NotificationInbox.Interpreted]] = [:]
                for item in pending {
                    let change = try await adapter.interpret(item)
                    guard case .purchase(let fact, _)? = change.observations.first, let hint = fact.accountHint else {
                        throw IngestTestError("no account token in \(item.dedupeKey)")
                    }
                    byCustomer[hint.lowercased(), default: []].append((item, change))
                }
                let hints = byCustomer.keys.sorted()
                #expect(hints.count == 6 && byCustomer.values.allSatisfy { $0.count == 2 })
                let forward = hints.compactMap { byCustomer[$0]?.first }
                let backward = hints.reversed().compactMap { byCustomer[$0]?.last }
                let now = inbox.clock.now()
                async let first = inbox.apply(forward, at: now)
                async let second = inbox.apply(backward, at: now)
                let outcomes = try await first + second
                #expect(outcomes.count == 12)
                for outcome in outcomes {
                    if case .failure(let failure) = outcome { Issue.record("a notification failed: \(failure)") }
                }
            }
            for customer in tokens.keys {
                #expect(try await h.balances(customer)["coins"] == rounds * 2 * 100, "\(customer)")
            }
            let counts = try await h.storage.read { try await $0.notificationCounts() }
            #expect(counts[.processed] == rounds * 12 && counts[.pending] == 0 && counts[.failed] == 0)
            // Every batch committed at its first attempt: none was rolled back in a deadlock
            // and rerun (by the storage) or applied again one notification at a time.
            #expect((h.storage as? PostgresStorage)?.transactionsRerun ?? 0 == 0)
            let metrics = try await h.text("/metrics")
            #expect(!metrics.contains("storekeeper_processing_batches_split_total"), "\(metrics)")
            if h.storage is PostgresStorage {
                let reruns = metrics.split(separator: "\n").first {
                    $0.hasPrefix("storekeeper_postgres_transactions_rerun ")
                }
                #expect(reruns.flatMap { Double($0.split(separator: " ").last ?? "") } == 0, "\(metrics)")
            }
        }
    }
}

struct IngestTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A storage that counts how many ``Storage/insertNotifications(taking:)`` run at once, each held
/// for a while so that webhooks arriving meanwhile find it running; all else is forwarded.
final class InsertCountingStorage: Storage {
    private let storage: any Storage
    private let inserts = Mutex((running: 0, most: 0, count: 0))

    init(_ storage: any Storage) { self.storage = storage }

    /// The most inserts that ran at once, and how many ran.
    var insertsSeen: (most: Int, count: Int) { inserts.withLock { ($0.most, $0.count) } }

    var backend: StorageBackend { storage.backend }
    var notificationInsertsAtOnce: Int { storage.notificationInsertsAtOnce }
    func migrate() async throws -> [Int] { try await storage.migrate() }
    func schemaVersion() async throws -> Int { try await storage.schemaVersion() }
    func close() async throws { try await storage.close() }

    func transaction<Result: Sendable>(
        durability: CommitDurability, _ body: @Sendable (any StorageTransaction) async throws -> Result
    ) async throws -> Result {
        try await storage.transaction(durability: durability, body)
    }

    func read<Result: Sendable>(_ body: @Sendable (any StorageTransaction) async throws -> Result) async throws
        -> Result
    {
        try await storage.read(body)
    }

    func insertNotifications(taking items: @Sendable () -> [InboxNotification]) async throws -> [Bool] {
        inserts.withLock { inserts in
            inserts.running += 1
            inserts.count += 1
            inserts.most = max(inserts.most, inserts.running)
        }
        defer { inserts.withLock { $0.running -= 1 } }
        try await Task.sleep(for: .milliseconds(100))
        return try await storage.insertNotifications(taking: items)
    }
}
