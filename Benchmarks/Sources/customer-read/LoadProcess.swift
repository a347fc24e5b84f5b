import Foundation
import NIOPosix

/// One window of an ``OpenLoopReader`` run in a child process: this executable started again as
/// `customer-read load …`.
///
/// Why a process of its own: in the servers' process the load generator shares the two-thread
/// cooperative pool with both servers, and its sends and timestamps waited behind their work (one
/// freeze of about 50 ms every 2–4 s, on both backends and both database sizes, which an external
/// `wrk` against the same server never saw). The kernel schedules processes preemptively; Swift's
/// pool does not preempt tasks.
struct LoadProcess: Sendable {
    let baseURL: String
    let page: OpenLoopReader.Page
    let customers: Int
    let rate: Double
    let checkEvery: Int

    /// Runs one window in a child and returns what it measured. `random` picks the child's seed, so
    /// a run's customer sequence repeats with the benchmark's seed.
    func run(seconds: Double, random: inout SplitMix64) async throws -> OpenLoopReader.Window {
        let (pageName, credential) = Self.describe(page)
        let arguments = [
            "load", "--url", baseURL, "--page", pageName, "--customers", String(customers), "--rate", String(rate),
            "--seconds", String(seconds), "--seed", String(random.next()), "--check-every", String(checkEvery),
        ]
        // The API key or session cookie goes in the environment, not on the command line, where
        // any user's `ps` would show it.
        var environment = ProcessInfo.processInfo.environment
        environment[Self.credentialVariable] = credential
        let output = try await Self.runChild(arguments: arguments, environment: environment)
        do {
            return try JSONDecoder().decode(OpenLoopReader.Window.self, from: output)
        } catch {
            throw BenchmarkError(
                "the load process's answer is not a window (\(error)): \(String(decoding: output.prefix(300), as: UTF8.self))"
            )
        }
    }

    static let credentialVariable = "STOREKEEPER_BENCH_LOAD_CREDENTIAL"

    private static func describe(_ page: OpenLoopReader.Page) -> (name: String, credential: String) {
        switch page {
        case .customerAPI(let apiKey): ("api", apiKey)
        case .consoleCustomer(let cookie): ("console-customer", cookie)
        case .consoleOverview(let cookie): ("console-overview", cookie)
        }
    }

    /// Starts this executable with `arguments` and returns its standard output once it exits 0.
    /// The blocking waits run on a thread of their own, off the cooperative pool the servers use.
    private static func runChild(arguments: [String], environment: [String: String]) async throws -> Data {
        let process = Process()
        process.executableURL = Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = arguments
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                let data = output.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                continuation.resume(returning: data)
            }
        }
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            throw BenchmarkError("the load process failed (status \(process.terminationStatus)); see its output above")
        }
        return data
    }

    /// The child's side: `customer-read load --url U --page P --customers N --rate R --seconds S
    /// --seed X --check-every K`, the credential in ``credentialVariable``. Opens its connections
    /// with a short unmeasured run at the rate, runs the window, and writes it as JSON to standard
    /// output.
    static func childMain(arguments: [String]) async throws {
        var values: [String: String] = [:]
        var remaining = arguments[...]
        while let flag = remaining.popFirst() {
            guard flag.hasPrefix("--"), let value = remaining.popFirst() else {
                throw BenchmarkError("\(flag) needs a value")
            }
            values[String(flag.dropFirst(2))] = value
        }
        func value(_ name: String) throws -> String {
            guard let value = values[name] else { throw BenchmarkError("--\(name) is missing") }
            return value
        }
        func number(_ name: String) throws -> Double {
            guard let number = Double(try value(name)), number > 0 else {
                throw BenchmarkError("--\(name) \(values[name] ?? "") is not a positive number")
            }
            return number
        }
        guard let credential = ProcessInfo.processInfo.environment[credentialVariable], !credential.isEmpty else {
            throw BenchmarkError("\(credentialVariable) is not set")
        }
        let page: OpenLoopReader.Page
        switch try value("page") {
        case "api": page = .customerAPI(apiKey: credential)
        case "console-customer": page = .consoleCustomer(cookie: credential)
        case "console-overview": page = .consoleOverview(cookie: credential)
        case let other: throw BenchmarkError("unknown page \(other)")
        }
        guard let seed = UInt64(try value("seed")) else { throw BenchmarkError("--seed is not a number") }
        guard let url = URLComponents(string: try value("url")), let host = url.host, let port = url.port else {
            throw BenchmarkError("--url \(values["url"] ?? "") has no host and port")
        }
        // One event loop: the sender's whole job is a timer and a few sockets.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let reader = OpenLoopReader(
            loop: group.next(), host: host, port: port, page: page, customers: Int(try number("customers")),
            rate: try number("rate"), checkEvery: Int(try number("check-every")))
        let connections = OpenLoopReader.ConnectionPool()
        var random = SplitMix64(seed: seed)
        // A new process has no connections yet: open them before the measured window.
        _ = await reader.run(seconds: 0.2, random: &random, connections: connections)
        let window = await reader.run(seconds: try number("seconds"), random: &random, connections: connections)
        try await group.shutdownGracefully()
        FileHandle.standardOutput.write(try JSONEncoder().encode(window))
    }
}
