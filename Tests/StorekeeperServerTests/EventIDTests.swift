import Foundation
import Testing

@testable import StorekeeperServer

/// Event ids: version 7 UUIDs (RFC 9562), the event's time in Unix milliseconds first, then 74
/// random bits from the system's generator.
@Suite struct EventIDTests {
    static let time = Date(timeIntervalSince1970: 1_795_770_903.123_9)

    @Test func eventIDsAreDistinctVersion7UUIDsStampedWithTheirTime() {
        let ids = (0..<10_000).map { _ in EventWriter.newEventID(at: Self.time) }
        #expect(Set(ids).count == ids.count)
        for id in ids {
            #expect(id.uuid.6 >> 4 == 7, "version nibble of \(id)")
            #expect(id.uuid.8 >> 6 == 0b10, "variant bits of \(id)")
            #expect(Self.milliseconds(id) == 1_795_770_903_123, "time of \(id)")
        }
        // Every one of the 74 random bits varies across ids made in the same millisecond.
        var seenSet = [UInt8](repeating: 0, count: 16)
        var seenClear = [UInt8](repeating: 0, count: 16)
        for id in ids {
            withUnsafeBytes(of: id.uuid) { bytes in
                for index in 0..<16 {
                    seenSet[index] |= bytes[index]
                    seenClear[index] |= ~bytes[index]
                }
            }
        }
        let varying = zip(seenSet, seenClear).map { $0 & $1 }
        var expected = [UInt8](repeating: 0xFF, count: 16)
        for index in 0..<6 { expected[index] = 0 }
        expected[6] = 0x0F
        expected[8] = 0x3F
        #expect(varying == expected)
    }

    /// As stored (lowercase text), a later millisecond's id sorts after an earlier one's: a batch's
    /// events go to the end of the `id` index rather than each into a page of its own.
    @Test func laterEventsSortAfterEarlierOnesAsStored() {
        var previous = EventWriter.newEventID(at: Self.time).uuidString.lowercased()
        for step in 1...2_000 {
            let id = EventWriter.newEventID(at: Self.time.addingTimeInterval(Double(step) * 0.001))
                .uuidString.lowercased()
            #expect(previous < id, "\(id) after \(previous)")
            previous = id
        }
    }

    /// Any time from 1970 for 8,900 years is stamped as it is; times outside take the nearest end.
    @Test func timesOutsideTheStampsRangeTakeTheNearestEnd() {
        #expect(Self.milliseconds(EventWriter.newEventID(at: Date(timeIntervalSince1970: -1))) == 0)
        #expect(
            Self.milliseconds(EventWriter.newEventID(at: .distantFuture))
                == UInt64(Date.distantFuture.timeIntervalSince1970 * 1000))
        #expect(
            Self.milliseconds(EventWriter.newEventID(at: Date(timeIntervalSince1970: 1e13)))
                == 1 << 48 - 1)
    }

    static func milliseconds(_ id: UUID) -> UInt64 {
        withUnsafeBytes(of: id.uuid) { bytes in bytes.prefix(6).reduce(0) { $0 << 8 | UInt64($1) } }
    }
}
