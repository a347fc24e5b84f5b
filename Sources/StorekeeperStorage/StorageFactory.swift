import Foundation
public import Logging

/// Opens the storage a configuration string names.
public enum StorageFactory {
    /// What a storage string names, before anything is opened.
    public enum Location: Sendable, Hashable, CustomStringConvertible {
        /// A SQLite database file (or `:memory:`).
        case sqlite(path: String)
        /// A PostgreSQL database.
        case postgresql(PostgresLocation)

        /// Reads `location`: `postgres://…` or `postgresql://…` is PostgreSQL; `sqlite://PATH`,
        /// `sqlite:PATH` or a plain path is a SQLite file (`sqlite:///var/lib/x.db` and
        /// `/var/lib/x.db` are the same file; `sqlite://data/x.db` is relative). Anything else,
        /// or an empty string, throws ``StorageError/Reason/badConfiguration``.
        public init(_ location: String) throws {
            let trimmed = location.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !trimmed.isEmpty else {
                throw StorageError(
                    .badConfiguration,
                    "no storage given: expected a SQLite path, sqlite://PATH or postgres://user:password@host/database")
            }
            let separator = trimmed.range(of: "://")
            let scheme = separator.map { trimmed[..<$0.lowerBound].lowercased() }
            switch scheme {
            case "postgres", "postgresql":
                self = .postgresql(try PostgresLocation(url: trimmed))
            case "sqlite", "sqlite3":
                let path = separator.map { String(trimmed[$0.upperBound...]) } ?? ""
                guard !path.isEmpty else {
                    throw StorageError(.badConfiguration, "'\(trimmed)' names no SQLite file (sqlite:///path/to/db)")
                }
                self = .sqlite(path: path)
            case .some(let other):
                throw StorageError(
                    .badConfiguration,
                    "unknown storage scheme '\(other)://' in '\(PostgresLocation.redacting(trimmed))': "
                        + "use a SQLite path, sqlite://PATH or postgres://user:password@host/database")
            case nil:
                if trimmed.lowercased().hasPrefix("sqlite:") {
                    self = .sqlite(path: String(trimmed.dropFirst("sqlite:".count)))
                } else {
                    self = .sqlite(path: trimmed)
                }
            }
        }

        /// `location` as it may be shown in logs and output: parsed, without a password; an
        /// unparsable string with any password redacted.
        public static func described(_ location: String) -> String {
            (try? Location(location))?.description ?? PostgresLocation.redacting(location)
        }

        /// The location for logs: PostgreSQL URLs without their password.
        public var description: String {
            switch self {
            case .sqlite(let path): "sqlite://\(path)"
            case .postgresql(let location): location.description
            }
        }
    }

    /// Opens the storage `location` names (see ``Location/init(_:)``). Does not migrate.
    public static func open(_ location: String, logger: Logger) async throws -> any Storage {
        try await open(try Location(location), logger: logger)
    }

    /// Opens the storage at `location`. Does not migrate.
    public static func open(_ location: Location, logger: Logger) async throws -> any Storage {
        switch location {
        case .sqlite(let path):
            return try await SQLiteStorage(path: path, logger: logger)
        case .postgresql(let postgres):
            return PostgresStorage(location: postgres, logger: logger)
        }
    }
}
