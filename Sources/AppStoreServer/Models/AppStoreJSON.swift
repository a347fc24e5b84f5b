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

    /// An encoder that writes what `makeDecoder()` reads (dates as milliseconds since 1970).
    public static func makeEncoder(pretty: Bool = false) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .millisecondsSince1970
        encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys]
        return encoder
    }
}
