import Foundation
import Hummingbird
import HummingbirdTesting
import Storekeeper
import StorekeeperServer
import StorekeeperStorage
import TestSupport
import Testing

/// `/ready` follows the database: an instance whose PostgreSQL connection is lost answers 503
/// (the load balancer takes it out), and 200 again once the database is back. The connection goes
/// through a loopback proxy the test cuts, so the shared PostgreSQL server keeps running.
@Suite struct ReadinessTests {
    // The polling windows (20 s lost, 70 s restored) fit inside the time limit: in the full
    // parallel suite under CI load, the pool's reconnection backoff (PostgresNIO grows it by 1.25×
    // per failed attempt while the database is away) made the restore take longer than the old
    // 30 s window, the old 1-minute limit cancelled the test, and the cancelled test never
    // finished (a full-suite stall seen three times, 2026-11-24/25; where it waits after the
    // cancellation is not known: every thread idle, no PostgreSQL session open).
    @Test(
        .enabled(if: PostgresAdmin.serverURL != nil, "needs STOREKEEPER_TEST_POSTGRES_URL"),
        .timeLimit(.minutes(2)))
    func readyFollowsALostAndRestoredDatabase() async throws {
        let serverURL = try #require(PostgresAdmin.serverURL)
        try await PostgresAdmin.withFreshDatabase(serverURL: serverURL) { url in
            let components = try #require(URLComponents(string: url))
            let proxy = LoopbackProxy(
                targetHost: components.host ?? "127.0.0.1", targetPort: components.port ?? 5432)
            let port = try await proxy.start()
            defer { Task { await proxy.stop() } }
            var proxied = components
            proxied.port = port
            // Short timeouts: a lost database shows in seconds, not the default half minute.
            proxied.queryItems = [
                URLQueryItem(name: "connect_timeout", value: "2"), URLQueryItem(name: "acquire_timeout", value: "5"),
            ]
            let storageURL = try #require(proxied.string)
            // Migrated directly, with the default timeouts (a loaded machine may be slow to connect).
            let unproxied = try await StorageFactory.open(url, logger: TemporaryStorage.quietLogger)
            try await unproxied.migrate()
            try await unproxied.close()
            let storage = try await StorageFactory.open(storageURL, logger: TemporaryStorage.quietLogger)
            do {
                let configuration = StorekeeperConfiguration(
                    storageURL: storageURL, apiKeys: [], apps: [], catalog: Catalog())
                let application = try StorekeeperApplication(
                    configuration: configuration, storage: storage, logger: TemporaryStorage.quietLogger)
                let app = Application(router: application.makeRouter(), logger: TemporaryStorage.quietLogger)
                try await app.test(.router) { client in
                    func status() async throws -> HTTPResponse.Status {
                        try await client.execute(uri: "/ready", method: .get) { $0.status }
                    }
                    /// Polls /ready until it answers `expected`, for up to `window`.
                    func waitFor(_ expected: HTTPResponse.Status, within window: Duration) async throws {
                        let deadline = ContinuousClock.now.advanced(by: window)
                        var last = try await status()
                        while last != expected, ContinuousClock.now < deadline {
                            try await Task.sleep(for: .milliseconds(100))
                            last = try await status()
                        }
                        #expect(last == expected)
                    }
                    try await waitFor(.ok, within: .seconds(10))
                    proxy.cut()
                    try await waitFor(.serviceUnavailable, within: .seconds(20))
                    proxy.restore()
                    try await waitFor(.ok, within: .seconds(70))
                }
            } catch {
                try? await storage.close()
                throw error
            }
            try await storage.close()
        }
    }
}
