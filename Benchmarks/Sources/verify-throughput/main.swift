// Single-core App Store signed-data verification throughput next to raw P-256 ECDSA verification
// throughput, measured in the same process on the same thread. The last line printed is the summary:
//
//     verify-transaction: <N>/s raw-p256-verify: <M>/s ratio: <R>
//
// Run in release: swift run -c release --package-path Benchmarks verify-throughput

// Top-level code runs on the main actor; the measurement itself runs in a nonisolated async
// function, so each `await verifier.verify(...)` stays on the one thread running the task and
// never hops between executors.
try await ThroughputRun.run()
