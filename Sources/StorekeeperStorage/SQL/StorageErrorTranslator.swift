import Foundation
import PostgresNIO

/// Turns driver errors into ``StorageError``s: unique and foreign-key violations are conflicts,
/// everything else the database says or fails to say means it is unavailable. Secrets (the
/// PostgreSQL password) are removed from every message.
struct StorageErrorTranslator: Sendable {
    /// Strings that must never appear in an error detail.
    var secrets: [String] = []

    /// `error` as a ``StorageError``, whatever it is (cancellation excepted): for errors from the
    /// storage's own database calls.
    func translate(_ error: any Error) -> any Error {
        let translated = translateIfDriverError(error)
        switch translated {
        case is StorageError, is CancellationError:
            return translated
        default:
            return StorageError(.unavailable, redact("\(error)"))
        }
    }

    /// `error` as a ``StorageError`` if a database driver threw it; anything else (the caller's
    /// own errors from a transaction body) unchanged.
    func translateIfDriverError(_ error: any Error) -> any Error {
        switch error {
        case let storageError as StorageError:
            return storageError
        case is CancellationError:
            return error
        case let sqliteError as SQLiteCallError:
            return translate(sqliteError)
        case let postgresError as PSQLError:
            return translate(postgresError)
        case let transactionError as PostgresTransactionError:
            // PostgresNIO wraps whatever went wrong in BEGIN, the body, COMMIT or ROLLBACK.
            if let cause = transactionError.closureError ?? transactionError.commitError
                ?? transactionError.beginError
            {
                return translate(cause)
            }
            return StorageError(.unavailable, redact("transaction failed: \(String(reflecting: transactionError))"))
        case let decodingError as PostgresDecodingError:
            return StorageError(.corrupt, redact("cannot read column \(decodingError.columnName): \(decodingError)"))
        case is DecodingError:
            return StorageError(.corrupt, redact("cannot read stored data: \(error)"))
        default:
            return error
        }
    }

    private func translate(_ error: SQLiteCallError) -> StorageError {
        let detail = redact("SQLite: \(error.message)")
        switch error.primaryCode {
        case 19:  // SQLITE_CONSTRAINT: unique, primary key, foreign key, check
            return StorageError(.conflict, detail)
        case 11, 26:  // SQLITE_CORRUPT, SQLITE_NOTADB
            return StorageError(.corrupt, detail)
        default:
            return StorageError(.unavailable, detail)
        }
    }

    private func translate(_ error: PSQLError) -> StorageError {
        guard error.code == .server, let server = error.serverInfo else {
            // PSQLError's description is deliberately vague; the code and the underlying error say
            // what happened (connection refused, TLS failure, pool closed, …) without the query.
            var detail = "PostgreSQL \(error.code)"
            if let underlying = error.underlying { detail += ": \(underlying)" }
            return StorageError(.unavailable, redact(detail))
        }
        let sqlState = server[.sqlState] ?? "?????"
        var detail = "PostgreSQL \(sqlState): \(server[.message] ?? "error")"
        if let constraint = server[.constraintName] { detail += " (constraint \(constraint))" }
        switch sqlState {
        case "23505", "23503", "23P01":  // unique, foreign key, exclusion violation
            return StorageError(.conflict, redact(detail))
        case "40001", "40P01":  // serialization failure, deadlock: the transaction may be rerun
            var retryable = StorageError(.unavailable, redact(detail))
            retryable.isRetryable = true
            return retryable
        case "42P01":  // undefined table
            return StorageError(.unavailable, redact(detail + "; has the schema been migrated?"))
        default:
            return StorageError(.unavailable, redact(detail))
        }
    }

    func redact(_ text: String) -> String {
        secrets.filter { !$0.isEmpty }.reduce(text) { $0.replacingOccurrences(of: $1, with: "***") }
    }
}
