#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The machine's CPU time so far, from the first line of Linux's `/proc/stat`: how much of it the
/// hypervisor gave to other guests (`steal`). On a shared virtual machine the host takes the CPUs
/// away in bursts, and an open loop counts each burst as queueing; a benchmark that prints the
/// steal of its own windows says how much of a figure is the host's. `nil` where there is no
/// `/proc/stat` (macOS) or it cannot be read.
public struct HostCPUTime: Sendable {
    /// Ticks spent in every state the kernel counts (user to steal; guest time is already in user).
    public var total: UInt64
    /// Ticks a virtual CPU wanted to run and the hypervisor ran something else.
    public var steal: UInt64

    public init(total: UInt64, steal: UInt64) {
        self.total = total
        self.steal = steal
    }

    public static func now() -> HostCPUTime? {
        guard let file = fopen("/proc/stat", "r") else { return nil }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 512)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { return nil }
        let line = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return parse(statLine: line)
    }

    /// `cpu  user nice system idle iowait irq softirq steal [guest guest_nice]`.
    public static func parse(statLine line: String) -> HostCPUTime? {
        let fields = line.split(separator: " ")
        guard fields.first == "cpu", fields.count >= 9 else { return nil }
        let ticks = fields[1...8].compactMap { UInt64($0) }
        guard ticks.count == 8 else { return nil }
        return HostCPUTime(total: ticks.reduce(0, +), steal: ticks[7])
    }

    /// The share of the machine's CPU time from `earlier` to `self` that the host stole, in percent
    /// (0 when no tick passed, or `earlier` is not earlier).
    public func stealPercent(since earlier: HostCPUTime) -> Double {
        guard total > earlier.total, steal >= earlier.steal else { return 0 }
        return Double(steal - earlier.steal) / Double(total - earlier.total) * 100
    }
}

/// The steal from `start` to now, in percent, or `nil` where the machine does not say.
public func stealPercent(since start: HostCPUTime?) -> Double? {
    guard let start, let end = HostCPUTime.now() else { return nil }
    return end.stealPercent(since: start)
}

/// `; the host stole <S> % of the CPU time meanwhile` for the steal from `start` to now, as the
/// benchmarks end a phase's line with it; empty where the machine does not say.
public func stolenMeanwhile(since start: HostCPUTime?) -> String {
    guard let percent = stealPercent(since: start) else { return "" }
    // One decimal, as the benchmarks print their other percentages (this module has no Foundation).
    let tenths = Int((percent * 10).rounded())
    return "; the host stole \(tenths / 10).\(tenths % 10) % of the CPU time meanwhile"
}
