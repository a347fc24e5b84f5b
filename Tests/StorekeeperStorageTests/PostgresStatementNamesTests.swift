import Foundation
import Logging
import SQLKit
import TestSupport
import Testing

@testable import StorekeeperStorage

/// Statements with parameters are prepared once per connection under a name
/// (`PostgresStatementNames`, `ConnectionLossAwareDatabase`), on a pool of one connection so that
/// every transaction here uses the same session.
@Suite(.enabled(if: StorageBackend.postgresURL != nil, StorageBackend.skippedPostgresMessage))
struct PostgresStatementNamesTests {
    /// The statements this session has prepared: name → text.
    static func prepared(_ database: any SQLDatabase) async throws -> [String: String] {
        let rows = try await database.raw("SELECT name, statement FROM pg_prepared_statements").all()
        var prepared: [String: String] = [:]
        for row in rows {
            prepared[try row.decode(column: "name", as: String.self)] = try row.decode(
                column: "statement", as: String.self)
        }
        return prepared
    }

    /// `body` with a storage of one connection on a fresh database, preparing at most
    /// `statementCacheSize` statements.
    static func withOneConnection(
        statementCacheSize: Int = 256, _ body: (PostgresStorage) async throws -> Void
    ) async throws {
        try await TestDatabase.withFresh(.postgresql) { storage, _ in
            let postgres = try #require(storage as? PostgresStorage)
            var location = postgres.location
            location.poolSize = 1
            location.statementCacheSize = statementCacheSize
            let single = PostgresStorage(location: location)
            do {
                try await body(single)
            } catch {
                try? await single.close()
                throw error
            }
            try await single.close()
        }
    }

    /// The integer in the column `value` of the first row `query` returns.
    static func value(_ query: SQLQueryString, in database: any SQLDatabase) async throws -> Int? {
        try await database.raw(query).first()?.decode(column: "value", as: Int.self)
    }

    /// The integers `value(_:in:)` reads for each of `queries`, in order, in one transaction.
    static func values(_ queries: SQLQueryString..., in storage: PostgresStorage) async throws -> [Int?] {
        try await storage.transaction { transaction in
            let database = try Self.sql(transaction)
            var values: [Int?] = []
            for query in queries { values.append(try await Self.value(query, in: database)) }
            return values
        }
    }

    static func sql(_ transaction: any StorageTransaction) throws -> any SQLDatabase {
        try #require(transaction as? SQLStorageTransaction).database
    }

    @Test func aStatementIsPreparedOnceAndEachTextUnderItsOwnName() async throws {
        try await Self.withOneConnection { storage in
            for round in 0..<3 {
                let values = try await Self.values(
                    "SELECT \(bind: round) + \(bind: 2) AS value", "SELECT \(bind: round) * \(bind: 2) AS value",
                    in: storage)
                #expect(values == [round + 2, round * 2])
            }
            let prepared = try await storage.read { try await Self.prepared(Self.sql($0)) }
            #expect(prepared.count == 2)
            #expect(Set(prepared.values) == ["SELECT $1 + $2 AS value", "SELECT $1 * $2 AS value"])
            #expect(prepared.keys.allSatisfy { $0.hasPrefix("storekeeper_") })
        }
    }

    /// PostgreSQL infers a `NULL` parameter's type from the statement when it is prepared; a value
    /// of another type must not run under that preparation.
    @Test func aNullAndAValueOfTheSameParameterArePreparedApart() async throws {
        try await Self.withOneConnection { storage in
            let none: Int? = nil
            // Prepared with a NULL, $1 is inferred as an `integer` (4 bytes); the 8-byte `bigint`
            // sent next would not be read as one.
            let values = try await Self.values(
                "SELECT coalesce(\(bind: none), 5) AS value", "SELECT coalesce(\(bind: 7), 5) AS value", in: storage)
            #expect(values == [5, 7])
            let prepared = try await storage.read { try await Self.prepared(Self.sql($0)) }
            #expect(prepared.values.filter { $0 == "SELECT coalesce($1, 5) AS value" }.count == 2)
        }
    }

    /// A statement sent into a transaction already aborted fails to prepare; PostgresNIO keeps that
    /// failure for its name, so the name is retired and the statement prepared anew afterwards. One
    /// that failed executing (division by zero) keeps its name.
    @Test func aPreparationThatFailedDoesNotStickToTheStatement() async throws {
        try await Self.withOneConnection { storage in
            await #expect(throws: (any Error).self) {
                try await storage.transaction { transaction in
                    let database = try Self.sql(transaction)
                    _ = try? await database.raw("SELECT 1 / \(bind: 0) AS value").run()
                    // The transaction is aborted: this one's preparation fails.
                    try await database.raw("SELECT \(bind: 40) + \(bind: 2) AS value").run()
                }
            }
            let values = try await Self.values(
                "SELECT \(bind: 40) + \(bind: 2) AS value", "SELECT 1 / \(bind: 1) AS value", in: storage)
            #expect(values == [42, 1])
            let prepared = try await storage.read { try await Self.prepared(Self.sql($0)) }
            #expect(prepared.values.filter { $0 == "SELECT 1 / $1 AS value" }.count == 1)
            #expect(prepared.values.filter { $0 == "SELECT $1 + $2 AS value" }.count == 1)
        }
    }

    @Test func aCacheSizeOfZeroSendsEveryStatementUnnamed() async throws {
        try await Self.withOneConnection(statementCacheSize: 0) { storage in
            let prepared = try await storage.transaction { transaction in
                let database = try Self.sql(transaction)
                _ = try await Self.value("SELECT \(bind: 1) AS value", in: database)
                return try await Self.prepared(database)
            }
            #expect(prepared.isEmpty)
        }
    }

    @Test func namesRunOutIntoUnnamedStatements() async throws {
        let names = PostgresStatementNames(capacity: 2)
        let first = try #require(names.name(for: .init(sql: "a", parameterTypes: [.int8])))
        #expect(names.name(for: .init(sql: "a", parameterTypes: [.int8])) == first)
        #expect(names.name(for: .init(sql: "a", parameterTypes: [.null])) != nil)
        #expect(names.name(for: .init(sql: "b", parameterTypes: [.int8])) == nil)
        names.retire(first, for: .init(sql: "a", parameterTypes: [.int8]))
        #expect(names.name(for: .init(sql: "a", parameterTypes: [.int8])) == nil)
        #expect(names.namesMade == 2)
    }
}
