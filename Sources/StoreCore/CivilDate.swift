/// Days since 1970-01-01 to and from proleptic Gregorian dates, by arithmetic alone (Howard
/// Hinnant's `days_from_civil` and `civil_from_days`,
/// https://howardhinnant.github.io/date_algorithms.html): what RFC 3339 timestamps and event JSON
/// write and read without a formatter object per call.
public enum CivilDate {
    /// The date `days` days after 1970-01-01 (before it, for a negative count).
    public static func date(daysSince1970 days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468  // Days since 0000-03-01: leap days end each year.
        let era = floorDivision(shifted, 146_097)
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let marchBasedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * marchBasedMonth + 2) / 5 + 1
        let month = marchBasedMonth < 10 ? marchBasedMonth + 3 : marchBasedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Days from 1970-01-01 to the date (negative before it).
    public static func daysSince1970(year: Int64, month: Int64, day: Int64) -> Int64 {
        let marchBasedYear = month <= 2 ? year - 1 : year
        let era = floorDivision(marchBasedYear, 400)
        let yearOfEra = marchBasedYear - era * 400
        let marchBasedMonth = month > 2 ? month - 3 : month + 9
        let dayOfYear = (153 * marchBasedMonth + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// `a / b` rounded toward negative infinity.
    public static func floorDivision(_ a: Int64, _ b: Int64) -> Int64 {
        let quotient = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? quotient - 1 : quotient
    }
}
