public import Foundation

/// The JSON conventions of App Store payloads: dates are milliseconds since 1970 (fractional values
/// are accepted), unknown keys are ignored, and unknown enum values keep their raw value (each
/// model enum is a `RawRepresentable` struct, so any value the store adds later still decodes).
public enum AppStoreJSON {
    /// A decoder for App Store payloads and API responses.
    public static func makeDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        return decoder
    }

    /// An encoder that writes what `makeDecoder()` reads: dates as whole milliseconds since 1970, as
    /// Apple sends them (a date between two milliseconds is rounded to the nearer one; strict int64
    /// decoders refuse a fractional value).
    public static func makeEncoder(pretty: Bool = false) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            guard let milliseconds = milliseconds(date) else {
                throw EncodingError.invalidValue(
                    date,
                    EncodingError.Context(
                        codingPath: encoder.codingPath,
                        debugDescription: "\(date) is not representable as int64 milliseconds since 1970"))
            }
            try container.encode(milliseconds)
        }
        encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys]
        return encoder
    }

    /// `date` as whole milliseconds since 1970, rounded to the nearer millisecond; nil when it does
    /// not fit an `Int64`.
    public static func milliseconds(_ date: Date) -> Int64? {
        Int64(exactly: (date.timeIntervalSince1970 * 1000).rounded())
    }
}
