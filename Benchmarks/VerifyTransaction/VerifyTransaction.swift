import Benchmark
import VerifyFixture

// `verify-transaction`: the full offline verification of a production signedTransactionInfo with a
// warm chain cache (decode, cache lookup, one ES256 verification, identity checks).
// `raw-p256-verify`: swift-crypto's P-256 verification of the same signing input with the same key,
// the floor the first one is compared against.
let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration(
        metrics: [.throughput, .wallClock, .mallocCountTotal],
        warmupIterations: 100,
        scalingFactor: .one,
        maxDuration: .seconds(3),
        maxIterations: 1_000_000
    )
    let fixture: VerifyFixture
    do {
        fixture = try VerifyFixture()
    } catch {
        fatalError("cannot build the verification fixture: \(error)")
    }

    Benchmark("verify-transaction", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations {
            try await fixture.verifyOnce()
        }
    } setup: {
        // Validates and caches the chain, so every measured iteration is steady state.
        try await fixture.warmUp()
    }

    Benchmark("raw-p256-verify", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations {
            try fixture.rawVerifyOnce()
        }
    } setup: {
        try fixture.rawVerifyOnce()
    }
}
