import ArgumentParser
import Foundation
import Logging
import StorekeeperServer
import StorekeeperStorage

/// `storekeeper migrate`: brings a database's schema up to this build's version, as `serve` does at
/// start, and says which version it found and left.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply the schema migrations a database lacks and report its schema version before and after.",
        discussion: """
            Names the database with --config (its storage.url, environment overrides applied; the whole \
            file is checked) or --storage (a SQLite path, sqlite://PATH or postgres://user:password@host/db). \
            Safe beside a running server and with several instances migrating at once. Prints one line, \
            e.g. "sqlite://storekeeper.sqlite: schema version 0 -> 1"; exits 0. A bad configuration or \
            storage string exits 2, a storage that can't be reached or is newer than this build exits 1, \
            each with one error: line.
            """
    )

    @Option(help: "A configuration file (JSON); its storage.url is migrated.")
    var config: String?

    @Option(help: "A storage string: a SQLite path, sqlite://PATH or a postgres:// URL.")
    var storage: String?

    func run() async throws {
        if (config == nil) == (storage == nil) { throw UsageError("give one of --config FILE or --storage URL") }
        let location: StorageFactory.Location
        var configuration: StorekeeperConfiguration?
        if let config {
            configuration = try await ServeCommand.load(config)
            location = try StorageFactory.Location(checked: configuration?.storageURL ?? "")
        } else {
            location = try StorageFactory.Location(checked: storage ?? "")
        }
        var logger = Logger(label: "storekeeper.migrate")
        logger.logLevel = .error
        do {
            let storage = try await StorageFactory.open(location, logger: logger)
            do {
                let before = try await storage.schemaVersion()
                let applied = try await storage.migrate()
                let after = try await storage.schemaVersion()
                print(
                    "\(location): schema version \(before) -> \(after)"
                        + (applied.isEmpty
                            ? " (up to date)" : " (applied \(applied.map(String.init).joined(separator: ", ")))")
                )
                // With the configuration, purchases stored before apps were recorded get their app
                // where only one app of their store is configured; the rest are reported.
                if let configuration {
                    let unknown = try await StorekeeperApplication(
                        configuration: configuration, storage: storage, logger: logger
                    ).backfillApps()
                    for (store, count) in unknown.sorted(by: { $0.key.rawValue < $1.key.rawValue }) where count > 0 {
                        print(
                            "\(count) \(store.rawValue) purchase\(count == 1 ? "" : "s") stored before apps were recorded "
                                + "keep an unknown app until their next notification or submission "
                                + "(that store has several configured apps, or none)")
                    }
                }
                try await storage.close()
            } catch {
                try? await storage.close()
                throw error
            }
        } catch let error as StorageError {
            standardError("error: \(error)")
            throw ExitCode(error.reason == .badConfiguration ? 2 : 1)
        }
    }
}

extension StorageFactory.Location {
    /// Parses `location`, turning a bad string into a usage error (exit 2) that says what is wrong.
    init(checked location: String) throws {
        do {
            try self.init(location)
        } catch let error as StorageError {
            throw UsageError("storage: \(error.detail)")
        }
    }
}
