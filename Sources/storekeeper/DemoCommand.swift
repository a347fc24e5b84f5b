import ArgumentParser
import Foundation
import Logging
import Storekeeper
import StorekeeperDemo
import StorekeeperServer
import Synchronization
import UnixSignals

/// `storekeeper demo`: the server on SQLite in a temporary directory with the built-in store
/// simulator for both stores, telling a scripted subscription story per store on accelerated
/// time and printing each store event and the customer's entitlements after it.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the server with the store simulator and watch a full subscription lifecycle per store.",
        discussion: """
            Starts Storekeeper on SQLite in a temporary directory, attached to the built-in App Store and \
            Google Play simulator on a simulated clock, then plays a story per store: purchase, renewal, \
            billing failure and recovery, upgrade, a second account presenting the same purchase, \
            cancellation and expiry, a consumable and its refund. Every store notification goes over \
            HTTP to the server's webhooks, signed as the stores sign them; every customer view is the \
            server's answer to GET /v1/customers/{id}.
            """
    )

    @Option(help: "What happens when a second account presents a purchase.")
    var ownershipPolicy: OwnershipPolicy = .keep

    @Flag(help: "Keep the temporary directory (database, keys) and print its path.")
    var keep = false

    @Flag(help: "After the story, keep the server, the simulator and the console running until interrupted.")
    var keepRunning = false

    @Option(help: "The least severe server log level written to standard error.")
    var logLevel = LogLevelArgument(.critical)

    func run() async throws {
        var demoLogger = Logger(label: "storekeeper.demo") { StreamLogHandler.standardError(label: $0) }
        demoLogger.logLevel = logLevel.level
        let logger = demoLogger
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "storekeeper-demo-\(UUID().uuidString.prefix(8))")
        defer { if !keep { try? FileManager.default.removeItem(at: directory) } }
        let options = SimulatedDeployment.Options(
            policies: Policies(ownershipConflict: ownershipPolicy), appStoreGracePeriodDays: 3, directory: directory,
            logger: logger)
        // A fresh password each run; sessions outlive the story's simulated months.
        let password = Self.randomPassword()
        // The app's backend: a webhook receiver checking signatures against the simulated clock,
        // which the deployment creates below.
        let clock = Mutex<(@Sendable () -> Date)?>(nil)
        let simulatedNow: @Sendable () -> Date = { clock.withLock { $0 }?() ?? Date() }
        let storyTold = Mutex(false)
        let interrupted = try await Self.untilInterrupted {
            try await DemoWebhookReceiver.withRunning(now: simulatedNow, logger: logger) { receiver, url in
                var options = options
                options.customize = { simulator, configuration in
                    clock.withLock { $0 = { simulator.clock.now() } }
                    configuration.webhooks = try DemoWebhookReceiver.settings(url: url)
                    configuration.console = ConsoleSettings(
                        operators: [ConsoleOperator(name: "demo", role: .operator, credential: .password(password))],
                        sessionLifetime: 400 * 86_400)
                }
                try await SimulatedDeployment.withRunning(options) { deployment in
                    let endpoints = deployment.simulator.endpoints
                    Self.write("Storekeeper demo")
                    Self.write("  server     \(deployment.baseURL) (SQLite: \(directory.path)/storekeeper.sqlite)")
                    Self.write("  simulator  \(endpoints?.baseURL ?? "?") (App Store and Google Play, simulated clock)")
                    Self.write("  policy     ownership conflicts: \(ownershipPolicy.rawValue)")
                    Self.write("  webhooks   \(url.absoluteString) (the app backend's receiver: ⇢ lines)")
                    Self.write("  console    \(deployment.baseURL)/console (sign in as demo, password \(password))")
                    let story = DemoStory(deployment: deployment, webhooks: receiver) { Self.write(Self.format($0)) }
                    try await story.run()
                    storyTold.withLock { $0 = true }
                    if keepRunning {
                        Self.write("")
                        Self.write("Running until interrupted (Ctrl-C): console at \(deployment.baseURL)/console")
                        while true { try await Task.sleep(for: .seconds(3600)) }
                    }
                }
            }
        }
        if interrupted && !storyTold.withLock({ $0 }) {
            Self.write("")
            Self.write(
                keep ? "Interrupted; kept \(directory.path)" : "Interrupted; the temporary directory is removed.")
            throw ExitCode(130)
        }
        Self.write("")
        Self.write(keep ? "Kept \(directory.path)" : "Done; the temporary directory is removed.")
    }

    /// Runs `body` until it returns or the process gets SIGINT or SIGTERM, which cancels it;
    /// whether a signal came. Trapped rather than left to end the process, so that the directory
    /// with the database and the store keys is removed as after a whole run; a second signal while
    /// `body` winds down ends the process at once.
    static func untilInterrupted(_ body: @escaping @Sendable () async throws -> Void) async throws -> Bool {
        let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint)
        let interrupted = Mutex(false)
        let run = Task { try await body() }
        let watcher = Task {
            for await _ in signals {
                guard !interrupted.withLock({ $0 }) else { Foundation.exit(130) }
                interrupted.withLock { $0 = true }
                run.cancel()
            }
        }
        defer { watcher.cancel() }
        do {
            try await run.value
        } catch {
            // Whatever cancelling it made `body` throw.
            guard interrupted.withLock({ $0 }) else { throw error }
        }
        return interrupted.withLock { $0 }
    }

    static func randomPassword() -> String {
        let alphabet = Array("abcdefghijkmnpqrstuvwxyz23456789")
        var generator = SystemRandomNumberGenerator()
        return String((0..<16).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] })
    }

    static func write(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    static func day(_ date: Date) -> String {
        let parts = Calendar(identifier: .gregorian).dateComponents(
            in: TimeZone(identifier: "UTC") ?? .current, from: date)
        return String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
    }

    static func format(_ line: DemoStory.Line) -> String {
        switch line {
        case .heading(let title):
            return "\n== \(title)"
        case .step(let date, let text):
            return "\(day(date))  \(text)"
        case .storeEvent(let store, let event):
            return "            ← \(store): \(event)"
        case .refusal(let text):
            return "            ✗ refused: \(text)"
        case .catchUp(let text):
            return "            ↻ caught up: \(text)"
        case .consumptionAnswer(let text):
            return "            ⇢ Storekeeper: \(text)"
        case .webhook(let type, let valid):
            return "            ⇢ webhook \(type) delivered (signature \(valid ? "ok" : "INVALID"))"
        case .customer(let id, let view):
            var parts = view.entitlements.sorted { $0.name < $1.name }.map { entitlement in
                let mark = entitlement.active ? "✓" : "✗"
                // "until" while access lasts; an ended one says when access ended, after the state
                // the last news gave ("active, access ended …": a renewal the server has not heard of).
                let until =
                    entitlement.expiresAt.map { end in
                        if entitlement.active { return " until \(day(end))" }
                        return entitlement.state == .expired ? " \(day(end))" : ", access ended \(day(end))"
                    } ?? ""
                return "\(entitlement.name) \(mark) \(entitlement.state.rawValue)\(until) [\(entitlement.productID)]"
            }
            if parts.isEmpty { parts = ["no entitlements"] }
            let balances = view.balances.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
            if !balances.isEmpty { parts.append("balance: " + balances.joined(separator: ", ")) }
            return "            → \(id): " + parts.joined(separator: "; ")
        }
    }
}
