import Foundation
import Logging
import PostgresNIO
public import StorekeeperStorage

/// Runs statements that can't go in a transaction (CREATE/DROP DATABASE) on the test server.
public struct PostgresAdmin: Sendable {
    public let location: PostgresLocation
    static let logger = Logger(label: "storekeeper.tests.postgres-admin")

    public init(location: PostgresLocation) {
        self.location = location
    }

    /// The PostgreSQL server tests create their databases on (`.ci/postgres.sh` starts one), from
    /// STOREKEEPER_TEST_POSTGRES_URL; nil when unset.
    public static let serverURL: String? = {
        let url = ProcessInfo.processInfo.environment["STOREKEEPER_TEST_POSTGRES_URL"] ?? ""
        return url.isEmpty ? nil : url
    }()

    public func execute(_ sql: String) async throws {
        var configuration = PostgresConnection.Configuration(
            host: location.host, port: location.port, username: location.username, password: location.password,
            database: location.database, tls: .disable)
        configuration.options.connectTimeout = .seconds(10)
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: Self.logger)
        do {
            try await connection.query(PostgresQuery(unsafeSQL: sql), logger: Self.logger)
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
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
