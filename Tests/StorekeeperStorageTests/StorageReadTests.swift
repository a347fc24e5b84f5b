import Foundation
import Storekeeper
import TestSupport
import Testing

@testable import StorekeeperStorage

/// `Storage.read`: committed data only, and no waiting behind a write in progress.
@Suite struct StorageReadTests {
    // A read that waited for the writer would wait forever here: the write ends only after it. The
    // deadline starts at the read; a fresh database under the whole suite's load may take a while.
    @Test(arguments: StorageBackend.available)
    func aReadSeesTheLastCommitAndDoesNotWaitForAWriteInProgress(_ backend: StorageBackend) async throws {
        try await TestDatabase.withFresh(backend) { storage, _ in
            let committed = Customer(id: CustomerID("committed"), appAccountToken: UUID(), createdAt: Date())
            try await storage.transaction { try await $0.insertCustomer(committed) }
            let pending = Customer(id: CustomerID("pending"), appAccountToken: UUID(), createdAt: Date())
            let (inserted, insertedSignal) = AsyncStream.makeStream(of: Void.self)
            let (release, releaseSignal) = AsyncStream.makeStream(of: Void.self)
            // A write that holds its transaction open (on SQLite, the one writer) until released.
            let writer = Task {
                try await storage.transaction { transaction in
                    try await transaction.insertCustomer(pending)
                    insertedSignal.yield()
                    for await _ in release { break }
                }
            }
            for await _ in inserted { break }
            let reading = Task {
                try await storage.read { transaction in
                    (try await transaction.customer(committed.id), try await transaction.customer(pending.id))
                }
            }
            guard let outcome = await reading.result(within: .seconds(60)) else {
                reading.cancel()
                releaseSignal.yield()
                Issue.record("the read waited for the write in progress")
                _ = try? await writer.value
                return
            }
            let seen = try outcome.get()
            #expect(seen.0?.id == committed.id)
            #expect(seen.1 == nil, "a read sees no uncommitted write")
            releaseSignal.yield()
            try await writer.value
            let after = try await storage.read { try await $0.customer(pending.id) }
            #expect(after?.id == pending.id, "a read after the commit sees it")
        }
    }

    @Test func aWriteInAReadFailsOnSQLiteAndWritesNothing() async throws {
        try await TestDatabase.withFresh(.sqlite) { storage, _ in
            let customer = Customer(id: CustomerID("written"), appAccountToken: UUID(), createdAt: Date())
            await #expect(throws: StorageError.self) {
                try await storage.read { try await $0.insertCustomer(customer) }
            }
            let stored = try await storage.transaction { try await $0.customer(customer.id) }
            #expect(stored == nil)
        }
    }

    /// The reader reads the file through a memory map (`PRAGMA mmap_size`); the writer does not.
    @Test func theReaderMapsTheFileAndTheWriterDoesNot() async throws {
        @Sendable func mappedBytes(_ transaction: any StorageTransaction) async throws -> Int? {
            let database = try #require(transaction as? SQLStorageTransaction).database
            return try await database.raw("PRAGMA mmap_size").first()?.decode(column: "mmap_size", as: Int.self)
        }
        try await TestDatabase.withFresh(.sqlite) { storage, _ in
            let reader = try await storage.read { try await mappedBytes($0) }
            let writer = try await storage.transaction { try await mappedBytes($0) }
            #expect(reader == 2_147_418_112)
            #expect(writer == 0)
        }
    }

    /// The writer keeps statement journals and transient tables in memory, and a page cache small
    /// enough that the walk SQLite makes of it after some commits stays cheap (docs/storage.md).
    @Test func theWritersTemporaryDataIsInMemoryAndItsCacheIs16MiB() async throws {
        @Sendable func pragma(_ name: String, _ transaction: any StorageTransaction) async throws -> Int? {
            let database = try #require(transaction as? SQLStorageTransaction).database
            return try await database.raw("PRAGMA \(unsafeRaw: name)").first()?.decode(column: name, as: Int.self)
        }
        try await TestDatabase.withFresh(.sqlite) { storage, _ in
            let temporaryStore = try await storage.transaction { try await pragma("temp_store", $0) }
            let cacheSize = try await storage.transaction { try await pragma("cache_size", $0) }
            #expect(temporaryStore == 2, "2 is MEMORY")
            #expect(cacheSize == -16384, "negative: in KiB")
        }
    }

    @Test(arguments: StorageBackend.available)
    func theCustomerComesWithItsConsent(_ backend: StorageBackend) async throws {
        try await TestDatabase.withFresh(backend) { storage, _ in
            let customer = Customer(
                id: CustomerID("consenting"), appAccountToken: UUID(), createdAt: Date(timeIntervalSince1970: 1000))
            try await storage.transaction { try await $0.insertCustomer(customer) }
            let unasked = try await storage.read { try await $0.customerWithConsent(customer.id) }
            #expect(unasked?.customer == customer)
            #expect(unasked?.consent == nil)
            let consent = ConsumptionConsent(consented: false, decidedAt: Date(timeIntervalSince1970: 2000))
            try await storage.transaction { try await $0.saveConsumptionConsent(consent, of: customer.id) }
            let answered = try await storage.read { try await $0.customerWithConsent(customer.id) }
            #expect(answered?.consent == consent)
            let nobody = try await storage.read { try await $0.customerWithConsent(CustomerID("nobody")) }
            #expect(nobody == nil)
        }
    }
}
