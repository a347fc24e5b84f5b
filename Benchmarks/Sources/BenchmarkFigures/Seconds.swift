/// `duration` in seconds, as the benchmarks compute and print their rates.
public func seconds(_ duration: Duration) -> Double {
    let (whole, attoseconds) = duration.components
    return Double(whole) + Double(attoseconds) * 1e-18
}
