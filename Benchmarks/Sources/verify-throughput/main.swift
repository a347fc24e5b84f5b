import Foundation

// Single-core App Store signed-data verification throughput next to raw P-256 ECDSA verification
// throughput, measured in the same process on the same thread. The last line printed is the summary:
//
//     verify-transaction: <N>/s raw-p256-verify: <M>/s ratio: <R>
//
// Run in release: swift run -c release --package-path Benchmarks verify-throughput
//
// For a profiler, `verify-throughput profile-verify <count>` (or `profile-raw <count>`) warms up and
// then runs only that many operations of one kind, untimed.

// Top-level code runs on the main actor; the measurement itself runs in nonisolated async
// functions, so each `await verifier.verify(...)` stays on the one thread running the task and
// never hops between executors.
let arguments = CommandLine.arguments.dropFirst()
switch (arguments.first, arguments.dropFirst().first.flatMap { Int($0) }) {
case (nil, _):
    try await ThroughputRun.run()
case ("profile-verify", let count?):
    try await ThroughputRun.profile(verifications: count, raw: 0)
case ("profile-raw", let count?):
    try await ThroughputRun.profile(verifications: 0, raw: count)
default:
    print("usage: verify-throughput [profile-verify <count> | profile-raw <count>]")
    exit(2)
}
