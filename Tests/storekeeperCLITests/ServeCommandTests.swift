import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `storekeeper serve` and `storekeeper migrate`, run as the built executable.
@Suite struct ServeCommandTests {
    /// The migrations this build applies to an empty database, and the version it ends at.
    static let migrations = Array(1...24)
    static let latestSchema = migrations.last ?? 0

    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// A folder with a minimal valid configuration: SQLite in the folder, port 0, one App Store app
    /// trusting the sample root, one product, one API key.
    struct Workspace {
        let directory: URL
        var configPath: String { directory.appendingPathComponent("storekeeper.json").path }
        var databasePath: String { directory.appendingPathComponent("storekeeper.sqlite").path }

        init(storageURL: String? = nil) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-cli-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let root = ServeCommandTests.packageRoot.appendingPathComponent("Samples/test-root.der").path
            let configuration: [String: Any] = [
                "server": ["host": "127.0.0.1", "port": 0],
                "storage": ["url": storageURL ?? directory.appendingPathComponent("storekeeper.sqlite").path],
                "apiKeys": ["backend": ["scope": "secret", "secret": "sk_test_0123456789abcdef0123"]],
                "apps": [
                    "main": [
                        "appStore": [
                            "bundleId": "com.example.storekeeper", "environments": ["Sandbox"],
                            "allowedRootFiles": [root],
                        ]
                    ]
                ],
                "products": [
                    "appStore": ["com.example.pro": ["kind": "subscription", "entitlements": ["pro"]]]
                ],
            ]
            try JSONSerialization.data(withJSONObject: configuration).write(to: URL(fileURLWithPath: configPath))
        }

