import BenchmarkFigures
import Foundation
import Synchronization

/// How steady this machine's CPUs are, measured in the same run as context for the latency
/// figures: one thread per core repeats the same small unit of arithmetic (no memory, no system
/// calls) and times each. On a steady machine every unit takes about as long as the median. On a
/// virtual machine whose host is busy, the vCPUs run slower for stretches: in 20 ms windows the same
/// work takes several times longer, on every core at once. A server answering an open-loop load
/// near its capacity falls behind in such a stretch, and its queue is what the p99 then shows.
struct CPUSteadiness {
    struct Report: Sendable {
        var cores = 0
        var medianMicroseconds = 0.0
        /// 20 ms windows measured on each core.
        var windows = 0
        /// Windows whose units took ≥ `slowFactor` × their core's median on average.
        var slowWindows = 0
        /// Windows slow on every core at once.
        var slowOnAllCores = 0
        /// The largest mean of a window over its core's median.
        var worst = 0.0
    }

    static let window = 0.020
    static let slowFactor = 1.5
    /// Iterations of one unit: a few microseconds in a release build.
    static let unitIterations = 20_000

    /// Runs the probe for `seconds` on every core; blocks the calling thread meanwhile.
    static func measure(seconds: Double) -> Report {
        let cores = max(ProcessInfo.processInfo.activeProcessorCount, 1)
        // Room for every unit's timing, so that no array grows (and copies) during the probe.
        let unitEstimate = timeUnits(100) / 100
        let capacity = Int(seconds / max(unitEstimate, 1e-7) * 1.5) + 1_024
        let start = ContinuousClock.now
        let deadline = start.advanced(by: .seconds(seconds))
        let samples = Mutex<[[(offset: Double, duration: Double)]]>(Array(repeating: [], count: cores))
        let done = DispatchGroup()
        for core in 0..<cores {
            done.enter()
            let thread = Thread {
                var mine: [(offset: Double, duration: Double)] = []
                mine.reserveCapacity(capacity)
                var state: UInt64 = UInt64(core) + 1
                while ContinuousClock.now < deadline {
                    let began = ContinuousClock.now
                    state = unit(state)
                    let ended = ContinuousClock.now
                    mine.append((BenchmarkFigures.seconds(began - start), BenchmarkFigures.seconds(ended - began)))
                }
                keep(state)
                samples.withLock { $0[core] = mine }
                done.leave()
            }
            thread.start()
        }
        done.wait()
        return report(samples.withLock { $0 }, seconds: seconds)
    }

    /// One unit of the probe's work: arithmetic only, no memory, no system calls.
    static func unit(_ state: UInt64) -> UInt64 {
        var state = state
        for _ in 0..<unitIterations {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        }
        return state
    }

    /// Seconds `count` units take on this thread.
    static func timeUnits(_ count: Int) -> Double {
        var state: UInt64 = 1
        let began = ContinuousClock.now
        for _ in 0..<count { state = unit(state) }
        let elapsed = seconds(ContinuousClock.now - began)
        keep(state)
        return elapsed
    }

    /// Keeps the arithmetic from being optimized away.
    static func keep(_ state: UInt64) {
        if state == 0 { FileHandle.standardError.write(Data()) }
    }

    static func report(_ perCore: [[(offset: Double, duration: Double)]], seconds: Double) -> Report {
        var report = Report(cores: perCore.count)
        let windowCount = Int(seconds / window)
        var slowCores = Array(repeating: 0, count: windowCount)
        var medians: [Double] = []
        for units in perCore where !units.isEmpty {
            let median = units.map(\.duration).sorted()[units.count / 2]
            medians.append(median)
            var sums = Array(repeating: 0.0, count: windowCount)
            var counts = Array(repeating: 0, count: windowCount)
            // A unit ten times the median was preempted inside the guest, not slowed: left out.
            for unit in units where unit.duration < 10 * median {
                let index = Int(unit.offset / window)
                guard index < windowCount else { continue }
                sums[index] += unit.duration
                counts[index] += 1
            }
            for index in 0..<windowCount where counts[index] > 0 {
                report.windows += 1
                let ratio = sums[index] / Double(counts[index]) / median
                report.worst = max(report.worst, ratio)
                if ratio >= slowFactor {
                    report.slowWindows += 1
                    slowCores[index] += 1
                }
            }
        }
        report.slowOnAllCores = slowCores.filter { $0 == perCore.count }.count
        report.medianMicroseconds = medians.isEmpty ? 0 : medians.reduce(0, +) / Double(medians.count) * 1e6
        return report
    }
}
