public import Foundation
import StoreCore

/// Parses and formats RFC 3339 timestamps as used by Google APIs (`google.protobuf.Timestamp` in JSON).
///
/// Accepts `YYYY-MM-DDTHH:MM:SS` with 0 to 9 fractional-second digits and a `Z` or `±HH:MM` offset.
/// Pure arithmetic, no formatter objects, so it is safe to use from any concurrency domain.
public enum RFC3339 {
    /// Parses `string`; returns `nil` when it is not a valid RFC 3339 timestamp.
    public static func date(from string: String) -> Date? {
        guard let (seconds, nanos) = parse(Array(string.utf8)) else { return nil }
        return Date(timeIntervalSince1970: Double(seconds) + Double(nanos) / 1_000_000_000)
    }

    /// Formats `date` in UTC with a `Z` suffix and `fractionalDigits` (0 to 9) fractional digits.
    public static func string(from date: Date, fractionalDigits: Int = 3) -> String {
        let digits = min(max(fractionalDigits, 0), 9)
        let interval = date.timeIntervalSince1970
        var seconds = Int64(interval.rounded(.down))
        var nanos = Int64(((interval - Double(seconds)) * 1_000_000_000).rounded())
        if nanos >= 1_000_000_000 {
            seconds += 1
            nanos -= 1_000_000_000
        }
        let days = CivilDate.floorDivision(seconds, 86_400)
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = CivilDate.date(daysSince1970: days)
        var result = pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2)
        result += "T" + pad(secondOfDay / 3600, 2) + ":" + pad(secondOfDay / 60 % 60, 2) + ":"
        result += pad(secondOfDay % 60, 2)
        if digits > 0 {
            var divisor: Int64 = 1
            for _ in 0..<(9 - digits) { divisor *= 10 }
            result += "." + pad(nanos / divisor, digits)
        }
        return result + "Z"
    }

    // MARK: - Parsing

    private static func parse(_ bytes: [UInt8]) -> (Int64, Int64)? {
        var index = 0
        func number(_ count: Int) -> Int64? {
            guard index + count <= bytes.count else { return nil }
            var value: Int64 = 0
            for _ in 0..<count {
                let byte = bytes[index]
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int64(byte - 0x30)
                index += 1
            }
            return value
        }
        func expect(_ characters: Character...) -> Bool {
            guard index < bytes.count,
                characters.contains(where: { $0.asciiValue == bytes[index] })
            else { return false }
            index += 1
            return true
        }

        guard let year = number(4), expect("-"), let month = number(2), expect("-"),
            let day = number(2), expect("T", "t", " "), let hour = number(2), expect(":"),
            let minute = number(2), expect(":"), let second = number(2)
        else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysInMonth(year: year, month: month),
            hour <= 23, minute <= 59, second <= 60
        else { return nil }

        var nanos: Int64 = 0
        if expect(".") {
            var digits = 0
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                guard digits < 9 else { return nil }
                nanos = nanos * 10 + Int64(bytes[index] - 0x30)
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<9 { nanos *= 10 }
        }

        var offsetSeconds: Int64 = 0
        if expect("Z", "z") {
            offsetSeconds = 0
        } else if index < bytes.count, bytes[index] == 0x2B || bytes[index] == 0x2D {
            let sign: Int64 = bytes[index] == 0x2D ? -1 : 1
            index += 1
            guard let offsetHour = number(2), expect(":"), let offsetMinute = number(2),
                offsetHour <= 23, offsetMinute <= 59
            else { return nil }
            offsetSeconds = sign * (offsetHour * 3600 + offsetMinute * 60)
        } else {
            return nil
        }
        guard index == bytes.count else { return nil }

        let days = CivilDate.daysSince1970(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return (seconds, nanos)
    }

    private static func daysInMonth(year: Int64, month: Int64) -> Int64 {
        switch month {
        case 2:
            let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
            return leap ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }
}