        func remove() { try? FileManager.default.removeItem(at: directory) }
    }

    @Test func servesHealthAndStopsGracefullyOnSIGTERM() async throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let server = try await ServerProcess.start(config: workspace.configPath)
        defer { if server.process.isRunning { server.process.terminate() } }
        let port = server.port
        #expect(port > 0)

        let (body, response) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/health")!)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        let health = try JSONSerialization.jsonObject(with: body) as? [String: Any]
        #expect(health?["status"] as? String == "ok")
        // The customer API wants the configured key.
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/v1/customers/alice")!)
        request.httpMethod = "PUT"
        request.setValue("Bearer sk_test_0123456789abcdef0123", forHTTPHeaderField: "Authorization")
        let (_, created) = try await URLSession.shared.data(for: request)
        #expect((created as? HTTPURLResponse)?.statusCode == 201)

        #expect(try await server.stop(signal: SIGTERM), "serve did not stop within 30 s of SIGTERM")
        #expect(server.process.termination == .exited(0))
        // The database was migrated at start and kept what was written.
        let migrate = try await CLI.run(["migrate", "--storage", workspace.databasePath])
        #expect(migrate.status == 0)
        #expect(
            migrate.standardOutput
                == "sqlite://\(workspace.databasePath): schema version \(Self.latestSchema) -> \(Self.latestSchema) (up to date)\n"
        )
    }

    @Test func servesWithTheBuiltInSimulator() async throws {
        let server = try await ServerProcess.start(arguments: ["serve", "--with-simulator"])
        defer { if server.process.isRunning { server.process.terminate() } }
        // The rest of the announcement follows the listening line.
        let deadline = Date().addingTimeInterval(10)
        while !server.standardOutput.contains("Google Play app:"), Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let lines = server.standardOutput.split(separator: "\n").map(String.init)
        let key = try #require(lines.first { $0.hasPrefix("secret API key: ") }?.dropFirst(16))
        #expect(key.hasPrefix("sk_sim_") && key.count == 31)
        #expect(lines.contains { $0.hasPrefix("simulator: http://127.0.0.1:") })
        #expect(lines.contains { $0.hasPrefix("control: http://127.0.0.1:") })

        var request = URLRequest(url: URL(string: "\(server.baseURL)/v1/customers/alice")!)
        request.httpMethod = "PUT"
        request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
        let (_, created) = try await URLSession.shared.data(for: request)
        #expect((created as? HTTPURLResponse)?.statusCode == 201)

        #expect(try await server.stop(signal: SIGINT), "serve did not stop within 30 s of SIGINT")
        #expect(server.process.termination == .exited(0))
    }

    @Test func withSimulatorRefusesAConfiguration() async throws {
        let result = try await CLI.run(["serve", "--with-simulator", "--config", "storekeeper.json"])
        #expect(result.status == 2)
        #expect(result.standardError == "error: --with-simulator runs without --config\n")
    }

    @Test func refusesAnInvalidConfigurationListingEachProblem() async throws {
        let workspace = try Workspace(storageURL: "mysql://db/storekeeper")
        defer { workspace.remove() }
        var configuration = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: workspace.configPath)))
                as? [String: Any])
        configuration["apiKeys"] = ["backend": ["scope": "admin", "secret": "sk_test_0123456789abcdef0123"]]
        try JSONSerialization.data(withJSONObject: configuration).write(
            to: URL(fileURLWithPath: workspace.configPath))
        let result = try await CLI.run(["serve", "--config", workspace.configPath])
        #expect(result.status == 2)
        #expect(result.standardOutput.isEmpty)
        let lines = result.standardError.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines.allSatisfy { $0.hasPrefix("problem: ") })
        #expect(lines.contains { $0.hasPrefix("problem: storage.url: ") })
        #expect(lines.contains { $0.hasPrefix("problem: apiKeys.backend.scope: ") })
    }

    @Test func refusesABadPort() async throws {
        let result = try await CLI.run(["serve", "--config", "storekeeper.json", "--port", "70000"])
        #expect(result.status == 2)
        #expect(result.standardError == "error: --port takes 0 to 65535\n")
    }

    @Test func refusesAnUnknownLogLevelOrOptionWithStatus2() async throws {
        let result = try await CLI.run(["serve", "--config", "storekeeper.json", "--log-level", "loud"])
        #expect(result.status == 2)
        #expect(result.standardError.hasPrefix("Error: The value 'loud' is invalid for '--log-level <log-level>'"))
        for level in ["trace", "debug", "info", "notice", "warning", "error", "critical"] {
            #expect(result.standardError.contains("  - \(level)\n"), "\(level)")
        }
        #expect(result.standardOutput.isEmpty)
        // ArgumentParser's own refusals end with the status of every other usage error.
        let unknown = try await CLI.run(["serve", "--config", "storekeeper.json", "--verbose"])
        #expect(unknown.status == 2)
        #expect(unknown.standardError.hasPrefix("Error: Unknown option '--verbose'"))
    }

    @Test func migratesAnEmptyDatabaseOnceAndReportsTheVersions() async throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let first = try await CLI.run(["migrate", "--config", workspace.configPath])
        #expect(first.status == 0, "\(first.standardError)")
        #expect(
            first.standardOutput
                == "sqlite://\(workspace.databasePath): schema version 0 -> \(Self.latestSchema) (applied \(Self.migrations.map(String.init).joined(separator: ", ")))\n"
        )
        let again = try await CLI.run(["migrate", "--storage", "sqlite://\(workspace.databasePath)"])
        #expect(again.status == 0)
        #expect(
            again.standardOutput
                == "sqlite://\(workspace.databasePath): schema version \(Self.latestSchema) -> \(Self.latestSchema) (up to date)\n"
        )
    }

    @Test func migrateRefusesABadStorageStringWithExitStatus2() async throws {
        let result = try await CLI.run(["migrate", "--storage", "mysql://user:hunter2@db/storekeeper"])
        #expect(result.status == 2)
        #expect(result.standardOutput.isEmpty)
        #expect(result.standardError.hasPrefix("error: storage: unknown storage scheme 'mysql://'"))
        #expect(result.standardError.split(separator: "\n").count == 1)
        #expect(!result.standardError.contains("hunter2"))
    }

    @Test func migrateWantsExactlyOneSource() async throws {
        let result = try await CLI.run(["migrate"])
        #expect(result.status == 2)
        #expect(result.standardError == "error: give one of --config FILE or --storage URL\n")
    }
}
