public import Foundation

/// A 64-bit integer that Google sends as a JSON string (`"format": "int64"`).
///
/// Decodes from a JSON string of decimal digits or from a JSON integer; always encodes as a string.
/// A string that is not a valid `Int64` is a decoding error.
public struct Int64String: RawRepresentable, Codable, Hashable, Comparable, Sendable,
    CustomStringConvertible, ExpressibleByIntegerLiteral
{
    /// The integer value.
    public var rawValue: Int64

    /// Wraps `rawValue`.
    public init(rawValue: Int64) { self.rawValue = rawValue }

    /// Wraps `value`.
    public init(_ value: Int64) { self.rawValue = value }

    /// Wraps an integer literal.
    public init(integerLiteral value: Int64) { self.rawValue = value }

    /// Parses a decimal string (optional leading `-`); `nil` if it is not a valid `Int64`.
    public init?(_ string: String) {
        guard let value = Int64(string) else { return nil }
        self.rawValue = value
    }

    /// Milliseconds since the Unix epoch wrapped as a value (for `...TimeMillis` fields).
    public init(milliseconds date: Date) {
        self.rawValue = Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let string = try? container.decode(String.self) {
            guard let value = Int64(string) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "Expected an int64 string, found \"\(string)\".")
            }
            self.rawValue = value
        } else {
            self.rawValue = try container.decode(Int64.self)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(String(rawValue))
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { String(rawValue) }

    /// The value read as milliseconds since the Unix epoch.
    public var dateFromMilliseconds: Date {
        Date(timeIntervalSince1970: Double(rawValue) / 1000)
    }
}
