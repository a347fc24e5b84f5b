import Foundation
import Hummingbird
import Logging
import PostgresNIO
import StorekeeperDemo
import StorekeeperServer
import StorekeeperStorage
import Synchronization

/// Runs `body` with `options`, on PostgreSQL with the storage URL of a fresh database created on
/// the server `options.storageURL` names and dropped afterwards (SQLite: as they are, a file in
/// the options' directory).
func withFreshDatabase<Result: Sendable>(
    _ options: SimulatedDeployment.Options, _ body: @Sendable (SimulatedDeployment.Options) async throws -> Result
) async throws -> Result {
    guard let serverURL = options.storageURL else { return try await body(options) }
    let location = try PostgresLocation(url: serverURL)
    let name = "storekeeper_bench_\(UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""))"
    func admin(_ sql: String) async throws {
        let connection = try await PostgresConnection.connect(
            configuration: PostgresConnection.Configuration(
                host: location.host, port: location.port, username: location.username,
                password: location.password, database: location.database, tls: .disable),
            id: 1, logger: options.logger)
        do {
            _ = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: options.logger).collect()
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
    }
    try await admin("CREATE DATABASE \(name)")
    var components = URLComponents(string: serverURL)
    components?.path = "/" + name
    var fresh = options
    fresh.storageURL = components?.string ?? serverURL
    do {
        let result = try await body(fresh)
        try await admin("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
        return result
    } catch {
        try? await admin("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
        throw error
    }
}
