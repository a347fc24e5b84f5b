import BenchmarkFigures
import Foundation
import VerifyFixture

/// Alternating timed rounds of full verifications and raw ES256 verifications of one token.
enum ThroughputRun {
    /// Target length of one round of either kind.
    static let roundDuration: Duration = .seconds(1)
    /// Rounds of each kind. Each round is ~1 s of verifications then ~1 s of raw verifications, so
    /// the whole run (with warm-up and calibration) takes ~16 s.
    static let rounds = 7

    static func run() async throws {
        // Informational: the same measurement on a real Apple token, when the vectors are present.
        if let real = try VerifyFixture.realAppleVector() {
            let (verify, raw) = try await measure(real, label: "real Apple token")
            print(
                "real Apple signedTransactionInfo (\(real.token.utf8.count) bytes): verify \(Int(verify.rounded()))/s"
                    + " raw-p256-verify \(Int(raw.rounded()))/s ratio \(String(format: "%.3f", verify / raw))")
        }
        let (verifyRate, rawRate) = try await measure(try VerifyFixture(), label: "test-chain token")
        let ratio = verifyRate / rawRate
        print(
            "verify-transaction: \(Int(verifyRate.rounded()))/s raw-p256-verify: \(Int(rawRate.rounded()))/s"
                + " ratio: \(String(format: "%.3f", ratio))")
    }

    /// Median rates of full and raw verifications of `fixture`'s token over alternating rounds.
    static func measure(_ fixture: VerifyFixture, label: String) async throws -> (verify: Double, raw: Double) {
        print(
            "\(label): \(fixture.token.utf8.count) bytes, signing input: \(fixture.signingInput.count) bytes;"
                + " \(rounds) rounds of ~\(roundDuration) each, one thread")

        try await fixture.warmUp()
        // Calibration doubles as warm-up: it finds how many operations fill one round.
        let verifyCount = try await roundLength(calibrationRate: verifyRate(fixture, seconds: 0.5))
        let rawCount = try roundLength(calibrationRate: rawRate(fixture, seconds: 0.5))

        var verifyRates: [Double] = []
        var rawRates: [Double] = []
        for round in 1...rounds {
            let verify = try await timeVerifications(fixture, count: verifyCount)
            let raw = try timeRawVerifications(fixture, count: rawCount)
            verifyRates.append(verify)
            rawRates.append(raw)
            print(
                "round \(round): verify-transaction \(Int(verify.rounded()))/s (\(verifyCount) ops),"
                    + " raw-p256-verify \(Int(raw.rounded()))/s (\(rawCount) ops)")
        }

        // Every measured verification must have been served by the cached chain: exactly the
        // warm-up's first verification validated the chain.
        let statistics = fixture.verifier.chainCacheStatistics
        guard statistics.misses == 1, statistics.entries == 1 else {
            throw BenchmarkFailure("measured verifications missed the chain cache: \(statistics)")
        }
        print("chain cache: \(statistics.hits) hits, \(statistics.misses) miss")

        // The median of the rounds, not the best: it is fairer to both sides, as a noisy round
        // (another process on the other core, a frequency change) moves neither figure much.
        return (median(verifyRates), median(rawRates))
    }

    /// Warms up, then runs `verifications` full and `raw` raw verifications, untimed: for profilers.
    static func profile(verifications: Int, raw: Int) async throws {
        let fixture = try VerifyFixture()
        try await fixture.warmUp()
        for _ in 0..<verifications {
            try await fixture.verifyOnce()
        }
        for _ in 0..<raw {
            try fixture.rawVerifyOnce()
        }
        print("profiled \(verifications) verifications and \(raw) raw verifications")
    }

    /// Full verifications per second of `count` sequential verifications.
    static func timeVerifications(_ fixture: VerifyFixture, count: Int) async throws -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        for _ in 0..<count {
            try await fixture.verifyOnce()
        }
        return Double(count) / seconds(clock.now - start)
    }

    /// Raw ES256 verifications per second of `count` sequential verifications.
    static func timeRawVerifications(_ fixture: VerifyFixture, count: Int) throws -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        for _ in 0..<count {
            try fixture.rawVerifyOnce()
        }
        return Double(count) / seconds(clock.now - start)
    }

    /// Verifications per second, verifying for at least `seconds`.
    static func verifyRate(_ fixture: VerifyFixture, seconds limit: Double) async throws -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        var count = 0
        var elapsed = 0.0
        while elapsed < limit {
            for _ in 0..<64 {
                try await fixture.verifyOnce()
            }
            count += 64
            elapsed = seconds(clock.now - start)
        }
        return Double(count) / elapsed
    }

    /// Raw verifications per second, verifying for at least `seconds`.
    static func rawRate(_ fixture: VerifyFixture, seconds limit: Double) throws -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        var count = 0
        var elapsed = 0.0
        while elapsed < limit {
            for _ in 0..<64 {
                try fixture.rawVerifyOnce()
            }
            count += 64
            elapsed = seconds(clock.now - start)
        }
        return Double(count) / elapsed
    }

    static func roundLength(calibrationRate rate: Double) -> Int {
        max(1, Int(rate * seconds(roundDuration)))
    }
}
