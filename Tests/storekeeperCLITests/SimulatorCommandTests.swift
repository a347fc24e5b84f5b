import AppStoreServer
import Foundation
import Testing

@Suite struct SimulatorCommandTests {
    @Test func announcesItsEndpointsAndStopsGracefullyOnSIGTERM() throws {
        guard let executable = CLI.executable else { throw CLI.MissingExecutable() }
        let process = Process()
        process.executableURL = executable
        process.arguments = ["simulator", "--rate", "86400"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = Pipe()
        try process.run()
        defer { if process.isRunning { process.terminate() } }

        // Read until the six announcement lines are in (bounded: the loop gives up after 20 s).
        var text = ""
        let deadline = Date().addingTimeInterval(20)
        while text.split(separator: "\n").count < 6, Date() < deadline {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
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

        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0)
    }

    @Test func refusesAnInvalidPort() throws {
        let result = try CLI.run(["simulator", "--port", "70000"])
        #expect(result.status == 2)
        #expect(result.standardError == "error: --port takes 0 to 65535\n")
    }
}
