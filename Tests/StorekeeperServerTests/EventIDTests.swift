import Foundation
import Testing

@testable import StorekeeperServer

/// Event ids: random version 4 UUIDs (RFC 9562), as `UUID()` makes, from the system's generator.
@Suite struct EventIDTests {
    @Test func eventIDsAreDistinctRandomVersion4UUIDs() {
        let ids = (0..<10_000).map { _ in EventWriter.newEventID() }
        #expect(Set(ids).count == ids.count)
        for id in ids {
            #expect(id.uuid.6 >> 4 == 4, "version nibble of \(id)")
            #expect(id.uuid.8 >> 6 == 0b10, "variant bits of \(id)")
        }
        // Every one of the 122 random bits varies across the ids.
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
        expected[6] = 0x0F
        expected[8] = 0x3F
        #expect(varying == expected)
    }
}
