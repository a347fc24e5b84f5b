import Foundation
import SQLKit
import SQLiteNIO
import Synchronization

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
            return "\(SQLiteValues(rows: rows))"
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

/// `VALUES (?, …), (…), …` on SQLite, each value bound as itself (`nil` as `SQLiteData.null`),
/// which ``SQLiteHandleDatabase`` takes by its type, where an optional would go through SQLiteKit's
/// `Encoder` (a `Data` as a blob, which ``SQLiteHandle`` binds as a blob even when empty).
///
/// Written here rather than as an `SQLQueryString` with a `\(bind:)` per value: SQLKit boxes each
/// such bind as an expression (a heap allocation each), has the dialect make each placeholder as
/// another, and writes the text value by value, while the multi-row inserts bind about a hundred
/// values per notification: SQLKit's serialization was 8 % of the SQLite writer's thread in the
/// ingest benchmark (Benchmarks/README.md). Here the text depends only on the numbers of rows and
/// columns, and is made once for each. Its `?`s take the numbers after those before them, as
/// SQLite numbers a `?` without one (one greater than the largest so far), so the placeholders SQLKit
/// writes around them (`?N`, N the bind's position) still name the right values.
private struct SQLiteValues: SQLExpression {
    let rows: [[SQLRows.Value]]

    func serialize(to serializer: inout SQLSerializer) {
        guard let columns = rows.first?.count else { return }
        serializer.write(Self.text(rows: rows.count, columns: columns))
        serializer.binds.reserveCapacity(serializer.binds.count + rows.count * columns)
        for row in rows {
            for value in row {
                // As themselves (an existential holds them inline), not as `SQLiteData` (boxed).
                switch value {
                case .text(let text?): serializer.binds.append(text)
                case .integer(let integer?): serializer.binds.append(Int(integer))
                case .double(let double?): serializer.binds.append(double)
                case .boolean(let boolean?): serializer.binds.append(boolean)
                case .blob(let data?): serializer.binds.append(data)
                case .text(nil), .integer(nil), .double(nil), .boolean(nil), .blob(nil):
                    serializer.binds.append(SQLiteData.null)
                }
            }
        }
    }

    private struct Shape: Hashable {
        let rows: Int
        let columns: Int
    }

    /// The texts made so far; the statement chunks' power-of-two row counts keep them few, and
    /// past `keptTexts` shapes the rest are made each time.
    private static let texts = Mutex<[Shape: String]>([:])
    private static let keptTexts = 512

    private static func text(rows: Int, columns: Int) -> String {
        let shape = Shape(rows: rows, columns: columns)
        if let text = texts.withLock({ $0[shape] }) { return text }
        let row = "(" + repeatElement("?", count: columns).joined(separator: ", ") + ")"
        let text = "VALUES " + repeatElement(row, count: rows).joined(separator: ", ")
        texts.withLock { if $0.count < keptTexts { $0[shape] = text } }
        return text
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
