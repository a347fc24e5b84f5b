import Foundation
import Testing

@testable import StorekeeperServer

/// The webhook's decoded notifications handed to processing in the same process: used only when
/// the row's record is the one they were kept with, once, and never more than the capacity.
@Suite struct RecentlyVerifiedTests {
    let record = Data(#"{"payload":{"notificationUUID":"a"}}"#.utf8)

    @Test func aKeptValueIsTakenOnceWithItsOwnRecord() {
        let recent = RecentlyVerified<Int>(capacity: 8)
        recent.keep(1, record: record, for: "a")
        #expect(recent.take("a", record: record) == 1)
        #expect(recent.take("a", record: record) == nil, "taken twice")
        #expect(recent.take("b", record: record) == nil)
    }

    @Test func aRowWithAnotherRecordIsNotGivenTheKeptValue() {
        let recent = RecentlyVerified<Int>(capacity: 8)
        recent.keep(1, record: record, for: "a")
        var other = record
        other.append(UInt8(ascii: " "))
        #expect(recent.take("a", record: other) == nil)
        #expect(recent.take("a", record: record) == nil, "a mismatch drops the entry")
    }

    @Test func theOldestAreDroppedBeyondTheCapacity() {
        let recent = RecentlyVerified<Int>(capacity: 4)
        for index in 0..<10 { recent.keep(index, record: record, for: "\(index)") }
        let kept = (0..<10).filter { (index: Int) in recent.take(String(index), record: record) == index }
        #expect(kept.count <= 4)
        #expect(kept.contains(9) && kept.contains(8), "the newest are kept: \(kept)")
        #expect(!kept.contains(0))
    }
}
