import Foundation
import NIOCore
import PostgresNIO

/// One column of ``SQLRows`` bound as a PostgreSQL array (`text[]`, `int8[]`, `float8[]`,
/// `bool[]`, `bytea[]`), in the binary format `array_recv` reads. Written here because
/// PostgresNIO's arrays take no NULL elements, and a column's values may be NULL.
struct PostgresColumnArray: PostgresThrowingDynamicTypeEncodable, Encodable, Sendable {
    private let values: [SQLRows.Value]
    private let element: PostgresDataType
    let psqlType: PostgresDataType
    var psqlFormat: PostgresFormat { .binary }

    /// `values` are of one case, the column's type; an empty column is an empty `text[]`.
    init(_ values: [SQLRows.Value]) {
        self.values = values
        switch values.first {
        case .text, nil: (element, psqlType) = (.text, .textArray)
        case .integer: (element, psqlType) = (.int8, .int8Array)
        case .double: (element, psqlType) = (.float8, .float8Array)
        case .boolean: (element, psqlType) = (.bool, .boolArray)
        case .blob: (element, psqlType) = (.bytea, .byteaArray)
        }
    }

    func encode<JSONEncoder: PostgresJSONEncoder>(
        into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>
    ) throws {
        let hasNulls = values.contains(where: \.isNull)
        buffer.writeInteger(values.isEmpty ? 0 : 1, as: Int32.self)  // dimensions
        buffer.writeInteger(hasNulls ? 1 : 0, as: Int32.self)
        buffer.writeInteger(element.rawValue)
        guard !values.isEmpty else { return }
        buffer.writeInteger(Int32(values.count))  // the dimension's length
        buffer.writeInteger(1, as: Int32.self)  // and its lower bound
        for value in values {
            switch (value, element) {
            case (.text(let text?), .text):
                buffer.writeInteger(Int32(text.utf8.count))
                buffer.writeString(text)
            case (.integer(let integer?), .int8):
                buffer.writeInteger(8, as: Int32.self)
                buffer.writeInteger(integer)
            case (.double(let double?), .float8):
                buffer.writeInteger(8, as: Int32.self)
                buffer.writeInteger(double.bitPattern)
            case (.boolean(let boolean?), .bool):
                buffer.writeInteger(1, as: Int32.self)
                buffer.writeInteger(boolean ? 1 : 0, as: UInt8.self)
            case (.blob(let data?), .bytea):
                buffer.writeInteger(Int32(data.count))
                buffer.writeBytes(data)
            case (.text(nil), .text), (.integer(nil), .int8), (.double(nil), .float8), (.boolean(nil), .bool),
                (.blob(nil), .bytea):
                buffer.writeInteger(-1, as: Int32.self)
            default:
                preconditionFailure("a column of \(element) values holds \(value)")  // SQLRows.append checks
            }
        }
    }

    /// The values, one after another (PostgresKit binds through ``encode(into:context:)``).
    func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        for value in values {
            switch value {
            case .text(let text): try container.encode(text)
            case .integer(let integer): try container.encode(integer)
            case .double(let double): try container.encode(double)
            case .boolean(let boolean): try container.encode(boolean)
            case .blob(let data): try container.encode(data)
            }
        }
    }
}
