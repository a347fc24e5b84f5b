public import StorekeeperStorage
public import Testing

/// The backends a test runs against, named in its arguments by their raw values.
extension StorageBackend: CustomTestStringConvertible {
    public var testDescription: String { rawValue }

    /// SQLite always; PostgreSQL when STOREKEEPER_TEST_POSTGRES_URL names a server (`.ci/run`
    /// starts one with `.ci/postgres.sh`).
    public static let available: [StorageBackend] = PostgresAdmin.serverURL == nil ? [.sqlite] : [.sqlite, .postgresql]
}
