import Foundation
import Logging
import NIOCore
import NIOPosix
import SQLKit
import SQLiteKit
import SQLiteNIO

/// SQLKit's interface to a ``SQLiteHandle``: SQLiteKit's dialect and value coding, with each
/// statement run on the calling thread (``SQLiteTransactionRunner`` calls it on its own).
struct SQLiteHandleDatabase: SQLDatabase {
    let handle: SQLiteHandle
    let logger: Logger
    let eventLoop: any EventLoop
    private let encoder = SQLiteDataEncoder()
    private let decoder = SQLiteDataDecoder()

    init(handle: SQLiteHandle, logger: Logger, eventLoop: any EventLoop = MultiThreadedEventLoopGroup.singleton.any()) {
        self.handle = handle
        self.logger = logger
        self.eventLoop = eventLoop
    }

    var version: (any SQLDatabaseReportedVersion)? { nil }
    var dialect: any SQLDialect { SQLiteDialect() }
    var queryLogLevel: Logger.Level? { .trace }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void)
        -> EventLoopFuture<Void>
    {
        do {
            try run(query, onRow)
            return eventLoop.makeSucceededVoidFuture()
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
    }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) async throws {
        try run(query, onRow)
    }

    private func run(_ query: any SQLExpression, _ onRow: (any SQLRow) -> Void) throws {
        var serializer = SQLSerializer(database: self)
        query.serialize(to: &serializer)
        if logger.logLevel <= .trace {
            logger.trace("Executing query", metadata: ["sql": "\(serializer.sql)"])
        }
        let binds = try serializer.binds.map { try sqliteData($0) }
        let decoder = self.decoder
        try handle.execute(serializer.sql, binds) { row in
            onRow(SQLiteHandleSQLRow(row: row, decoder: decoder))
        }
    }
}

extension SQLiteHandleDatabase {
    /// `bind` as SQLite takes it, as SQLiteKit's encoder gives it. The types the storage binds are
    /// taken by their concrete type: the encoder asks each value whether it conforms to
    /// `SQLiteDataConvertible` (a lookup in the runtime's conformance table, then for an optional
    /// the whole `Encoder` path), which was 5.6 % of the SQLite writer's thread in the ingest
    /// benchmark. A `nil` of any optional type is `NULL`, as the encoder makes it.
    func sqliteData(_ bind: any Encodable) throws -> SQLiteData {
        switch bind {
        case let value as SQLiteData: value
        case let value as String: .text(value)
        case let value as Int: .integer(value)
        case let value as Int64: .integer(Int(value))
        case let value as Double: .float(value)
        case let value as Bool: .integer(value ? 1 : 0)
        case let value as Data: .blob(ByteBuffer(data: value))
        default: try encoder.encode(bind)
        }
    }
}

/// One result row of a ``SQLiteHandle`` statement.
struct SQLiteHandleRow: Sendable {
    let columns: SQLiteColumnNames
    let values: [SQLiteData]

    func value(_ column: String) -> SQLiteData? {
        columns.offset(of: column).map { values[$0] }
    }
}

/// A ``SQLiteHandleRow`` as SQLKit reads rows, its values decoded by SQLiteKit's decoder.
private struct SQLiteHandleSQLRow: SQLRow {
    let row: SQLiteHandleRow
    let decoder: SQLiteDataDecoder

    var allColumns: [String] { row.columns.names }

    func contains(column: String) -> Bool { row.columns.offset(of: column) != nil }

    func decodeNil(column: String) throws -> Bool {
        guard let value = row.value(column) else { return true }
        return value == .null
    }

    func decode<D: Decodable>(column: String, as type: D.Type) throws -> D {
        guard let value = row.value(column) else {
            throw DecodingError.keyNotFound(
                SQLiteColumnKey(column), .init(codingPath: [], debugDescription: "no column \(column) in the row"))
        }
        return try decoder.decode(D.self, from: value)
    }
}

private struct SQLiteColumnKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
