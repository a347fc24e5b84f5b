import Logging
import NIOCore
import PostgresKit
import PostgresNIO
import SQLKit

/// A PostgreSQL connection's SQLKit interface whose statements fail when the connection is gone.
///
/// PostgresNIO (1.33) hands a statement to its channel without a promise for the write: written to
/// a channel that has just closed (the server restarted, the network dropped it) the write fails
/// with no one to tell, and the statement waits forever — and with it the transaction, whatever
/// holds it, and a shutdown waiting for that. Found by the `/ready` test through a cut proxy, where
/// the pool leased a connection whose channel had closed a moment before. So each statement is
/// handed over on the connection's event loop, where closing also happens, after checking there
/// that the channel is still open; once handed over, a close fails it (PostgresNIO's handler does).
///
/// Statements with parameters, all of them `NULL` or of a type PostgresNIO encodes itself, are
/// executed prepared, under the name ``PostgresStatementNames`` gives them; others go through
/// PostgresKit unnamed.
struct ConnectionLossAwareDatabase: SQLDatabase {
    let base: any SQLDatabase
    let connection: PostgresConnection
    let statementNames: PostgresStatementNames?

    init(connection: PostgresConnection, queryLogLevel: Logger.Level?, statementNames: PostgresStatementNames?) {
        self.connection = connection
        self.base = connection.sql(queryLogLevel: queryLogLevel)
        self.statementNames = statementNames
    }

    var logger: Logger { base.logger }
    var eventLoop: any EventLoop { connection.eventLoop }
    var version: (any SQLDatabaseReportedVersion)? { base.version }
    var dialect: any SQLDialect { base.dialect }
    var queryLogLevel: Logger.Level? { base.queryLogLevel }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void)
        -> EventLoopFuture<Void>
    {
        let (base, connection) = (self.base, self.connection)
        @Sendable func handOver() -> EventLoopFuture<Void> {
            guard !connection.isClosed else {
                return connection.eventLoop.makeFailedFuture(Self.connectionLost)
            }
            return base.execute(sql: query, onRow)
        }
        // A transaction's body usually runs on this event loop already (EventLoopTaskExecutor).
        return connection.eventLoop.inEventLoop ? handOver() : connection.eventLoop.flatSubmit(handOver)
    }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) async throws {
        // Named only when this task runs on the connection's event loop (a transaction's body
        // does): the check that the channel is open and the hand-over then happen in one turn.
        guard let statementNames, connection.eventLoop.inEventLoop else {
            return try await execute(sql: query, onRow).get()
        }
        let (sql, binds) = serialize(query)
        // Statements without parameters (BEGIN, COMMIT, migrations) stay unnamed, sent as serialized.
        guard !binds.isEmpty else { return try await execute(sql: SQLRaw(sql), onRow).get() }
        guard let (key, bindings) = Self.namedBindings(sql: sql, binds: binds), let name = statementNames.name(for: key)
        else {
            return try await execute(sql: query, onRow).get()
        }
        guard !connection.isClosed else { throw Self.connectionLost }
        if let level = queryLogLevel {
            logger.log(level: level, "Executing query", metadata: ["sql": "\(sql)", "prepared as": "\(name)"])
        }
        do {
            try await NamedStatement.$current.withValue(.init(name: name, sql: sql)) {
                let rows = try await connection.execute(NamedStatement(bindings: bindings), logger: logger)
                for try await row in rows { onRow(row.sql()) }
            }
        } catch {
            if Self.mayHaveFailedPreparing(error) { statementNames.retire(name, for: key) }
            throw error
        }
    }

    /// Whether `error` may have come from preparing the statement, whose failure PostgresNIO then
    /// keeps for the name. Not when the connection failed (its prepared statements go with it),
    /// nor for the failures only executing raises: a constraint violation (class 23), a data
    /// exception (22: at preparation they come from the text itself, so they would recur anyway),
    /// a serialization failure (40001), an exception raised by a trigger (P0001). Retiring a name
    /// for every failure would spend the storage's names on everyday conflicts.
    static func mayHaveFailedPreparing(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError else { return true }
        guard error.code == .server else { return false }
        let state = error.serverInfo?[.sqlState] ?? ""
        return !(state.hasPrefix("23") || state.hasPrefix("22") || state == "40001" || state == "P0001")
    }

    /// The statement's key and bindings when every bind is `NULL` or encodes itself
    /// (`PostgresThrowingDynamicTypeEncodable`), as PostgresKit's translation would bind it; nil
    /// when a bind needs that translation's other paths (`Codable` values as JSON).
    static func namedBindings(sql: String, binds: [any Encodable & Sendable])
        -> (PostgresStatementNames.Key, PostgresBindings)?
    {
        var bindings = PostgresBindings(capacity: binds.count)
        var types: [PostgresDataType] = []
        types.reserveCapacity(binds.count)
        for bind in binds {
            if (bind as? any OptionalBind)?.isNone == true {
                bindings.appendNull()
                types.append(.null)
            } else if let value = bind as? any PostgresThrowingDynamicTypeEncodable {
                do {
                    try bindings.append(value, context: .default)
                } catch {
                    return nil
                }
                types.append(value.psqlType)
            } else {
                return nil
            }
        }
        return (.init(sql: sql, parameterTypes: types), bindings)
    }

    static let connectionLost = StorageError(.unavailable, "the PostgreSQL connection was lost")
}

/// Tells a `nil` bind from a value: a bind is an `Optional` boxed in `any Encodable`.
private protocol OptionalBind {
    var isNone: Bool { get }
}

extension Optional: OptionalBind {
    fileprivate var isNone: Bool { self == nil }
}
