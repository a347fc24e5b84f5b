import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import StorekeeperDemo
import StorekeeperServer
import StorekeeperStorage
import UnixSignals

/// `storekeeper serve`: the Storekeeper server — the HTTP API and the notification worker — from a
/// configuration file, until SIGTERM or SIGINT.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the Storekeeper server (HTTP API and notification processing) from a configuration file.",
        discussion: """
            Checks the configuration (environment overrides applied; each problem on one line of standard \
            error, exit 2), opens the storage and applies its pending migrations, then serves until SIGTERM \
            or SIGINT, which stop it gracefully (exit 0). When the HTTP server is bound it prints \
            "listening on http://HOST:PORT" on standard output; logs go to standard error.

            With --with-simulator (and no --config) it runs instead on SQLite in a temporary directory, \
            attached to the built-in simulator of both stores on the real clock (or --simulator-rate): the \
            demo's apps and catalog, API keys printed, both stores' notifications delivered to this server. \
            Drive the stores through the simulator's control API to try the HTTP API by hand.
            """
    )

    @Option(help: "The configuration file (JSON).")
    var config: String?

    @Flag(help: "Run against the built-in store simulator, on a temporary SQLite database, without --config.")
    var withSimulator = false

    @Option(help: "With --with-simulator: simulated seconds per real second.")
    var simulatorRate: Double = 1

    @Option(help: "The address to listen on (default: the configuration's server.host).")
    var host: String?

    @Option(help: "The port to listen on, 0 for a free one (default: the configuration's server.port).")
    var port: Int?

    @Option(help: "The least severe log level written.")
    var logLevel = LogLevelArgument(.info)

    /// How long the services get to finish in-flight work after SIGTERM before they are cancelled.
    static let gracefulShutdownLimit: Duration = .seconds(30)

    func run() async throws {
        if let port, !(0...65_535).contains(port) { throw UsageError("--port takes 0 to 65535") }
        LoggingSystem.bootstrap { [level = logLevel.level] label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "storekeeper")
        if withSimulator {
            guard config == nil else { throw UsageError("--with-simulator runs without --config") }
            guard simulatorRate >= 0, simulatorRate.isFinite else {
                throw UsageError("--simulator-rate takes a number ≥ 0")
            }
            try await serveWithSimulator(logger: logger)
            return
        }
        guard let config else { throw UsageError("give --config FILE (or --with-simulator)") }

        let configuration = try await Self.load(config)
        let location = try StorageFactory.Location(checked: configuration.storageURL)
        let storage: any Storage
        do {
            storage = try await StorageFactory.open(location, logger: logger)
            do {
                let applied = try await storage.migrate()
                let version = try await storage.schemaVersion()
                logger.info(
                    "storage ready",
                    metadata: [
                        "storage": "\(location)", "schemaVersion": "\(version)",
                        "applied": "\(applied.map(String.init).joined(separator: ","))",
                    ])
            } catch {
                try? await storage.close()
                throw error
            }
        } catch let error as StorageError {
            standardError("error: \(error)")
            throw ExitCode(error.reason == .badConfiguration ? 2 : 1)
        }

        do {
            let application = try StorekeeperApplication(
                configuration: configuration, storage: storage, logger: logger)
            try await application.backfillApps()
            let host = self.host ?? configuration.server.host
            let server = application.makeHTTPServer(
                host: host, port: port,
                onBound: { port in
                    let address = "http://\(host.contains(":") ? "[\(host)]" : host):\(port)"
                    logger.notice("listening", metadata: ["address": "\(address)"])
                    // Unbuffered: scripts and tests read this line while the server runs.
                    FileHandle.standardOutput.write(Data("listening on \(address)\n".utf8))
                })
            // Shut down in reverse order: the HTTP server stops taking requests before the worker stops.
            var group = ServiceGroupConfiguration(
                services: application.backgroundServices + [server], gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger)
            group.maximumGracefulShutdownDuration = Self.gracefulShutdownLimit
            try await ServiceGroup(configuration: group).run()
            logger.info("stopped")
        } catch {
            try? await storage.close()
            standardError("error: \(error)")
            throw ExitCode(1)
        }
        try await storage.close()
    }

    /// Loads and checks a configuration file; a bad one prints each problem on one line and exits 2.
    static func load(_ path: String) async throws -> StorekeeperConfiguration {
        do {
            return try await ConfigurationLoader.load(path: path)
        } catch let error as ConfigurationError {
            for problem in error.problems { standardError("problem: \(problem)") }
            throw ExitCode(2)
        }
    }

    /// The server on a ``SimulatedDeployment`` until SIGTERM or SIGINT.
    func serveWithSimulator(logger: Logger) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "storekeeper-serve-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let options = SimulatedDeployment.Options(
            start: Date(), rate: simulatorRate, secretAPIKey: "sk_sim_" + Self.randomKey(),
            readOnlyAPIKey: "ro_sim_" + Self.randomKey(), directory: directory,
            processing: ProcessingSettings(initialRetryDelay: 1, maxRetryDelay: 60, pollInterval: 0.2), logger: logger)
        try await SimulatedDeployment.withRunning(options) { deployment in
            let simulator = deployment.simulator.endpoints
            let lines = [
                "listening on \(deployment.baseURL)",
                "storage: \(directory.path)/storekeeper.sqlite (removed on exit)",
                "secret API key: \(options.secretAPIKey)", "read-only API key: \(options.readOnlyAPIKey)",
                "simulator: \(simulator?.baseURL ?? "?")", "control: \(simulator?.controlURL ?? "?")",
                "App Store app: \(SimulatedDeployment.bundleID) (pro.monthly, max.monthly, coins.100)",
                "Google Play app: \(SimulatedDeployment.packageName) (premium, premium.max, gems, lifetime)",
            ]
            FileHandle.standardOutput.write(Data((lines.joined(separator: "\n") + "\n").utf8))
            for await _ in await UnixSignalsSequence(trapping: .sigterm, .sigint) { break }
            logger.info("stopping")
        }
    }

    /// A fresh key for this run only (the simulator setup is for trying things by hand).
    static func randomKey() -> String {
        String((0..<24).map { _ in "abcdefghijklmnopqrstuvwxyz0123456789".randomElement() ?? "0" })
    }
}
