import Foundation
import Logging
import PostgresNIO
public import StorekeeperStorage

/// Runs statements on the test server apart from the storage layer: those that can't go in a
/// transaction (CREATE/DROP DATABASE), and a test's own instrumentation and reads of it.
public struct PostgresAdmin: Sendable {
    public let location: PostgresLocation
    static let logger = Logger(label: "storekeeper.tests.postgres-admin")

    public init(location: PostgresLocation) {
        self.location = location
    }

    /// On the database a `postgres://` URL names.
    public init(url: String) throws {
        self.init(location: try PostgresLocation(url: url))
    }

    /// The PostgreSQL server tests create their databases on (`.ci/postgres.sh` starts one), from
    /// STOREKEEPER_TEST_POSTGRES_URL; nil when unset.
    public static let serverURL: String? = {
        let url = ProcessInfo.processInfo.environment["STOREKEEPER_TEST_POSTGRES_URL"] ?? ""
        return url.isEmpty ? nil : url
    }()

    /// Runs `sql` on a connection of its own. CREATE DATABASE copies `template1` and fails while
    /// another session is connected to it — as another test's CREATE DATABASE briefly is — so a
    /// statement refused because an object is in use (SQLSTATE 55006) is retried a few times.
    /// Other errors are thrown with the server's message (PSQLError's own description hides it).
    public func execute(_ sql: String) async throws {
        try await execute(sql, retryingStates: ["55006"])
    }

    /// Drops the database `name`, ending its sessions. FORCE ends the tests' own sessions but, on
    /// PostgreSQL 15, not one of no role the test role belongs to, as an autovacuum worker's is
    /// (SQLSTATE 42501, "must be a member of the role whose process is being terminated"): one of
    /// two full runs on 2026-11-29 left its database behind so, as the server's log showed. Such a
    /// session is soon gone, so the drop is retried as a statement refused while an object is in
    /// use is.
    public func dropDatabase(_ name: String) async throws {
        try await execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)", retryingStates: ["55006", "42501"])
    }

    private func execute(_ sql: String, retryingStates: Set<String>) async throws {
        var attempt = 1
        while true {
            do {
                return try await executeOnce(sql)
            } catch let error as PSQLError {
                if let state = error.serverInfo?[.sqlState], retryingStates.contains(state), attempt < 8 {
                    try await Task.sleep(for: .milliseconds(50 * attempt + Int.random(in: 0..<50)))
                    attempt += 1
                    continue
                }
                throw AdminError(sql: sql, detail: String(reflecting: error))
            }
        }
    }

    private func executeOnce(_ sql: String) async throws {
        try await withConnection { connection in
            try await connection.query(PostgresQuery(unsafeSQL: sql), logger: Self.logger)
        }
    }

    /// The one text column of each row `sql` returns, in order; a NULL is an empty string.
    public func column(_ sql: String) async throws -> [String] {
        do {
            return try await withConnection { connection in
                var values: [String] = []
                for try await value in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: Self.logger)
                    .decode(String?.self)
                {
                    values.append(value ?? "")
                }
                return values
            }
        } catch let error as PSQLError {
            throw AdminError(sql: sql, detail: String(reflecting: error))
        }
    }

    private func withConnection<Result>(
        _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        var configuration = PostgresConnection.Configuration(
            host: location.host, port: location.port, username: location.username, password: location.password,
            database: location.database, tls: .disable)
        configuration.options.connectTimeout = .seconds(10)
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: Self.logger)
        let result: Result
        do {
            result = try await body(connection)
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
        return result
    }

    /// A test server's statement failed.
    struct AdminError: Error, CustomStringConvertible {
        var sql: String
        var detail: String
        var description: String { "\(sql) failed: \(detail)" }
    }

    /// A new, empty database on the server at `serverURL` for `body` (given its URL), dropped afterwards.
    public static func withFreshDatabase<Result>(
        serverURL: String, _ body: (String) async throws -> Result
    ) async throws -> Result {
        let admin = PostgresAdmin(location: try PostgresLocation(url: serverURL))
        let name = "storekeeper_test_\(UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""))"
        try await admin.execute("CREATE DATABASE \(name)")
        var components = URLComponents(string: serverURL)
        components?.path = "/" + name
        let result: Result
        do {
            result = try await body(components?.string ?? serverURL)
        } catch {
            try? await admin.dropDatabase(name)
            throw error
        }
        // A drop still refused after its retries leaves an unused database behind; it doesn't undo
        // what the test showed.
        try? await admin.dropDatabase(name)
        return result
    }
}
