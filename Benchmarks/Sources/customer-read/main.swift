import Foundation
import LoadHTTP
import Logging
import NIOCore
import Storekeeper
import StorekeeperDemo
import StorekeeperServer
import StorekeeperStorage

// The customer view (`GET /v1/customers/{id}`) with a million customers stored, next to the same
// read with ten thousand, at a fixed open-loop arrival rate: does the read stay fast as the
// database grows? Each storage is seeded twice (``SeedSQL``: 1,000,000 and 10,000 customers with
// subscriptions and their renewal history, consumables and their ledger; cached between runs), a
// real server (``SimulatedDeployment``: loopback HTTP, the real routes, API key auth) runs on each,
// and both are read in alternating windows so that other load on the machine falls on both alike.
// Latency runs from each request's scheduled send time, measured by a load generator in a process
// of its own (``LoadProcess``). The background jobs' queries are timed on each database too. First,
// as context, how steady the machine's CPUs are (``CPUSteadiness``).
// SQLite always; PostgreSQL too when STOREKEEPER_BENCH_POSTGRES_URL names a database on a server
// where its user may create databases. The last line, for SQLite:
//
//     customer-read: 1000000 customers p99 <X> ms, 10000 customers p99 <Y> ms at <Z> req/s
//
// Run in release: swift run -c release --package-path Benchmarks customer-read [--rate 1000]
//     [--seconds 30] [--rounds 15] [--customers 1000000,10000] [--cache DIR] [--seed N]

// The load generator of one window, started by the benchmark itself (see LoadProcess).
if CommandLine.arguments.dropFirst().first == "load" {
    do {
        try await LoadProcess.childMain(arguments: Array(CommandLine.arguments.dropFirst(2)))
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("customer-read load: \(error)\n".utf8))
        exit(1)
    }
}

let options: CustomerRead.Options
do {
    options = try CustomerRead.Options(arguments: Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("customer-read: \(error)\n".utf8))
    exit(2)
}
var logger = Logger(label: "customer-read")
logger.logLevel = .critical
var backends: [SeededDatabase.Backend] = [.sqlite(cacheDirectory: options.cacheDirectory)]
if let url = ProcessInfo.processInfo.environment["STOREKEEPER_BENCH_POSTGRES_URL"], !url.isEmpty {
    backends.append(.postgresql(serverURL: url))
}
say(
    "customer-read: \(Int(options.rate)) req/s for \(CustomerRead.format(options.seconds)) s per database "
        + "in \(options.rounds) alternating windows, customers picked with seed \(options.seed); cache "
        + options.cacheDirectory.path)
// Context for the figures, not part of them: how steady the CPUs are while nothing else runs.
let steadinessHost = HostCPUTime.now()
let steadiness = CPUSteadiness.measure(seconds: 5)
let steadinessSteal = stolenMeanwhile(since: steadinessHost)
say(
    "CPU steadiness: over 5 s idle, \(steadiness.cores) cores each repeating a \(Int(steadiness.medianMicroseconds.rounded())) µs "
        + "unit of arithmetic: \(steadiness.slowWindows) of \(steadiness.windows) 20 ms windows took ≥ "
        + "\(CustomerRead.format(CPUSteadiness.slowFactor))× the median (\(steadiness.slowOnAllCores) on every core at once), "
        + "the slowest \(CustomerRead.format(steadiness.worst))×"
        + steadinessSteal)
var summaries: [String: String] = [:]
var failed = false
do {
    for backend in backends {
        let large = try await CustomerRead.prepare(backend, customers: options.large, logger: logger)
        let small = try await CustomerRead.prepare(backend, customers: options.small, logger: logger)
        let result = try await CustomerRead(
            options: options, backend: backend, large: large, small: small, logger: logger
        ).run()
        summaries[backend.name] =
            "\(options.large) customers p99 \(CustomerRead.format(result.large.p99)) ms, \(options.small) customers "
            + "p99 \(CustomerRead.format(result.small.p99)) ms at \(Int(result.achievedRate.rounded())) req/s"
        if result.large.failures + result.small.failures > 0 { failed = true }
        if backend.name != "sqlite", let summary = summaries[backend.name] {
            say("customer-read[\(backend.name)]: \(summary)")
        }
    }
} catch {
    FileHandle.standardError.write(Data("customer-read failed: \(error)\n".utf8))
    failed = true
}
if let summary = summaries["sqlite"] { say("customer-read: \(summary)") }
if failed { exit(1) }
