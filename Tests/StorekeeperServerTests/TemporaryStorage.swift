import Foundation
import Logging
import StorekeeperStorage

/// A fresh, migrated SQLite storage in its own temporary directory, for one test.
enum TemporaryStorage {
    static var quietLogger: Logger {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }

    /// Runs `body` with the storage and the path of its file.
    static func withSQLiteFile<Result>(_ body: (any Storage, String) async throws -> Result) async throws -> Result {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-unit-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("storekeeper.sqlite").path
        let storage = try await StorageFactory.open(path, logger: quietLogger)
        try await storage.migrate()
        do {
            let result = try await body(storage, path)
            try await storage.close()
            return result
        } catch {
            try? await storage.close()
            throw error
        }
    }

    static func withSQLite<Result>(_ body: (any Storage) async throws -> Result) async throws -> Result {
        try await withSQLiteFile { storage, _ in try await body(storage) }
    }
}
