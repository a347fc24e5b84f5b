import NIOCore
import SQLiteNIO
import VaporCSQLite

/// One SQLite connection, called directly: each statement runs on the calling thread, and
/// prepared statements are kept for the next use of the same SQL.
///
/// Why not SQLiteNIO's `SQLiteConnection`, whose SQLite library this uses: it sends every statement
/// to its thread pool and resumes the caller on another thread, and prepares every statement anew.
/// The ingest profile (Benchmarks/README.md) showed a transaction's ~13 statements spending most of
/// their time in those hops, and preparation as ~18 % of the writer's thread.
///
/// Not thread-safe by itself: ``SQLiteTransactionRunner`` lets one transaction at a time use it,
/// always on the runner's own thread (hence `@unchecked Sendable`).
final class SQLiteHandle: @unchecked Sendable {
    private var raw: OpaquePointer?
    /// Prepared statements by SQL text, reset after each use.
    private var cache: [String: CachedStatement] = [:]
    /// Statements built for one query each (such as multi-row inserts) would grow the cache
    /// without bound; past this many it is emptied.
    private static let cacheLimit = 256
    /// Kept alive while SQLite holds a pointer to it (``onCommit(_:)``).
    private var commitHook: CommitHook?

    /// Opens (creating if needed) the database at `path`; `:memory:` is a private in-memory database.
    init(path: String) throws {
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_CREATE | SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX | SQLITE_OPEN_EXRESCODE
        let result = sqlite_nio_sqlite3_open_v2(path, &handle, flags, nil)
        guard result == SQLITE_OK, let handle else {
            let error = SQLiteCallError(code: result, handle: handle, doing: "open")
            sqlite_nio_sqlite3_close_v2(handle)
            throw error
        }
        raw = handle
    }

    /// Runs one statement with `binds`, handing each result row to `onRow`.
    func execute(_ sql: String, _ binds: [SQLiteData], _ onRow: (SQLiteHandleRow) throws -> Void) throws {
        guard let raw else { throw SQLiteCallError(code: SQLITE_MISUSE, message: "the connection is closed") }
        let statement = try cachedStatement(sql, on: raw)
        // Not sqlite3_clear_bindings: every parameter is bound anew below, and clearing one whose
        // value the plan depends on (a partial index's condition) expires the statement, which
        // the profile showed as re-preparation on every use.
        defer { sqlite_nio_sqlite3_reset(statement.pointer) }
        for (offset, value) in binds.enumerated() {
            let result = bind(value, at: Int32(offset + 1), of: statement.pointer)
            guard result == SQLITE_OK else { throw SQLiteCallError(code: result, handle: raw, doing: "bind") }
        }
        while true {
            let result = sqlite_nio_sqlite3_step(statement.pointer)
            switch result {
            case SQLITE_ROW:
                try onRow(SQLiteHandleRow(columns: statement.columns, values: try values(of: statement)))
            case SQLITE_DONE:
                return
            default:
                throw SQLiteCallError(code: result, handle: raw, doing: "step")
            }
        }
    }

    // MARK: The WAL

