package import Foundation
import StoreCore

/// Writes JSON as Foundation's JSONEncoder does with `.sortedKeys` and `.iso8601`, for the bodies
/// written often enough that the encoder's generic machinery shows in profiles (events, the
/// customer view, and with dates as milliseconds the App Store record's payload); each type's own
/// writer lists its members in this order:
/// - members in the UTF-8 byte order of their keys (so `refundRequestStatus` comes before
///   `refundedShare`), nil optionals left out, no whitespace; a dictionary's keys the same way;
/// - strings escape `"`, `\` and `/`; `\b \t \n \f \r` by name, other bytes below 0x20 as `\u00xx`
///   (lowercase hex); everything else, DEL and non-ASCII included, as is;
/// - dates as `yyyy-MM-ddTHH:mm:ssZ` in UTC, the seconds rounded down (before 1970 too);
/// - doubles as Swift's shortest round-trip `description` without a trailing `.0`;
/// - UUIDs as the uppercase `uuidString`.
///
/// It writes into a fixed buffer rather than an array: appending byte by byte to an array checks
/// its uniqueness each time. Every write checks the space left; one that does not fit marks the
/// writer full and writes nothing more, and ``data(capacity:_:)`` starts again with more room.
package struct SortedKeysJSONWriter {
    private let buffer: UnsafeMutableBufferPointer<UInt8>
    private var count = 0
    private var isFull = false
    /// Whether the object being written has no member yet: no comma before its next key.
    private var atObjectStart = true

    private init(into buffer: UnsafeMutableBufferPointer<UInt8>) {
        self.buffer = buffer
    }

    /// What `write` writes, starting with room for `capacity` bytes (enough for a typical body;
    /// a longer one is written again into a buffer four times larger).
    package static func data(capacity: Int, _ write: (inout SortedKeysJSONWriter) throws -> Void) rethrows -> Data {
        var capacity = capacity
        while true {
            let data = try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { buffer in
                var writer = SortedKeysJSONWriter(into: buffer)
                try write(&writer)
                return writer.isFull ? nil : Data(UnsafeBufferPointer(rebasing: buffer[..<writer.count]))
            }
            if let data { return data }
            capacity *= 4
        }
    }

    // MARK: Objects

    package mutating func beginObject() {
        append(UInt8(ascii: "{"))
        atObjectStart = true
    }

    package mutating func endObject() {
        append(UInt8(ascii: "}"))
        atObjectStart = false
    }

    /// `"key":`, after a comma unless it is the object's first member. Keys are plain ASCII names.
    package mutating func key(_ name: StaticString) {
        separateMember()
        append(UInt8(ascii: "\""))
        name.withUTF8Buffer { append($0) }
        append(UInt8(ascii: "\""))
        append(UInt8(ascii: ":"))
    }

    /// The comma before every member of an object but its first.
    private mutating func separateMember() {
        if !atObjectStart { append(UInt8(ascii: ",")) }
        atObjectStart = false
    }

    package mutating func member(_ name: StaticString, _ value: String?) {
        guard let value else { return }
        key(name)
        write(value)
    }

    /// Identifiers and enums: RawRepresentable's Codable encodes the bare raw value.
    package mutating func member<Value: RawRepresentable<String>>(_ name: StaticString, _ value: Value?) {
        guard let value else { return }
        key(name)
        write(value.rawValue)
    }

    package mutating func member(_ name: StaticString, _ value: Int?) {
        guard let value else { return }
        key(name)
        write(value)
    }

    mutating func member(_ name: StaticString, _ value: Bool?) {
        guard let value else { return }
        key(name)
        append(value ? "true" : "false")
    }

    mutating func member(_ name: StaticString, _ value: Date?) {
        guard let value else { return }
        key(name)
        write(value)
    }

    mutating func member(_ name: StaticString, _ value: UUID?) {
        guard let value else { return }
        key(name)
        write(value)
    }

    /// An array of `elements`, each written by `write`.
    package mutating func array<Element>(_ elements: [Element], _ write: (inout Self, Element) throws -> Void) rethrows
    {
        append(UInt8(ascii: "["))
        for (index, element) in elements.enumerated() {
            if index > 0 { append(UInt8(ascii: ",")) }
            try write(&self, element)
        }
        append(UInt8(ascii: "]"))
    }

    package mutating func member(_ name: StaticString, _ strings: [String]) {
        key(name)
        array(strings) { $0.write($1) }
    }

    /// A dictionary as JSONEncoder writes `[String: Int]`: an object, its keys in UTF-8 byte order.
    mutating func member(_ name: StaticString, _ dictionary: [String: Int]) {
        key(name)
        beginObject()
        for (entryKey, value) in dictionary.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
            separateMember()
            write(entryKey)
            append(UInt8(ascii: ":"))
            write(value)
        }
        endObject()
    }

    // MARK: Values

    /// Whether `length` more bytes fit; when they do not, the writer is full.
    private mutating func reserve(_ length: Int) -> Bool {
        guard !isFull, length <= buffer.count - count else {
            isFull = true
            return false
        }
        return true
    }

    private mutating func append(_ byte: UInt8) {
        guard reserve(1) else { return }
        buffer[count] = byte
        count += 1
    }

    private mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard reserve(bytes.count) else { return }
        _ = UnsafeMutableBufferPointer(rebasing: buffer[count..<(count + bytes.count)]).initialize(
            fromContentsOf: bytes)
        count += bytes.count
    }

    private mutating func append(_ text: StaticString) {
        text.withUTF8Buffer { append($0) }
    }

    package mutating func write(_ string: String) {
        append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { utf8 in
            // Copies runs of bytes that need no escape in one go.
            var runStart = 0
            for index in utf8.indices {
                let byte = utf8[index]
                guard
                    byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "/")
                else { continue }
                append(UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                writeEscaped(byte)
                runStart = index + 1
            }
            append(UnsafeBufferPointer(rebasing: utf8[runStart...]))
        }
        append(UInt8(ascii: "\""))
    }

    private mutating func writeEscaped(_ byte: UInt8) {
        append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): append(byte)
        case 0x08: append(UInt8(ascii: "b"))
        case 0x09: append(UInt8(ascii: "t"))
        case 0x0A: append(UInt8(ascii: "n"))
        case 0x0C: append(UInt8(ascii: "f"))
        case 0x0D: append(UInt8(ascii: "r"))
        default:
            append("u00")
            append(Self.lowercaseHex(byte >> 4))
            append(Self.lowercaseHex(byte & 0x0F))
        }
    }

    package mutating func write(_ value: Int) {
        // The magnitude, so Int.min needs no special case.
        var magnitude = value.magnitude
        var digits = 1
        while magnitude >= 10 {
            magnitude /= 10
            digits += 1
        }
        let length = digits + (value < 0 ? 1 : 0)
        guard reserve(length) else { return }
        if value < 0 { buffer[count] = UInt8(ascii: "-") }
        magnitude = value.magnitude
        for index in stride(from: count + length - 1, through: count + length - digits, by: -1) {
            buffer[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
            magnitude /= 10
        }
        count += length
    }

    mutating func write(_ value: Double, at path: [String]) throws {
        guard value.isFinite else {
            throw EncodingError.invalidValue(
                value,
                EncodingError.Context(
                    codingPath: path.map(PathKey.init), debugDescription: "Unable to encode \(value) directly in JSON.")
            )
        }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        text.withUTF8 { append($0) }
    }

    mutating func write(_ id: UUID) {
        append(UInt8(ascii: "\""))
        withUnsafeBytes(of: id.uuid) { raw in
            for (index, byte) in raw.enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 { append(UInt8(ascii: "-")) }
                append(Self.uppercaseHex(byte >> 4))
                append(Self.uppercaseHex(byte & 0x0F))
            }
        }
        append(UInt8(ascii: "\""))
    }

    /// 1582-10-15T00:00:00Z, when the Gregorian calendar starts: Foundation writes earlier dates in
    /// the Julian calendar.
    private static let firstGregorianSecond: TimeInterval = -13_197_600_000
    /// 10000-01-01T00:00:00Z: Foundation writes five-digit years from then on.
    private static let firstFiveDigitYearSecond: TimeInterval = 252_423_993_600
    private static let secondsFrom1970ToReference: Int64 = 978_307_200

    mutating func write(_ date: Date) {
        let sinceReference = date.timeIntervalSinceReferenceDate
        guard sinceReference >= Self.firstGregorianSecond, sinceReference < Self.firstFiveDigitYearSecond else {
            // Julian dates, five-digit years, NaN: left to the formatter JSONEncoder itself calls.
            write(date.formatted(.iso8601))
            return
        }
        // In range, so the conversion cannot trap; rounded down, as Foundation does, before 1970 too.
        let seconds = Int64(sinceReference.rounded(.down)) + Self.secondsFrom1970ToReference
        let days = CivilDate.floorDivision(seconds, 86_400)
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = CivilDate.date(daysSince1970: days)
        append(UInt8(ascii: "\""))
        writeDigits(Int(year / 100))
        writeDigits(Int(year % 100))
        append(UInt8(ascii: "-"))
        writeDigits(Int(month))
        append(UInt8(ascii: "-"))
        writeDigits(Int(day))
        append(UInt8(ascii: "T"))
        writeDigits(Int(secondOfDay / 3600))
        append(UInt8(ascii: ":"))
        writeDigits(Int(secondOfDay / 60 % 60))
        append(UInt8(ascii: ":"))
        writeDigits(Int(secondOfDay % 60))
        append(UInt8(ascii: "Z"))
        append(UInt8(ascii: "\""))
    }

    /// Two decimal digits of `value` (0...99).
    private mutating func writeDigits(_ value: Int) {
        append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value / 10))
        append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value % 10))
    }

    private static func lowercaseHex(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") &+ nibble : UInt8(ascii: "a") &+ (nibble &- 10)
    }

    private static func uppercaseHex(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") &+ nibble : UInt8(ascii: "A") &+ (nibble &- 10)
    }
}

/// A coding path element of an encoding error.
private struct PathKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }

    init(_ name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
