import Testing

@testable import StorekeeperStorage

/// How multi-row statements and key lists are shaped per backend: on SQLite, into a few texts it
/// keeps prepared; on PostgreSQL, as few statements as the bound-value limit allows.
@Suite struct SQLFlavorTests {
    @Test func sqliteSplitsRowsIntoPowerOfTwoRunsUpToTheLimit() {
        #expect(SQLFlavor.sqlite.statementChunks(Array(0..<42), limit: 500).map(\.count) == [32, 8, 2])
        #expect(SQLFlavor.sqlite.statementChunks(Array(0..<600), limit: 500).map(\.count) == [256, 256, 64, 16, 8])
        #expect(SQLFlavor.sqlite.statementChunks(Array(0..<1), limit: 500).map(\.count) == [1])
        #expect(SQLFlavor.sqlite.statementChunks([Int](), limit: 500).isEmpty)
        // Every row once, in order.
        #expect(SQLFlavor.sqlite.statementChunks(Array(0..<42), limit: 500).flatMap { $0 } == Array(0..<42))
    }

    @Test func postgresqlSendsUpToTheLimitPerStatement() {
        #expect(SQLFlavor.postgresql.statementChunks(Array(0..<42), limit: 500).map(\.count) == [42])
        #expect(SQLFlavor.postgresql.statementChunks(Array(0..<600), limit: 500).map(\.count) == [500, 100])
    }

    @Test func sqlitePadsKeyListsToAPowerOfTwoWithTheLastKey() {
        #expect(SQLFlavor.sqlite.keyList(["a", "b", "c", "d", "e"]) == ["a", "b", "c", "d", "e", "e", "e", "e"])
        #expect(SQLFlavor.sqlite.keyList(["a", "b", "c", "d"]) == ["a", "b", "c", "d"])
        #expect(SQLFlavor.sqlite.keyList(["a"]) == ["a"])
        #expect(SQLFlavor.sqlite.keyList([String]()).isEmpty)
        #expect(SQLFlavor.postgresql.keyList(["a", "b", "c"]) == ["a", "b", "c"])
    }
}
