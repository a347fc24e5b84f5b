import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import StoreSimulator

/// `storekeeper simulator`: runs the store simulator on its own, for trying clients by hand and for
/// users' integration tests.
struct SimulatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulator",
        abstract:
            "Run the store simulator on loopback and print its URLs and the paths of its root certificate and Google service account key.",
        discussion: """
            The simulator signs everything with its own test chain; trust its root explicitly \
            (--allow-root, or an allowed root in a server configuration). Google's client libraries \
            authenticate with the service account key file it writes (its token_uri is the simulator). \
            Stop it with Ctrl-C or SIGTERM.
            """
    )

    @Option(help: "The port to listen on (0 picks a free one).")
    var port: Int = 0

    @Option(help: "Simulated seconds per real second (86400 runs a day per second).")
    var rate: Double = 1

    @Option(help: "Where to write the root certificate and service account key (default: a new temporary directory).")
    var directory: String?

    func run() async throws {
        guard (0...65_535).contains(port) else { throw UsageError("--port takes 0 to 65535") }
        guard rate >= 0, rate.isFinite else { throw UsageError("--rate takes a number ≥ 0") }
        var logger = Logger(label: "storekeeper.simulator")
        logger.logLevel = .warning
        let simulator = StoreSimulator(
            configuration: .init(
                port: port, rate: rate, directory: directory.map { URL(fileURLWithPath: $0) }, logger: logger))
        let group = ServiceGroup(
            services: [SimulatorService(simulator: simulator)], gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger)
        try await group.run()
    }
}

/// The simulator as a service: started, announced, stopped on graceful shutdown.
struct SimulatorService: Service {
    let simulator: StoreSimulator

    func run() async throws {
        let endpoints = try await simulator.start()
        let serviceAccount = try simulator.writeServiceAccount()
        // Written unbuffered: scripts read these lines while the simulator runs.
        let announcement = [
            "simulator: \(endpoints.baseURL)",
            "app store api (production): \(endpoints.productionBaseURL)",
            "app store api (sandbox): \(endpoints.sandboxBaseURL)",
            "control: \(endpoints.controlURL)",
            "ocsp: \(endpoints.ocspURL)",
            "root certificate: \(endpoints.rootCertificatePath)",
            "google service account: \(serviceAccount.path)",
            "google jwks: \(endpoints.baseURL)\(GooglePlayIdentity.certsPath)",
        ]
        FileHandle.standardOutput.write(Data((announcement.joined(separator: "\n") + "\n").utf8))
        try? await gracefulShutdown()
        await simulator.stop()
    }
}
