import AppStoreServer
import Foundation
import TestSupport
import Testing

@Suite struct SimulatorCommandTests {
    @Test func announcesItsEndpointsAndStopsGracefullyOnSIGTERM() async throws {
        guard let executable = CLI.executable else { throw CLI.MissingExecutable() }
        let process = try SpawnedProcess(executable, ["simulator", "--rate", "86400"])
        defer { process.terminate() }

        // Wait until the six announcement lines are in (bounded: the loop gives up after 20 s).
        let deadline = Date().addingTimeInterval(20)
        while process.standardOutput.split(separator: "\n").count < 6, process.isRunning, Date() < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        let text = process.standardOutput
        let lines = Dictionary(
            text.split(separator: "\n").compactMap { line -> (String, String)? in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            }, uniquingKeysWith: { first, _ in first })
        let baseURL = try #require(lines["simulator"])
        #expect(baseURL.hasPrefix("http://127.0.0.1:"))
        #expect(lines["control"] == baseURL + "/control")
        #expect(lines["ocsp"] == baseURL + "/ocsp")
        // The root it wrote is a certificate a verifier can trust explicitly.
        let rootPath = try #require(lines["root certificate"])
        _ = try TrustedRoots(appleRootFiles: [], allowedRootFiles: [rootPath])
        // The Google service account key it wrote, next to the root, points at its token endpoint.
        let keyPath = try #require(lines["google service account"])
        let key = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: keyPath))) as? [String: Any])
        #expect(key["type"] as? String == "service_account")
        #expect(key["token_uri"] as? String == baseURL + "/google/oauth2/token")
        #expect(
            URL(fileURLWithPath: keyPath).deletingLastPathComponent()
                == URL(fileURLWithPath: rootPath).deletingLastPathComponent())
        #expect(lines["google jwks"] == baseURL + "/google/oauth2/v3/certs")

        process.send(SIGTERM)
        let stopped = try await process.exited(within: 30)
        try #require(stopped, "the simulator did not stop within 30 s of SIGTERM")
        #expect(process.termination == .exited(0))
    }

    /// The tests' runner ends a child that does not exit (the simulator runs until stopped) at its
    /// time limit, failing that test instead of holding the suite.
    @Test func aCommandStillRunningAtItsTimeLimitIsTerminated() async throws {
        await #expect(throws: ChildProcess.DidNotExit.self) {
            _ = try await CLI.run(["simulator", "--rate", "86400"], timeLimit: 2)
        }
    }

    @Test func refusesAnInvalidPort() async throws {
        let result = try await CLI.run(["simulator", "--port", "70000"])
        #expect(result.status == 2)
        #expect(result.standardError == "error: --port takes 0 to 65535\n")
    }
}
