import Foundation
import SQLKit

/// What a backend provides to the shared SQL implementation: a way to run work in one database
/// transaction. Everything else (the operations, migrations, error translation) is shared.
protocol SQLTransactionRunner: Sendable {
    var flavor: SQLFlavor { get }
    var errors: StorageErrorTranslator { get }

    /// Runs `body` in one transaction, committed if it returns and rolled back if it throws.
    /// With `holdingMigrationLock`, no other instance migrates until it ends.
    func inTransaction<Result: Sendable>(
        holdingMigrationLock: Bool, durability: CommitDurability,
        _ body: @Sendable (any SQLDatabase) async throws -> Result
    ) async throws -> Result

    /// Runs `body`, which only reads, on committed data, without waiting behind writers where the
    /// backend allows it.
    func reading<Result: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> Result) async throws
        -> Result
}

/// The ``Storage`` operations on top of a ``SQLTransactionRunner``; the public backends forward here.
struct SQLStorageCore<Runner: SQLTransactionRunner>: Sendable {
    let runner: Runner
    let migrator: Migrator

    init(runner: Runner, migrations: [Migration]) {
        self.runner = runner
        self.migrator = Migrator(migrations: migrations.sorted { $0.version < $1.version }, flavor: runner.flavor)
    }

    func migrate() async throws -> [Int] {
        var applied: [Int] = []
        for migration in migrator.migrations {
            let migrator = self.migrator
            let didApply = try await runner.inTransaction(holdingMigrationLock: true, durability: .flushed) {
                database in
                try await migrator.applyIfDue(migration, in: database, now: Date())
            }
            if didApply { applied.append(migration.version) }
        }
        return applied
    }

    func schemaVersion() async throws -> Int {
        let migrator = self.migrator
        return try await runner.inTransaction(holdingMigrationLock: false, durability: .flushed) { database in
            try await migrator.currentVersion(database)
        }
    }

    func transaction<Result: Sendable>(
        durability: CommitDurability, _ body: @Sendable (any StorageTransaction) async throws -> Result
    ) async throws -> Result {
        let flavor = runner.flavor
        let errors = runner.errors
        return try await runner.inTransaction(holdingMigrationLock: false, durability: durability) { database in
            let transaction = SQLStorageTransaction(database: database, flavor: flavor, errors: errors)
            let result = try await body(transaction)
            // What a batch kept goes before the commit.
            try await transaction.finishBatch()
            return result
        }
    }

    func read<Result: Sendable>(
        _ body: @Sendable (any StorageTransaction) async throws -> Result
    ) async throws -> Result {
        let flavor = runner.flavor
        let errors = runner.errors
        return try await runner.reading { database in
            try await body(SQLStorageTransaction(database: database, flavor: flavor, errors: errors))
        }
    }
}
