/// A type that is a string underneath — an id, or an open set of names a newer build or a store
/// may extend — encoded as the bare string (RawRepresentable's own Codable), ordered and printed
/// as it.
public protocol StringValue: RawRepresentable, Sendable, Hashable, Codable, Comparable, CustomStringConvertible
where RawValue == String {
    init(rawValue: String)
}

extension StringValue {
    public init(_ rawValue: String) { self.init(rawValue: rawValue) }
    public var description: String { rawValue }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}
