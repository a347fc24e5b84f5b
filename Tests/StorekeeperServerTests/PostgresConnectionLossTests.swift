import Foundation
import StorekeeperStorage
import TestSupport
import Testing

/// A transaction started on a PostgreSQL connection that has just been lost fails (or runs on a
/// new connection) instead of waiting forever: PostgresNIO never answers a statement written to a
/// channel that has just closed, which once stalled the `/ready` test and would stall a worker.
@Suite struct PostgresConnectionLossTests {
    @Test(.enabled(if: PostgresAdmin.serverURL != nil, "needs STOREKEEPER_TEST_POSTGRES_URL"))
    func aTransactionRightAfterTheConnectionIsLostEnds() async throws {
        let serverURL = try #require(PostgresAdmin.serverURL)
        try await PostgresAdmin.withFreshDatabase(serverURL: serverURL) { url in
            let components = try #require(URLComponents(string: url))
            let proxy = LoopbackProxy(
                targetHost: components.host ?? "127.0.0.1", targetPort: components.port ?? 5432)
            let port = try await proxy.start()
            var proxied = components
            proxied.port = port
            proxied.queryItems = [
                URLQueryItem(name: "pool_size", value: "1"), URLQueryItem(name: "connect_timeout", value: "2"),
                // Generous: under a full parallel suite a reconnect took longer than 5 s (the round's
                // first read failed); what this test catches is a statement that never ends.
                URLQueryItem(name: "acquire_timeout", value: "15"),
            ]
            let storage = try await StorageFactory.open(
                try #require(proxied.string), logger: TemporaryStorage.quietLogger)
            try await storage.migrate()
            var ended = 0
            for _ in 0..<30 {
                // A connection in the pool, then lost, then a transaction at once.
                _ = try await storage.read { try await $0.unfinishedNotificationCounts() }
                proxy.cut()
                let attempt = Task { _ = try await storage.schemaVersion() }
                // Not ended within a second: the server comes back, as after a restart. An attempt
                // that met the lost connection has ended or hung by then; one waiting for a new
                // connection gets it, instead of waiting out acquire_timeout while the server is
                // away (15 s each time; under the full parallel suite 92 s for the 30 rounds).
                var outcome = await attempt.result(within: .seconds(1))
                proxy.restore()
                if outcome == nil { outcome = await attempt.result(within: .seconds(39)) }
                #expect(outcome != nil, "a transaction on a just-lost connection never ended")
                guard outcome != nil else { break }
                ended += 1
                // Wait until the pool connects again before the next round.
                let deadline = ContinuousClock.now.advanced(by: .seconds(60))
                while ContinuousClock.now < deadline {
                    if (try? await storage.schemaVersion()) != nil { break }
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            #expect(ended == 30)
            await proxy.stop()
            let closing = Task { try await storage.close() }
            #expect(await closing.result(within: .seconds(20)) != nil, "closing the storage never ended")
        }
    }
}
