import Foundation
import Logging
import Storekeeper
import StorekeeperServer
import StorekeeperStorage
import TestSupport
import Testing

/// Debits of one balance from two server instances on one database at once: each is checked
/// against what the others left, so the balance never goes below zero.
@Suite(.serialized) struct ConcurrentDebitTests {
    @Test(arguments: StorageBackend.available) func concurrentDebitsNeverOverdraw(_ backend: StorageBackend)
        async throws
    {
        switch backend {
        case .sqlite:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "storekeeper-debits-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            try await debitFromTwoInstances(storageURL: directory.appendingPathComponent("db.sqlite").path)
        case .postgresql:
            let serverURL = try #require(PostgresAdmin.serverURL)
            try await PostgresAdmin.withFreshDatabase(serverURL: serverURL) { url in
                // 200 debits queue on one row lock, each holding a connection while it waits: on a
                // loaded machine the last may wait longer than the default 30 s for a connection.
                // This test is about the balance, not the wait.
                var patient = try #require(URLComponents(string: url))
                patient.queryItems = (patient.queryItems ?? []) + [URLQueryItem(name: "acquire_timeout", value: "300")]
                try await debitFromTwoInstances(storageURL: try #require(patient.string))
            }
        }
    }

    /// A debit while a processing batch that takes credits back (a refund) is uncommitted: the
    /// debit waits for it and is checked against what it left. (The debit once took a lock of its
    /// own, read 10 coins the batch was about to take, and spent 5 of them: the balance ended at
    /// -5.)
    @Test(.enabled(if: PostgresAdmin.serverURL != nil, "needs STOREKEEPER_TEST_POSTGRES_URL"))
    func aDebitIsCheckedAgainstWhatAConcurrentBatchLeaves() async throws {
        let serverURL = try #require(PostgresAdmin.serverURL)
        try await PostgresAdmin.withFreshDatabase(serverURL: serverURL) { url in
            var logger = Logger(label: "test")
            logger.logLevel = .critical
            let storage = try await StorageFactory.open(url, logger: logger)
            try await storage.migrate()
            let application = try StorekeeperApplication(
                configuration: StorekeeperConfiguration(storageURL: url, apiKeys: [], apps: [], catalog: Catalog()),
                storage: storage, logger: logger)
            let cora = CustomerID("cora")
            let token = try await application.customers.createOrFetch(cora).customer.appAccountToken
            @Sendable func entry(_ amount: Int, _ reason: LedgerEntry.Reason, _ key: String) -> LedgerEntry {
                LedgerEntry(
                    customerID: cora, balance: "coins", amount: amount, reason: reason, idempotencyKey: key,
                    createdAt: Date())
            }
            try await storage.transaction { _ = try await $0.appendLedgerEntry(entry(10, .purchase, "grant")) }
            let (posted, postedSignal) = AsyncStream.makeStream(of: Void.self)
            let batch = Task {
                try await storage.transaction { transaction in
                    // As processing does: the batch reads ahead what it will change, then posts.
                    try await transaction.beginBatch(BatchReads(accountTokens: [token]))
                    _ = try await transaction.appendLedgerEntry(entry(-10, .refundAdjustment, "refund"))
                    _ = try await transaction.customer(cora)  // a statement: the kept entry is sent first
                    postedSignal.yield()
                    try await Task.sleep(for: .milliseconds(500))
                }
            }
            for await _ in posted { break }
            await #expect(throws: ServerError.self) {
                _ = try await application.customers.debit(cora, balance: "coins", amount: 5, idempotencyKey: "d")
            }
            try await batch.value
            #expect(try await storage.transaction { try await $0.balances(of: cora)["coins"] } == 0)
            try await storage.close()
        }
    }

    /// 200 debits of 1 on a balance of 100, half through each of two instances: exactly 100
    /// succeed, every answer's remaining balance is at least 0, and the balance ends at 0.
    func debitFromTwoInstances(storageURL: String) async throws {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let configuration = StorekeeperConfiguration(
            storageURL: storageURL, apiKeys: [], apps: [], catalog: Catalog())
        var storages: [any Storage] = []
        var instances: [StorekeeperApplication] = []
        for _ in 0..<2 {
            let storage = try await StorageFactory.open(storageURL, logger: logger)
            try await storage.migrate()
            storages.append(storage)
            instances.append(try StorekeeperApplication(configuration: configuration, storage: storage, logger: logger))
        }
        let cora = CustomerID("cora")
        _ = try await instances[0].customers.createOrFetch(cora)
        try await storages[0].transaction { transaction in
            _ = try await transaction.appendLedgerEntry(
                LedgerEntry(
                    customerID: cora, balance: "coins", amount: 100, reason: .purchase, idempotencyKey: "grant",
                    createdAt: Date()))
        }
        let outcomes = try await withThrowingTaskGroup(of: Int?.self) { group in
            for index in 0..<200 {
                let customers = instances[index % 2].customers
                group.addTask {
                    do {
                        return try await customers.debit(cora, balance: "coins", amount: 1, idempotencyKey: "d\(index)")
                            .balance
                    } catch let error as ServerError where error.code == .insufficientBalance {
                        return nil
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let remaining = outcomes.compactMap { $0 }
        #expect(remaining.count == 100)
        #expect(remaining.allSatisfy { $0 >= 0 })
        #expect(Set(remaining).count == 100, "each success leaves a different balance")
        let balance = try await storages[1].transaction { try await $0.balances(of: cora)["coins"] }
        #expect(balance == 0)
        for storage in storages { try await storage.close() }
    }
}
