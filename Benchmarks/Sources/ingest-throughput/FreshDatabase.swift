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
    // FORCE ends the run's own sessions, but not an autovacuum worker, which runs as the server's
    // superuser: a drop that met one failed the whole run (2 runs in 20) after its figures were
    // measured. It is tried again for a few seconds, then left behind with a warning.
    func drop() async {
        for attempt in 1...10 {
            do {
                return try await admin("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
            } catch {
                guard attempt < 10 else {
                    FileHandle.standardError.write(Data("warning: \(name) was not dropped: \(error)\n".utf8))
                    return
                }
                try? await Task.sleep(for: .milliseconds(500))
            }
        }
    }
    do {
        let result = try await body(fresh)
        await drop()
        return result
    } catch {
        await drop()
        throw error
    }
}
