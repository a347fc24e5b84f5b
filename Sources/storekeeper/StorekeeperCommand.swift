import ArgumentParser

@main
struct StorekeeperCommand: AsyncParsableCommand {
    static func main() async {
        do {
            var command: any ParsableCommand
            do {
                command = try parseAsRoot()
            } catch  where exitCode(for: error) == .validationFailure {
                // A command line ArgumentParser cannot parse (an unknown option, a value outside an
                // option's type) is a usage error like those the commands find: one status for all.
                standardError(fullMessage(for: error))
                Self.exit(withError: ExitCode(2))
            }
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as UsageError {
            standardError("error: \(error.description)")
            Self.exit(withError: ExitCode(2))
        } catch {
            Self.exit(withError: error)
        }
    }

    static let configuration = CommandConfiguration(
        commandName: "storekeeper",
        abstract: "A self-hosted in-app purchase and subscription server for the App Store and Google Play.",
        subcommands: [
            DemoCommand.self, VerifyCommand.self, SignCommand.self, SimulatorCommand.self, ConfigCommand.self,
            ServeCommand.self,
            MigrateCommand.self, HealthCommand.self,
        ]
    )
}
