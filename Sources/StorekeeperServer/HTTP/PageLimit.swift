/// A listing's `limit` query parameter, the same on every listing: 1 to 1,000, 100 when absent.
enum PageLimit {
    static let defaultValue = 100
    static let maximum = 1000

    static func parse(_ raw: String?) throws(ServerError) -> Int {
        guard let raw else { return defaultValue }
        guard let value = Int(raw), (1...maximum).contains(value) else {
            throw ServerError(.invalidQuery, "limit must be 1 to \(maximum)")
        }
        return value
    }
}
