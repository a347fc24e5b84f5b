import PostgresNIO
import Synchronization

/// The names under which a storage's statements are prepared on its connections, one per
/// statement text and parameter types.
///
/// Why: PostgreSQL parses, analyzes and plans an unnamed statement at every execution; PostgresKit
/// sends every statement unnamed. A profile of ingest put that at a fifth of PostgreSQL's CPU
/// (Benchmarks/README.md). A statement prepared under a name is parsed once per connection and, after
/// five executions, runs a generic plan when PostgreSQL finds it no worse.
///
/// The key includes the parameters' types because `Parse` fixes them: a statement first prepared
/// with a `NULL` (type unspecified, so PostgreSQL infers one) must not be reused for a value of
/// another type. A name whose statement may have failed preparing is retired (a new one is made for
/// the next use), since PostgresNIO keeps a failed preparation's error for that name for the
/// connection's life, and a preparation can fail for a passing reason (sent in a transaction
/// already aborted). See `ConnectionLossAwareDatabase.mayHaveFailedPreparing(_:)`.
final class PostgresStatementNames: Sendable {
    struct Key: Hashable, Sendable {
        var sql: String
        var parameterTypes: [PostgresDataType]
    }

    /// At most this many names are made in the storage's life; past it, statements go unnamed.
    /// Each connection keeps every statement it prepared until it closes.
    let capacity: Int
    private let state = Mutex(State())

    private struct State {
        var names: [Key: String] = [:]
        var made = 0
    }

    init(capacity: Int = 256) {
        self.capacity = capacity
    }

    /// The name to prepare `key` under, or nil when the storage has made its last name.
    func name(for key: Key) -> String? {
        state.withLock { state in
            if let name = state.names[key] { return name }
            guard state.made < capacity else { return nil }
            state.made += 1
            let name = "storekeeper_\(state.made)"
            state.names[key] = name
            return name
        }
    }

    /// Forgets `name` for `key`, after a statement under it failed.
    func retire(_ name: String, for key: Key) {
        state.withLock { state in
            if state.names[key] == name { state.names[key] = nil }
        }
    }

    /// How many names were made so far (retired ones included).
    var namesMade: Int { state.withLock(\.made) }
}

/// A statement executed under a name from ``PostgresStatementNames``.
///
/// PostgresNIO 1.33 prepares only ``PostgresPreparedStatement`` types, whose name and text are
/// static: one type per statement written in the source. Storekeeper's statements are built at run
/// time (SQLKit), so the name and text are the task's ``current`` ones, bound around each
/// execution; PostgresNIO reads both in the calling task when it hands the statement over and
/// again if the statement fails. `PostgresStatementNamesTests` runs statements of different texts
/// on one connection and checks each was prepared as itself.
struct NamedStatement: PostgresPreparedStatement {
    typealias Row = PostgresRow

    struct Current: Sendable {
        var name: String
        var sql: String
    }

    @TaskLocal static var current = Current(name: "", sql: "")

    static var name: String { current.name }
    static var sql: String { current.sql }

    let bindings: PostgresBindings

    func makeBindings() -> PostgresBindings { bindings }
    func decodeRow(_ row: PostgresRow) -> PostgresRow { row }
}
