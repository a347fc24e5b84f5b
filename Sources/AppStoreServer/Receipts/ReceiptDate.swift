import Foundation

/// The RFC 3339 timestamps of app receipts (`2013-08-01T07:00:00Z`): `YYYY-MM-DDTHH:MM:SS`, an
/// optional fraction of 1 to 9 digits, and `Z` or `±HH:MM`. Pure arithmetic over at most a few dozen
/// bytes: no formatter objects, nothing locale- or time-zone-dependent, safe from any concurrency domain.
enum ReceiptDate {
    /// Parses `bytes`; `nil` when they are not such a timestamp.
    static func parse(_ bytes: ArraySlice<UInt8>) -> Date? {
        var reader = Reader(bytes: bytes)
        guard let year = reader.number(digits: 4), reader.take("-"),
            let month = reader.number(digits: 2), reader.take("-"),
            let day = reader.number(digits: 2), reader.take("T") || reader.take("t"),
            let hour = reader.number(digits: 2), reader.take(":"),
            let minute = reader.number(digits: 2), reader.take(":"),
            let second = reader.number(digits: 2)
        else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year),
            hour <= 23, minute <= 59, second <= 60
        else { return nil }
        var fraction = 0.0
        if reader.take(".") {
            var scale = 0.1
            var digits = 0
            while let digit = reader.digit() {
                guard digits < 9 else { return nil }
                fraction += Double(digit) * scale
                scale /= 10
                digits += 1
            }
            guard digits > 0 else { return nil }
        }
        var offset: Int64 = 0
        if reader.take("Z") || reader.take("z") {
            offset = 0
        } else {
            let sign: Int64
            if reader.take("+") {
                sign = 1
            } else if reader.take("-") {
                sign = -1
            } else {
                return nil
            }
            guard let offsetHours = reader.number(digits: 2), reader.take(":"),
                let offsetMinutes = reader.number(digits: 2), offsetHours <= 23, offsetMinutes <= 59
            else { return nil }
            offset = sign * (offsetHours * 3600 + offsetMinutes * 60)
        }
        guard reader.atEnd else { return nil }
        let days = daysSinceEpoch(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    private struct Reader {
        var bytes: ArraySlice<UInt8>

        var atEnd: Bool { bytes.isEmpty }

        mutating func take(_ character: Unicode.Scalar) -> Bool {
            guard let first = bytes.first, first == UInt8(ascii: character) else { return false }
            bytes.removeFirst()
            return true
        }

        mutating func digit() -> Int64? {
            guard let first = bytes.first, first >= 0x30, first <= 0x39 else { return nil }
            bytes.removeFirst()
            return Int64(first - 0x30)
        }

        mutating func number(digits: Int) -> Int64? {
            var value: Int64 = 0
            for _ in 0..<digits {
                guard let digit = digit() else { return nil }
                value = value * 10 + digit
            }
            return value
        }
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days from 1970-01-01 to the given proleptic Gregorian date (H. Hinnant's `days_from_civil`).
    private static func daysSinceEpoch(year: Int64, month: Int64, day: Int64) -> Int64 {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
