import Foundation
import SQLKit

/// Dates are stored as whole milliseconds since 1970 (a 64-bit integer on both backends), so they
/// compare and index the same everywhere and round-trip exactly at millisecond precision.
enum StoredTime {
    static func milliseconds(_ date: Date) -> Int64 {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
        // Clamp rather than trap on dates no store will ever send (infinite or billions of years away).
        guard milliseconds.isFinite else { return milliseconds > 0 ? Int64.max : Int64.min }
        return Int64(exactly: milliseconds) ?? (milliseconds > 0 ? Int64.max : Int64.min)
    }

    static func milliseconds(_ date: Date?) -> Int64? {
        date.map { milliseconds($0) }
    }

    static func date(_ milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// `date` as it reads back once stored.
    static func rounded(_ date: Date) -> Date {
        self.date(milliseconds(date))
    }
}

/// Reads one column of a result row, turning anything unreadable into ``StorageError/Reason/corrupt``.
struct RowReader {
    let row: any SQLRow
    let table: String

    func isNull(_ column: String) throws -> Bool {
        do {
            return try row.decodeNil(column: column)
        } catch {
            throw unreadable(column, error)
        }
    }

    func decode<Value: Decodable>(_ column: String, as type: Value.Type) throws -> Value {
        do {
            return try row.decode(column: column, as: Value.self)
        } catch {
            throw unreadable(column, error)
        }
    }

    func decodeIfPresent<Value: Decodable>(_ column: String, as type: Value.Type) throws -> Value? {
        try isNull(column) ? nil : decode(column, as: Value.self)
    }

    func string(_ column: String) throws -> String { try decode(column, as: String.self) }
    func optionalString(_ column: String) throws -> String? { try decodeIfPresent(column, as: String.self) }
    func int(_ column: String) throws -> Int { try decode(column, as: Int.self) }
    func double(_ column: String) throws -> Double { try decode(column, as: Double.self) }
    func bool(_ column: String) throws -> Bool { try decode(column, as: Bool.self) }
    func optionalBool(_ column: String) throws -> Bool? { try decodeIfPresent(column, as: Bool.self) }
    func data(_ column: String) throws -> Data {
        // SQLite hands a zero-length BLOB back as NULL.
        try decodeIfPresent(column, as: Data.self) ?? Data()
    }

    func date(_ column: String) throws -> Date { StoredTime.date(try decode(column, as: Int64.self)) }
    func optionalDate(_ column: String) throws -> Date? {
        try decodeIfPresent(column, as: Int64.self).map(StoredTime.date)
    }

    /// A value stored by its raw value (enums, identifiers).
    func raw<Value: RawRepresentable>(_ column: String, as type: Value.Type) throws -> Value
    where Value.RawValue == String {
        let rawValue = try string(column)
        guard let value = Value(rawValue: rawValue) else {
            throw StorageError(.corrupt, "\(table).\(column) holds unknown value '\(rawValue)'")
        }
        return value
    }

    func optionalRaw<Value: RawRepresentable>(_ column: String, as type: Value.Type) throws -> Value?
    where Value.RawValue == String {
        try isNull(column) ? nil : raw(column, as: Value.self)
    }

    func uuid(_ column: String) throws -> UUID {
        let text = try string(column)
        guard let uuid = UUID(uuidString: text) else {
            throw StorageError(.corrupt, "\(table).\(column) holds '\(text)', not a UUID")
        }
        return uuid
    }

    private func unreadable(_ column: String, _ error: any Error) -> StorageError {
        StorageError(.corrupt, "cannot read \(table).\(column): \(error)")
    }
}
