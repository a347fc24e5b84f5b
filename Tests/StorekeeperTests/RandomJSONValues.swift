import Foundation
import TestSupport

/// Random values for the JSON writers' property tests, with the edge values of each kind more
/// likely than chance would make them.
struct RandomJSONValues {
    var random: SplitMix64

    init(seed: UInt64) {
        random = SplitMix64(state: seed)
    }

    /// `fixed` seeds, so that every run (CI's too) checks the same values, and one more from the
    /// environment variable `variable` when it is set, to replay a failure or to explore.
    static func seeds(_ fixed: [UInt64], addingFrom variable: String) -> [UInt64] {
        fixed + (ProcessInfo.processInfo.environment[variable].flatMap { UInt64($0) }.map { [$0] } ?? [])
    }

    mutating func chance(_ probability: Double) -> Bool { Double.random(in: 0..<1, using: &random) < probability }

    mutating func maybe<Value>(_ make: (inout Self) -> Value) -> Value? { chance(0.5) ? make(&self) : nil }

    mutating func element<Value>(_ values: [Value]) -> Value {
        values[Int.random(in: 0..<values.count, using: &random)]
    }

    static let pieces: [String] =
        (0..<128).map { String(UnicodeScalar(UInt8($0))) } + [
            "é", "e\u{301}", "ß", "中", "😀", "👨‍👩‍👧", "\u{2028}", "\u{FEFF}", "\u{10FFFF}", "/", "\\", "\"", "abc",
            "com.example.app",
        ]

    mutating func string() -> String {
        (0..<Int.random(in: 0...12, using: &random)).map { _ in element(Self.pieces) }.joined()
    }

    mutating func date() -> Date {
        switch Int.random(in: 0..<5, using: &random) {
        case 0: Date(timeIntervalSince1970: .random(in: 1.5e9..<2.2e9, using: &random))
        case 1: Date(timeIntervalSince1970: TimeInterval(Int.random(in: 1_500_000_000..<2_200_000_000, using: &random)))
        case 2: Date(timeIntervalSince1970: .random(in: -1.4e10..<2.6e11, using: &random))
        case 3:
            // Around a midnight, where rounding down matters most.
            Date(
                timeIntervalSince1970: TimeInterval(Int.random(in: -160_000..<3_000_000, using: &random) * 86_400)
                    + element([-1e-6, -0.5, 0, 1e-6, 0.5]))
        default: Date(timeIntervalSinceReferenceDate: .random(in: -1e-3..<1e-3, using: &random))
        }
    }

    mutating func double() -> Double {
        switch Int.random(in: 0..<4, using: &random) {
        case 0: return .random(in: 0...1, using: &random)
        case 1: return Double(Int.random(in: -1_000_000...1_000_000, using: &random)) / element([1, 3, 10, 1000])
        case 2: return element(EventJSONTests.specialDoubles)
        default:
            let value = Double(bitPattern: random.next())
            return value.isFinite ? value : 0.75
        }
    }

    mutating func integer() -> Int {
        switch Int.random(in: 0..<3, using: &random) {
        case 0: Int.random(in: -1000...1000, using: &random)
        case 1: Int.random(in: .min ... .max, using: &random)
        default: element([0, -1, 100_000, .min, .max])
        }
    }

    mutating func uuid() -> UUID {
        var uuid = UUID().uuid
        withUnsafeMutableBytes(of: &uuid) { bytes in
            for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255, using: &random) }
        }
        return UUID(uuid: uuid)
    }
}
