import Foundation
import Testing

/// `storekeeper health`, the container health check, against a real `storekeeper serve`.
@Suite struct HealthCommandTests {
    @Test func answersZeroWhileTheServerServesAndOneOnceItStopped() async throws {
        let workspace = try ServeCommandTests.Workspace()
        defer { workspace.remove() }
        let server = try await ServerProcess.start(config: workspace.configPath)
        defer { if server.process.isRunning { server.process.terminate() } }

        let health = try await CLI.run(["health", "--url", "\(server.baseURL)/health"])
        #expect(health.status == 0, "\(health.standardError)")
        #expect(health.standardOutput == "healthy: \(server.baseURL)/health\n")
        let ready = try await CLI.run(["health", "--url", "\(server.baseURL)/ready"])
        #expect(ready.status == 0, "\(ready.standardError)")

        // An answer other than 200 is unhealthy, and says what came back.
        let missing = try await CLI.run(["health", "--url", "\(server.baseURL)/no-such-endpoint"])
        #expect(missing.status == 1)
        #expect(missing.standardError == "unhealthy: \(server.baseURL)/no-such-endpoint answered HTTP 404\n")

        #expect(try await server.stop(signal: SIGTERM), "serve did not stop within 30 s of SIGTERM")
        // Nothing listens on that port any more.
        let stopped = try await CLI.run(["health", "--url", "\(server.baseURL)/health", "--timeout", "2"])
        #expect(stopped.status == 1)
        #expect(stopped.standardError.hasPrefix("unhealthy: \(server.baseURL)/health: "))
        #expect(stopped.standardOutput.isEmpty)
    }

    @Test func refusesWhatIsNotAnHTTPURLWithExitStatus2() async throws {
        let result = try await CLI.run(["health", "--url", "ftp://127.0.0.1/health"])
        #expect(result.status == 2)
        #expect(result.standardError == "error: --url takes an http(s) URL\n")
        let timeout = try await CLI.run(["health", "--timeout", "0"])
        #expect(timeout.status == 2)
    }
}
