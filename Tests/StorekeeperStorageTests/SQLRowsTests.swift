import Foundation
import SQLKit
import Storekeeper
import Testing

@testable import StorekeeperStorage

/// ``SQLRows`` on every backend: each type of value, NULL or not, goes in as given and the rows in
/// the order given; as `IN (…)` keys, they select what they name.
@Suite struct SQLRowsTests {
    static let rows: [[SQLRows.Value]] = [
        [.text("a"), .integer(Int64.min), .double(0.25), .boolean(true), .blob(Data([0, 1, 0xFF]))],
        [.text(nil), .integer(nil as Int64?), .double(nil), .boolean(nil), .blob(nil)],
        [.text("ü'\"\\ \u{1F600}"), .integer(Int64.max), .double(-1e300), .boolean(false), .blob(Data())],
        [.text(""), .integer(0), .double(0), .boolean(nil), .blob(Data([0x5C, 0x78]))],
    ]

    struct Read: Equatable {
        var text: String?
        var integer: Int64?
        var double: Double?
        var boolean: Bool?
        var blob: Data?
    }

    static let expected: [Read] = [
        Read(text: "a", integer: Int64.min, double: 0.25, boolean: true, blob: Data([0, 1, 0xFF])),
        Read(),
        Read(text: "ü'\"\\ \u{1F600}", integer: Int64.max, double: -1e300, boolean: false, blob: Data()),
        Read(text: "", integer: 0, double: 0, boolean: nil, blob: Data([0x5C, 0x78])),
    ]

    @Test(arguments: StorageBackend.available)
    func valuesOfEveryTypeGoInAsGivenInTheOrderGiven(backend: StorageBackend) async throws {
        let read = try await Self.inFreshTransaction(backend) { _, flavor, database -> [Read] in
            let (identity, boolean, blob) =
                flavor == .postgresql
                ? ("BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "BOOLEAN", "BYTEA")
                : ("INTEGER PRIMARY KEY", "INTEGER", "BLOB")
            try await database.raw(
                """
                CREATE TABLE given_rows (seq \(unsafeRaw: identity), t TEXT, i BIGINT, d DOUBLE PRECISION,
                    b \(unsafeRaw: boolean), x \(unsafeRaw: blob))
                """
            ).run()
            var rows = SQLRows(columnCount: 5)
            for row in Self.rows { rows.append(row) }
            try await database.raw("INSERT INTO given_rows (t, i, d, b, x) \(rows.source(flavor))").run()
            return try await database.raw("SELECT t, i, d, b, x FROM given_rows ORDER BY seq").all().map { row in
                Read(
                    text: try row.decodeNil(column: "t") ? nil : try row.decode(column: "t", as: String.self),
                    integer: try row.decodeNil(column: "i") ? nil : try row.decode(column: "i", as: Int64.self),
                    double: try row.decodeNil(column: "d") ? nil : try row.decode(column: "d", as: Double.self),
                    boolean: try row.decodeNil(column: "b") ? nil : try row.decode(column: "b", as: Bool.self),
                    blob: try row.decodeNil(column: "x") ? nil : try row.decode(column: "x", as: Data.self))
            }
        }
        #expect(read == Self.expected)
    }

    /// On SQLite the rows' placeholders are `?` without a number, among SQLKit's numbered ones:
    /// a value bound before the rows and one bound after still name their own values.
    @Test(arguments: StorageBackend.available)
    func valuesBoundAroundTheRowsKeepTheirPlaces(backend: StorageBackend) async throws {
        let read = try await Self.inFreshTransaction(backend) { _, flavor, database -> [String] in
            try await database.raw("CREATE TABLE around (seq BIGINT PRIMARY KEY, t TEXT NOT NULL)").run()
            try await database.raw("INSERT INTO around VALUES (1, 'a'), (2, 'b')").run()
            let rows = SQLRows(columnCount: 2, [(2, "x"), (3, "c")]) { [.integer($0.0), .text($0.1)] }
            try await database.raw(
                """
                WITH before AS (SELECT CAST(\(bind: "before") AS TEXT) AS value)
                INSERT INTO around (seq, t) \(rows.source(flavor))
                ON CONFLICT (seq) DO UPDATE SET t = \(bind: "after")
                """
            ).run()
            return try await database.raw("SELECT seq, t FROM around ORDER BY seq").all().map {
                "\(try $0.decode(column: "seq", as: Int.self))\(try $0.decode(column: "t", as: String.self))"
            }
        }
        #expect(read == ["1a", "2after", "3c"])
    }

    @Test(arguments: StorageBackend.available)
    func keysSelectWhatTheyName(backend: StorageBackend) async throws {
        let found = try await Self.inFreshTransaction(backend) { sql, _, database -> [String] in
            try await database.raw("CREATE TABLE keyed (a TEXT NOT NULL, b TEXT NOT NULL, PRIMARY KEY (a, b))").run()
            try await database.raw("INSERT INTO keyed VALUES ('x', '1'), ('x', '2'), ('y', '1'), ('y', '3')").run()
            let pairs = try await database.raw(
                "SELECT a, b FROM keyed WHERE (a, b) IN (\(sql.pairs([("x", "2"), ("y", "1"), ("z", "1")])))"
            ).all()
            let singles = try await database.raw("SELECT a, b FROM keyed WHERE b IN (\(sql.list(["3", "9"])))").all()
            return try (pairs + singles).map {
                try $0.decode(column: "a", as: String.self) + $0.decode(column: "b", as: String.self)
            }.sorted()
        }
        #expect(found == ["x2", "y1", "y3"])
    }

    /// What `body` returns from a transaction on a fresh, migrated database of `backend`, given the
    /// transaction, its SQL flavor and its connection.
    static func inFreshTransaction<Result: Sendable>(
        _ backend: StorageBackend,
        _ body: @escaping @Sendable (SQLStorageTransaction, SQLFlavor, any SQLDatabase) async throws -> Result
    ) async throws -> Result {
        var result: Result?
        try await TestDatabase.withFresh(backend) { storage, _ async throws in
            result = try await storage.transaction { transaction async throws -> Result in
                let sql = try #require(transaction as? SQLStorageTransaction)
                return try await body(sql, sql.flavor, sql.database)
            }
        }
        return try #require(result)
    }
}
