import Foundation
import SQLKit
import SQLiteNIO

/// The rows of a multi-row `INSERT`, written as each backend takes them best.
///
/// - SQLite: `VALUES (?, …), (?, …), …`, a bound value each. SQLite keeps each compiled text
///   (``SQLFlavor/statementChunks(_:limit:)`` keeps their number small).
/// - PostgreSQL: `SELECT … FROM unnest($1, $2, …) WITH ORDINALITY … ORDER BY …`, one array per
///   column. PostgreSQL parses, analyzes and plans every statement it is sent; with one
///   parameter per value, a batch of 93 purchases was 1,860 parameters to walk three times
///   (a fifth of PostgreSQL's CPU in the ingest benchmark), and as many `$n` for SQLKit to write
///   and PostgresKit to bind. With one array per column, the text is the same short one whatever
///   the number of rows. The ordinality keeps the rows in the order given (an identity column,
///   such as `events.seq`, numbers them so).
struct SQLRows: Sendable {
    /// One value of a row, typed as its column is on both backends.
    enum Value: Sendable {
        case text(String?)
        case integer(Int64?)
        case double(Double?)
        case boolean(Bool?)
        case blob(Data?)

        static func integer(_ value: Int?) -> Value { .integer(value.map(Int64.init)) }
    }

    let columnCount: Int
    private(set) var rows: [[Value]] = []

    init(columnCount: Int) {
        self.columnCount = columnCount
    }

    init<Element>(columnCount: Int, _ elements: [Element], row: (Element) throws -> [Value]) rethrows {
        self.columnCount = columnCount
        rows.reserveCapacity(elements.count)
        for element in elements { append(try row(element)) }
    }

    /// Adds a row: `columnCount` values, each column's values all of one case (a programming error
    /// otherwise, caught by every insert's tests on PostgreSQL).
    mutating func append(_ row: [Value]) {
        precondition(row.count == columnCount, "a row of \(row.count) values for \(columnCount) columns")
        if let first = rows.first {
            precondition(zip(first, row).allSatisfy { $0.kind == $1.kind }, "a column's values of different types")
        }
        rows.append(row)
    }

    /// What follows `INSERT INTO table (columns)`, or goes in `IN (…)`; `ordered: false` where the
    /// rows' order does not matter (no sort on PostgreSQL).
    func source(_ flavor: SQLFlavor, ordered: Bool = true) -> SQLQueryString {
        switch flavor {
        case .sqlite:
            // Appended into one string: a string per value, joined, allocated an array per value on
            // the writer's thread (SQLite ingest slower than before arrays in 5 of 6 runs).
            var values = SQLQueryString(
                literalCapacity: rows.count * (columnCount + 1) + 1, interpolationCount: rows.count * columnCount)
            values.appendLiteral("VALUES ")
            for (index, row) in rows.enumerated() {
                values.appendLiteral(index == 0 ? "(" : ", (")
                for (column, value) in row.enumerated() {
                    if column > 0 { values.appendLiteral(", ") }
                    value.appendSQLiteBind(to: &values, flavor)
                }
                values.appendLiteral(")")
            }
            return values
        case .postgresql:
            let names = (1...columnCount).map { "c\($0)" }
            let arrays = (0..<columnCount).map { column -> SQLQueryString in
                "\(bind: PostgresColumnArray(rows.map { $0[column] }))"
            }
            guard ordered else {
                return """
                    SELECT \(unsafeRaw: names.joined(separator: ", "))
                    FROM unnest(\(arrays.joined(separator: ", "))) AS given (\(unsafeRaw: names.joined(separator: ", ")))
                    """
            }
            return """
                SELECT \(unsafeRaw: names.joined(separator: ", "))
                FROM unnest(\(arrays.joined(separator: ", "))) WITH ORDINALITY \
                AS given (\(unsafeRaw: names.joined(separator: ", ")), row_number)
                ORDER BY row_number
                """
        }
    }
}

extension SQLRows.Value {
    /// A value bound as itself, `nil` as `SQLiteData.null`: ``SQLiteHandleDatabase`` takes both by
    /// their type, where an optional would go through SQLiteKit's `Encoder`.
    fileprivate func appendSQLiteBind(to query: inout SQLQueryString, _ flavor: SQLFlavor) {
        switch self {
        case .text(let value): query.appendSQLiteBind(value)
        case .integer(let value): query.appendSQLiteBind(value)
        case .double(let value): query.appendSQLiteBind(value)
        case .boolean(let value): query.appendSQLiteBind(value)
        case .blob(let value?): query.appendInterpolation(flavor.blob(value))
        case .blob(nil): query.appendLiteral("NULL")
        }
    }
}

extension SQLQueryString {
    fileprivate mutating func appendSQLiteBind(_ value: (some Encodable & Sendable)?) {
        if let value { appendInterpolation(bind: value) } else { appendInterpolation(bind: SQLiteData.null) }
    }
}

extension SQLRows.Value {
    /// Which case this is, whatever its value.
    var kind: Int {
        switch self {
        case .text: 0
        case .integer: 1
        case .double: 2
        case .boolean: 3
        case .blob: 4
        }
    }

    var isNull: Bool {
        switch self {
        case .text(let value): value == nil
        case .integer(let value): value == nil
        case .double(let value): value == nil
        case .boolean(let value): value == nil
        case .blob(let value): value == nil
        }
    }
}
