import Foundation
import SQLKit

/// The few places where SQLite and PostgreSQL need different SQL; everything else is shared.
enum SQLFlavor: String, Sendable {
    case sqlite
    case postgresql

    /// Appended to a `SELECT` that reads a row the transaction will write back: PostgreSQL locks the
    /// row against concurrent writers; SQLite needs nothing, as its transactions run one at a time.
    var lockForUpdate: String {
        switch self {
        case .sqlite: ""
        case .postgresql: " FOR UPDATE"
        }
    }

    /// Like ``lockForUpdate``, but rows another transaction holds are skipped instead of waited for,
    /// so several workers claim disjoint batches.
    var lockSkippingLocked: String {
        switch self {
        case .sqlite: ""
        case .postgresql: " FOR UPDATE SKIP LOCKED"
        }
    }

    /// Makes SQLite read a table through `index`. Without statistics its planner prefers an
    /// equality on another index's first column and sorts what that gives; a claim must read its
    /// rows in the order its index holds, whatever is due. PostgreSQL plans from its statistics.
    func indexedBy(_ index: String) -> String {
        switch self {
        case .sqlite: " INDEXED BY \(index)"
        case .postgresql: ""
        }
    }

    /// The condition of the partial index `purchases_awaiting_acknowledgement` as each backend's
    /// index was created with it: SQLite uses a partial index only for a query that repeats its
    /// condition (`= 1`, not `= TRUE`).
    var awaitingAcknowledgement: String {
        switch self {
        case .sqlite: "needs_acknowledgement = 1"
        case .postgresql: "needs_acknowledgement"
        }
    }

    /// A bound BLOB/BYTEA value. An empty buffer bound as NULL (as SQLiteNIO did) still gets an explicit
    /// empty-blob fallback.
    func blob(_ value: Data) -> SQLQueryString {
        switch self {
        case .sqlite: "COALESCE(\(bind: value), X'')"
        case .postgresql: "\(bind: value)"
        }
    }
}
