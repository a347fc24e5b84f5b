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
        var attempt = 1
        while true {
            do {
                return try await executeOnce(sql)
            } catch let error as PSQLError {
                if error.serverInfo?[.sqlState] == "55006" && attempt < 8 {
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
            try? await admin.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
            throw error
        }
        // A drop the server refuses (seen when it could not end a session of another role on a
        // shared server) leaves an unused database behind; it doesn't undo what the test showed.
        try? await admin.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
        return result
    }
}
