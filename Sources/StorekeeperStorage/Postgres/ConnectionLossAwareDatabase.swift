import Foundation
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
struct ConnectionLossAwareDatabase: SQLDatabase {
    let base: any SQLDatabase
    let connection: PostgresConnection

    init(connection: PostgresConnection, queryLogLevel: Logger.Level?) {
        self.connection = connection
        self.base = connection.sql(queryLogLevel: queryLogLevel)
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
            var serializer = SQLSerializer(database: base)
            query.serialize(to: &serializer)
            guard let bindings = Self.bindings(serializer.binds) else { return base.execute(sql: query, onRow) }
            if let level = base.queryLogLevel {
                base.logger.log(level: level, "Executing query", metadata: ["sql": "\(serializer.sql)"])
            }
            return connection.query(PostgresQuery(unsafeSQL: serializer.sql, binds: bindings), logger: base.logger) {
                onRow($0.sql())
            }.map { _ in }
        }
        // A transaction's body usually runs on this event loop already (EventLoopTaskExecutor).
        return connection.eventLoop.inEventLoop ? handOver() : connection.eventLoop.flatSubmit(handOver)
    }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) async throws {
        try await execute(sql: query, onRow).get()
    }

    static let connectionLost = StorageError(.unavailable, "the PostgreSQL connection was lost")

    /// The binds as PostgresKit binds them, when all are of the types Storekeeper binds (or nil);
    /// nil otherwise, and PostgresKit binds them. PostgresKit finds each value's encoding by casts
    /// to an optional and to `any PostgresThrowingDynamicTypeEncodable`, a conformance search in
    /// the Swift runtime per value (1.7 % of the ingest benchmark's process); a cast to each
    /// concrete type is a comparison, and binds it as the same PostgreSQL type.
    static func bindings(_ binds: [any Encodable & Sendable]) -> PostgresBindings? {
        var bindings = PostgresBindings(capacity: binds.count)
        for bind in binds {
            switch bind {
            case let value as String: bindings.append(value)
            case let value as Int: bindings.append(value)
            case let value as Int64: bindings.append(value)
            case let value as Double: bindings.append(value)
            case let value as Bool: bindings.append(value)
            case let value as Data: bindings.append(ByteBuffer(bytes: value))
            case let optional as any OptionalBind where optional.isNone:
                // PostgresKit binds a nil as a NULL of the wrapped type.
                guard let type = type(of: optional).wrappedPostgresType else { return nil }
                bindings.append(PostgresData(type: type, value: nil))
            default: return nil
            }
        }
        return bindings
    }
}

/// A bound optional, to tell nil from a value (a cast to a concrete type unwraps a value) and
/// to type its NULL.
protocol OptionalBind {
    var isNone: Bool { get }
    /// The PostgreSQL type of the types bound directly; nil for any other.
    static var wrappedPostgresType: PostgresDataType? { get }
}

extension Optional: OptionalBind {
    var isNone: Bool { self == nil }

    static var wrappedPostgresType: PostgresDataType? {
        if Wrapped.self == String.self { return String.psqlType }
        if Wrapped.self == Int.self { return Int.psqlType }
        if Wrapped.self == Int64.self { return Int64.psqlType }
        if Wrapped.self == Double.self { return Double.psqlType }
        if Wrapped.self == Bool.self { return Bool.psqlType }
        if Wrapped.self == Data.self { return Data.psqlType }
        return nil
    }
}
