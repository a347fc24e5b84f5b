import Foundation

/// An ISO 8601 duration of the kind App Store subscription periods use (`P3D`, `P1W`, `P1M`,
/// `P2M`, `P1Y`), added on the Gregorian calendar in UTC.
struct SubscriptionPeriod: Sendable, Hashable {
    var years = 0
    var months = 0
    var days = 0

    init?(_ text: String) {
        guard text.hasPrefix("P"), text.count > 2 else { return nil }
        var number = ""
        for character in text.dropFirst() {
            if character.isASCII, character.isNumber {
                number.append(character)
                continue
            }
            guard let value = Int(number), value > 0 else { return nil }
            number = ""
            switch character {
            case "Y": years += value
            case "M": months += value
            case "W": days += 7 * value
            case "D": days += value
            default: return nil
            }
        }
        guard number.isEmpty else { return nil }
    }

    /// `date` moved forward by this period.
    func added(to date: Date) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        let components = DateComponents(year: years, month: months, day: days)
        return calendar.date(byAdding: components, to: date) ?? date.addingTimeInterval(Double(days) * 86_400)
    }
}