    /// Calls `body` after each commit on this connection, on the committing thread, with the
    /// number of frames the WAL now holds. A connection has one WAL hook: this one replaces
    /// SQLite's automatic checkpoint, so `body` decides when the WAL is copied back.
    func onCommit(_ body: @escaping @Sendable (_ walFrames: Int, _ checkpointInline: () -> Void) -> Void) {
        guard let raw else { return }
        let hook = CommitHook(body)
        commitHook = hook
        sqlite_nio_sqlite3_wal_hook(
            raw,
            { context, database, name, frames in
                guard let context else { return SQLITE_OK }
                let hook = Unmanaged<CommitHook>.fromOpaque(context).takeUnretainedValue()
                hook.body(Int(frames)) {
                    // What SQLite's own hook does: a passive checkpoint, inside the commit. Busy
                    // (another connection is checkpointing) is fine: a later commit tries again.
                    _ = sqlite_nio_sqlite3_wal_checkpoint_v2(database, name, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
                }
                return SQLITE_OK
            }, Unmanaged.passUnretained(hook).toOpaque())
    }

    /// Copies what the WAL holds back into the database file as far as no reader still needs it
    /// (`SQLITE_CHECKPOINT_PASSIVE`: it waits for no one and no one waits for it). Returns how many
    /// of the WAL's frames are now in the database file (-1 if this connection has no WAL open),
    /// or nil if another connection was checkpointing.
    func checkpoint() throws -> Int? {
        guard let raw else { throw SQLiteCallError(code: SQLITE_MISUSE, message: "the connection is closed") }
        var (frames, copied): (Int32, Int32) = (0, 0)
        let result = sqlite_nio_sqlite3_wal_checkpoint_v2(raw, nil, SQLITE_CHECKPOINT_PASSIVE, &frames, &copied)
        if result & 0xff == SQLITE_BUSY { return nil }
        guard result == SQLITE_OK else { throw SQLiteCallError(code: result, handle: raw, doing: "checkpoint") }
        return Int(copied)
    }

    private final class CommitHook: Sendable {
        let body: @Sendable (Int, () -> Void) -> Void
        init(_ body: @escaping @Sendable (Int, () -> Void) -> Void) { self.body = body }
    }

    /// Finalizes every statement and closes the connection (idempotent).
    func close() throws {
        guard let raw else { return }
        for statement in cache.values { sqlite_nio_sqlite3_finalize(statement.pointer) }
        cache = [:]
        if commitHook != nil { sqlite_nio_sqlite3_wal_hook(raw, nil, nil) }
        let result = sqlite_nio_sqlite3_close_v2(raw)
        self.raw = nil
        commitHook = nil
        guard result == SQLITE_OK else { throw SQLiteCallError(code: result, message: "close failed") }
    }

    deinit {
        try? close()
    }

    // MARK: Statements

    private final class CachedStatement {
        let pointer: OpaquePointer
        let columns: SQLiteColumnNames

        init(pointer: OpaquePointer, columns: SQLiteColumnNames) {
            self.pointer = pointer
            self.columns = columns
        }
    }

    private func cachedStatement(_ sql: String, on raw: OpaquePointer) throws -> CachedStatement {
        if let cached = cache[sql] { return cached }
        var pointer: OpaquePointer?
        var tail: UnsafePointer<CChar>?
        let result = sql.withCString { text in
            let prepared = sqlite_nio_sqlite3_prepare_v3(
                raw, text, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &pointer, &tail)
            // A second statement in the same text would be silently skipped: refuse it.
            if prepared == SQLITE_OK, let tail, Self.hasAnotherStatement(tail) { return SQLITE_MISUSE }
            return prepared
        }
        guard result == SQLITE_OK, let pointer else {
            sqlite_nio_sqlite3_finalize(pointer)
            if result == SQLITE_MISUSE {
                throw SQLiteCallError(code: result, message: "more than one statement in one query")
            }
            throw SQLiteCallError(code: result, handle: raw, doing: "prepare")
        }
        var names: [String] = []
        for column in 0..<sqlite_nio_sqlite3_column_count(pointer) {
            names.append(sqlite_nio_sqlite3_column_name(pointer, column).map { String(cString: $0) } ?? "")
        }
        let statement = CachedStatement(pointer: pointer, columns: SQLiteColumnNames(names))
        if cache.count >= Self.cacheLimit {
            for old in cache.values { sqlite_nio_sqlite3_finalize(old.pointer) }
            cache = [:]
        }
        cache[sql] = statement
        return statement
    }

    private static func hasAnotherStatement(_ tail: UnsafePointer<CChar>) -> Bool {
        var cursor = tail
        while cursor.pointee != 0 {
            switch UInt8(bitPattern: cursor.pointee) {
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\t"), UInt8(ascii: "\r"), UInt8(ascii: ";"):
                cursor += 1
            default:
                return true
            }
        }
        return false
    }

    private func bind(_ value: SQLiteData, at index: Int32, of statement: OpaquePointer) -> Int32 {
        switch value {
        case .integer(let integer):
            return sqlite_nio_sqlite3_bind_int64(statement, index, Int64(integer))
        case .float(let double):
            return sqlite_nio_sqlite3_bind_double(statement, index, double)
        case .text(let text):
            var text = text
            return text.withUTF8 { bytes in
                bytes.withMemoryRebound(to: CChar.self) {
                    sqlite_nio_sqlite3_bind_text64(
                        statement, index, $0.baseAddress, UInt64($0.count), sqliteTransient, UInt8(SQLITE_UTF8))
                }
            }
        case .blob(let buffer):
            // An empty blob is a blob, not NULL (a nil pointer would bind NULL).
            guard buffer.readableBytes > 0 else { return sqlite_nio_sqlite3_bind_zeroblob(statement, index, 0) }
            return buffer.withUnsafeReadableBytes {
                sqlite_nio_sqlite3_bind_blob64(statement, index, $0.baseAddress, UInt64($0.count), sqliteTransient)
            }
        case .null:
            return sqlite_nio_sqlite3_bind_null(statement, index)
        }
    }

    private func values(of statement: CachedStatement) throws -> [SQLiteData] {
        let pointer = statement.pointer
        var values: [SQLiteData] = []
        values.reserveCapacity(statement.columns.names.count)
        for column in 0..<Int32(statement.columns.names.count) {
            switch sqlite_nio_sqlite3_column_type(pointer, column) {
            case SQLITE_INTEGER:
                values.append(.integer(Int(sqlite_nio_sqlite3_column_int64(pointer, column))))
            case SQLITE_FLOAT:
                values.append(.float(sqlite_nio_sqlite3_column_double(pointer, column)))
            case SQLITE_TEXT:
                let count = Int(sqlite_nio_sqlite3_column_bytes(pointer, column))
                guard let text = sqlite_nio_sqlite3_column_text(pointer, column) else {
                    throw SQLiteCallError(code: SQLITE_NOMEM, message: "no text for column \(column)")
                }
                values.append(.text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)))
            case SQLITE_BLOB:
                let count = Int(sqlite_nio_sqlite3_column_bytes(pointer, column))
                var buffer = ByteBufferAllocator().buffer(capacity: count)
                if let bytes = sqlite_nio_sqlite3_column_blob(pointer, column) {
                    buffer.writeBytes(UnsafeRawBufferPointer(start: bytes, count: count))
                }
                values.append(.blob(buffer))
            default:
                values.append(.null)
            }
        }
        return values
    }
}

