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
            return base.execute(sql: query, onRow)
        }
        // A transaction's body usually runs on this event loop already (EventLoopTaskExecutor).
        return connection.eventLoop.inEventLoop ? handOver() : connection.eventLoop.flatSubmit(handOver)
    }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) async throws {
        try await execute(sql: query, onRow).get()
    }

    static let connectionLost = StorageError(.unavailable, "the PostgreSQL connection was lost")
}
