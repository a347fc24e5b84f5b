#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// CPU seconds (user and system) this process has used: less sensitive than a rate or a latency to
/// the host's slow stretches, which take time from every thread alike. The benchmarks run the
/// server in their own process and the load generator outside it (or at a small cost), so the
/// difference across a window is mostly the server's.
public func processCPUSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}
