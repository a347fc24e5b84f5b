/// The median of `values` (the mean of the middle two for an even count): how the verification
/// benchmarks summarize their repeated passes (`verify-throughput`'s rounds, `ingest-throughput`'s
/// verifier-alone passes).
public func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count.isMultiple(of: 2) ? (sorted[middle - 1] + sorted[middle]) / 2 : sorted[middle]
}
