import Foundation
import Testing

/// The encoder the hand-written JSON writers must match byte for byte: built like
/// `EventWriter.encoder` and `JSONResponse.encoder` (this target cannot see StorekeeperServer).
enum JSONWriterReference {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    /// Records an issue, showing both texts, unless `written` gives the reference encoder's bytes.
    @discardableResult
    static func expectSameBytes<Value: Encodable>(
        _ value: Value, _ context: @autoclosure () -> String, sourceLocation: SourceLocation,
        written: (Value) throws -> Data
    ) -> Bool {
        do {
            let expected = try encoder.encode(value)
            let actual = try written(value)
            // Data compares bytes; String's == would take canonically equivalent texts as equal.
            guard actual != expected else { return true }
            Issue.record(
                """
                \(context())
                JSONEncoder: \(String(decoding: expected, as: UTF8.self))
                hand-written: \(String(decoding: actual, as: UTF8.self))
                """, sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(context()): \(error)", sourceLocation: sourceLocation)
        }
        return false
    }
}