/// SQLite's "copy the value before returning" destructor.
private let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A statement's column names, shared by its rows.
final class SQLiteColumnNames: Sendable {
    let names: [String]
    private let offsets: [String: Int]

    init(_ names: [String]) {
        self.names = names
        var offsets: [String: Int] = [:]
        for (offset, name) in names.enumerated() where offsets[name] == nil { offsets[name] = offset }
        self.offsets = offsets
    }

    func offset(of name: String) -> Int? { offsets[name] }
}

/// What SQLite said when a call failed: its (extended) result code and message.
struct SQLiteCallError: Error, CustomStringConvertible {
    /// The extended result code; `code & 0xff` is the primary one (`SQLITE_CONSTRAINT`, …).
    var code: Int32
    var message: String

    init(code: Int32, message: String) {
        self.code = code
        self.message = message
    }

    init(code: Int32, handle: OpaquePointer?, doing operation: String) {
        self.code = code
        let text = handle.flatMap { sqlite_nio_sqlite3_errmsg($0) }.map { String(cString: $0) }
        self.message = "\(operation): \(text ?? String(cString: sqlite_nio_sqlite3_errstr(code)))"
    }

    var primaryCode: Int32 { code & 0xff }

    var description: String { "SQLite error \(code): \(message)" }
}
