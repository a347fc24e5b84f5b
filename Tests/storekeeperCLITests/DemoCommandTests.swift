import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `storekeeper demo` as a user runs it: the README's run command.
@Suite struct DemoCommandTests {
    @Test func tellsBothStoriesAndExitsCleanly() async throws {
        let result = try await CLI.run(["demo"])
        #expect(result.status == 0, "\(result.standardError)")
        let output = result.standardOutput
        for expected in [
            "== App Store — customer alice", "← App Store: SUBSCRIBED INITIAL_BUY",
            // The renewal whose notification was lost: access ended, until the catch-up finds it.
            "→ alice: pro ✗ active, access ended 2026-02-01 [pro.monthly]",
            "← App Store: DID_FAIL_TO_RENEW GRACE_PERIOD", "pro ✓ grace_period",
            "✗ refused: 409 ownership-conflict", "← App Store: EXPIRED VOLUNTARY",
            "== Google Play — customer gina", "← Google Play: SUBSCRIPTION_IN_GRACE_PERIOD",
            "← Google Play: VOIDED_PURCHASE", "balance: coins 20", "Done; the temporary directory is removed.",
            "/console (sign in as demo, password ",
            // The app backend's receiver beside the story, each signature checked there.
            "⇢ webhook purchase.started delivered (signature ok)",
            "⇢ webhook subscription.grace_period delivered (signature ok)",
            "⇢ webhook subscription.expired delivered (signature ok)",
            "⇢ webhook purchase.refunded delivered (signature ok)",
            // Each step's events are delivered, and shown, before its customer view.
            "she spends 80 coins\n            ⇢ webhook balance.changed delivered (signature ok)\n            → alice:",
            "← App Store: REFUND_DECLINED\n            ⇢ webhook refund_request.settled delivered (signature ok)\n"
                + "            → alice:",
            "→ alice: max ✗ expired 2026-04-02 [max.monthly]",
        ] {
            #expect(output.contains(expected), "missing: \(expected)")
        }
        #expect(!output.contains("signature INVALID"))
    }

    /// `--keep-running`: after the story the console stays open, and the printed sign-in works;
    /// Ctrl-C ends it as a finished run ends, its directory (database, store keys) removed.
    @Test func keepsTheConsoleRunningWithThePrintedSignIn() async throws {
        guard let executable = CLI.executable else { throw CLI.MissingExecutable() }
        let process = try SpawnedProcess(executable, ["demo", "--keep-running"])
        defer { process.terminate() }
        let deadline = Date().addingTimeInterval(180)
        while !process.standardOutput.contains("Running until interrupted"), process.isRunning, Date() < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        let text = process.standardOutput
        #expect(process.isRunning, "the demo ended: \(text)")
        let line = try #require(text.split(separator: "\n").first { $0.contains("  console    ") }, "\(text)")
        let parts = line.split(separator: " ")
        let url = try #require(parts.first { $0.hasPrefix("http://") }.map(String.init))
        let password = try #require(parts.last.map { String($0.dropLast()) })
        var request = URLRequest(url: try #require(URL(string: url + "/sign-in")))
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data("name=demo&password=\(password)".utf8)
        // The sign-in answers with the cookie and a redirect to the overview, which is followed.
        let (body, response) = try await URLSession.shared.data(for: request)
        let page = String(decoding: body, as: UTF8.self)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        #expect(response.url?.path == "/console/overview", "\(page)")
        #expect(page.contains("demo · operator"), "\(page)")

        let (database, directory) = try Self.storage(printedIn: text)
        #expect(FileManager.default.fileExists(atPath: database))
        process.send(SIGINT)
        #expect(try await process.exited(within: 60), "still running after SIGINT")
        #expect(process.termination == .exited(0), "\(process.standardError)")
        #expect(process.standardOutput.contains("Done; the temporary directory is removed."))
        #expect(!FileManager.default.fileExists(atPath: directory), "\(directory) is left behind")
    }

    /// Ctrl-C in the middle of the story stops it: exit status 130 (as a shell reports SIGINT),
    /// and the directory with the database and the store keys removed all the same.
    @Test func anInterruptedStoryLeavesNothingBehind() async throws {
        guard let executable = CLI.executable else { throw CLI.MissingExecutable() }
        let process = try SpawnedProcess(executable, ["demo"])
        defer { process.terminate() }
        let sent = await process.send(SIGINT, onceOutputContains: "== App Store", within: 180)
        let text = process.standardOutput
        try #require(sent, "\(text)")
        let directory = try Self.storage(printedIn: text).directory
        #expect(try await process.exited(within: 60), "still running after SIGINT")
        #expect(process.termination == .exited(130), "\(process.standardOutput)\n\(process.standardError)")
        #expect(process.standardOutput.contains("Interrupted; the temporary directory is removed."))
        #expect(!process.standardOutput.contains("== Google Play"), "the story went on")
        #expect(!FileManager.default.fileExists(atPath: directory), "\(directory) is left behind")
    }

    /// The database path the demo's `server` line prints, and the temporary directory holding it.
    static func storage(printedIn text: String) throws -> (database: String, directory: String) {
        let server = try #require(text.split(separator: "\n").first { $0.contains("  server     ") }, "\(text)")
        let database = try #require(server.split(separator: "(SQLite: ").last.map { String($0.dropLast()) })
        return (database, URL(fileURLWithPath: database).deletingLastPathComponent().path)
    }

    @Test func refusesAnUnknownPolicy() async throws {
        let result = try await CLI.run(["demo", "--ownership-policy", "finders-keepers"])
        #expect(result.status == 2)
        #expect(
            result.standardError.hasPrefix(
                "Error: The value 'finders-keepers' is invalid for '--ownership-policy <ownership-policy>'. "
                    + "Please provide one of 'keep', 'transfer' or 'transfer-if-no-active'."))
    }
}
