/// The value below which `fraction` of `sorted` (ascending) lies; 0 for none. The load
/// generators' latency summaries (customer-read, ingest-throughput) all read their percentiles so.
public func percentile(_ fraction: Double, of sorted: [Double]) -> Double {
    guard !sorted.isEmpty else { return 0 }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count) * fraction).rounded(.down)))]
}
