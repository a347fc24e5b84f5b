import Foundation

/// A piece of HTML. Written as a string literal, the literal text is markup and every `String`
/// interpolated into it is escaped by ``escape(_:)``, the console's one escaping function; only
/// other `HTML` values go in unescaped. Customer data therefore always renders as text.
struct HTML: Sendable, Hashable, ExpressibleByStringInterpolation, CustomStringConvertible {
    private(set) var text: String

    init(stringLiteral value: String) { text = value }
    init(stringInterpolation: StringInterpolation) { text = stringInterpolation.text }
    private init(markup: String) { text = markup }

    static let empty = HTML(markup: "")

    var description: String { text }

    /// `&`, `<`, `>`, `"` and `'` as character references: safe inside elements and quoted
    /// attribute values alike.
    static func escape(_ value: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(value.utf8.count)
        for character in value.unicodeScalars {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }

    static func joined(_ parts: [HTML]) -> HTML { HTML(markup: parts.map(\.text).joined()) }

    struct StringInterpolation: StringInterpolationProtocol {
        var text = ""

        init(literalCapacity: Int, interpolationCount: Int) { text.reserveCapacity(literalCapacity * 2) }

        mutating func appendLiteral(_ literal: String) { text += literal }
        mutating func appendInterpolation(_ value: String) { text += HTML.escape(value) }
        mutating func appendInterpolation(_ value: String?) { text += HTML.escape(value ?? "") }
        mutating func appendInterpolation(_ value: Int) { text += String(value) }
        mutating func appendInterpolation(_ value: HTML) { text += value.text }
        mutating func appendInterpolation(_ values: [HTML]) { for value in values { text += value.text } }
    }
}

/// Dates and numbers as the console shows them (UTC, to the second).
enum ConsoleFormat {
    static func date(_ date: Date?) -> String {
        guard let date else { return "—" }
        return date.formatted(
            Date.ISO8601FormatStyle(timeZone: TimeZone(identifier: "UTC") ?? .current).year().month().day()
                .dateTimeSeparator(.space).time(includingFractionalSeconds: false)) + " UTC"
    }

    static func day(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(timeZone: TimeZone(identifier: "UTC") ?? .current).year().month().day())
    }

    /// An amount in millionths of a currency unit, to the hundredth (`-12.99`).
    static func amount(_ micros: Int64) -> String {
        let cents = (Double(micros) / 10_000).rounded()
        let sign = cents < 0 ? "-" : ""
        let whole = Int64(abs(cents)) / 100
        let fraction = Int64(abs(cents)) % 100
        return "\(sign)\(whole).\(fraction < 10 ? "0" : "")\(fraction)"
    }

    /// A URL path segment or query value, percent-encoded.
    static func component(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }
}
