import Foundation
import Logging
import PostgresKit
import PostgresNIO
import SQLKit
import TestSupport
import Testing

@testable import StorekeeperStorage

/// The values Storekeeper binds reach PostgreSQL as the same type and value whether bound by
/// ``ConnectionLossAwareDatabase`` directly or by PostgresKit, nil included; any other type is
/// left to PostgresKit.
@Suite(.enabled(if: Backend.postgresURL != nil, Backend.skippedPostgresMessage))
struct PostgresBindingTests {
    static let values: [any Encodable & Sendable] = [
        "", "text é 😀", String?.some("x"), String?.none, Int.min, Int.max, 0, Int?.some(-3), Int?.none,
        Int64.min, Int64.max, Int64?.some(42), Int64?.none, 0.0, -1.5, Double.greatestFiniteMagnitude,
        Double?.some(2.25), Double?.none, true, false, Bool?.some(true), Bool?.none, Data(), Data([0, 1, 255]),
        Data?.some(Data([7])), Data?.none,
    ]

    /// The type and text PostgreSQL gives the bound value, or the SQLSTATE it refuses it with (a
    /// NULL of no type has none for `pg_typeof`).
    static func outcome(of query: SQLQueryString, on database: any SQLDatabase) async throws -> String {
        do {
            let row = try await database.raw(query).first()
            let type = try row?.decode(column: "type", as: String.self) ?? "no row"
            let value = try row?.decode(column: "value", as: String?.self) ?? "NULL"
            return "\(type) \(value)"
        } catch let error as PSQLError {
            return "refused \(error.serverInfo?[.sqlState] ?? String(reflecting: error))"
        }
    }

    @Test func boundValuesReachPostgreSQLAsPostgresKitBindsThem() async throws {
        let location = try PostgresLocation(url: try #require(Backend.postgresURL))
        let logger = Logger(label: "storekeeper.tests.postgres-binding")
        let connection = try await PostgresConnection.connect(
            configuration: PostgresConnection.Configuration(
                host: location.host, port: location.port, username: location.username,
                password: location.password, database: location.database, tls: .disable),
            id: 1, logger: logger)
        do {
            let direct = ConnectionLossAwareDatabase(connection: connection, queryLogLevel: nil)
            let postgresKit = connection.sql(queryLogLevel: nil)
            for value in Self.values {
                #expect(ConnectionLossAwareDatabase.bindings([value]) != nil, "\(value) is bound directly")
                let query: SQLQueryString =
                    "SELECT pg_typeof(\(bind: value))::text AS type, (\(bind: value))::text AS value"
                let ours = try await Self.outcome(of: query, on: direct)
                let theirs = try await Self.outcome(of: query, on: postgresKit)
                #expect(ours == theirs, "\(value)")
            }
            // Another type, or a nil of one: PostgresKit binds the whole statement.
            #expect(ConnectionLossAwareDatabase.bindings(["a", UUID()]) == nil)
            #expect(ConnectionLossAwareDatabase.bindings(["a", UUID?.none]) == nil)
            let id = UUID()
            let row = try await direct.raw("SELECT (\(bind: id))::text AS value").first()
            #expect(try row?.decode(column: "value", as: String.self) == id.uuidString.lowercased())
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
    }
}
