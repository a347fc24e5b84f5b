import ArgumentParser
import Foundation
import StorekeeperServer
import StorekeeperStorage

/// `storekeeper config check FILE`: validates a configuration and explains each problem in one line.
struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Work with Storekeeper configuration files.",
        subcommands: [Check.self]
    )

    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "check",
            abstract: "Validate a configuration file (with environment overrides applied).",
            discussion: """
                Prints one line per problem (key path: what is wrong) and exits 1 if there are any; \
                otherwise prints a summary and exits 0. Secrets are never printed.
                """
        )

        @Argument(help: "The configuration file (JSON).")
        var file: String

        func run() async throws {
            do {
                let configuration = try await ConfigurationLoader.load(path: file)
                let products = configuration.catalog.allProducts
                print(
                    "ok: \(configuration.apps.count) app(s) (\(configuration.apps.map(\.name).joined(separator: ", "))), "
                        + "\(products.count) product(s), \(configuration.apiKeys.count) API key(s), "
                        + "storage \(StorageFactory.Location.described(configuration.storageURL))"
                        + (configuration.console.isEnabled
                            ? ", \(configuration.console.operators.count) console operator(s)" : "")
                )
            } catch let error as ConfigurationError {
                for problem in error.problems { print("problem: \(problem)") }
                throw ExitCode(1)
            }
        }
    }
}
