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

    /// When a subscription last had news: the later of its observation (the ordering key, never
    /// null) and its expiry. The first column of `purchases_awaiting_news` (migration 20), which
    /// ``SQLStorageTransaction/subscriptionsAwaitingNews(lastNews:notRefreshedSince:limit:)``
    /// repeats word for word so that both planners match it. SQLite's `MAX` of a null is null,
    /// PostgreSQL's `GREATEST` skips it.
    var subscriptionLastNews: String {
        switch self {
        case .sqlite: "MAX(observed_at, COALESCE(expires_at, 0))"
        case .postgresql: "GREATEST(observed_at, expires_at)"
        }
    }

    /// `ORDER BY` text columns compared byte-wise, as a batch orders the lists it answers from memory
    /// (``SQLBatch``): SQLite's default collation (`BINARY`) does; a PostgreSQL database's default
    /// may be linguistic (`en_US.UTF-8` puts `a_1` before `B-2`), so there each column is given the
    /// `C` collation.
    func byteOrder(_ columns: String...) -> String {
        switch self {
        case .sqlite: columns.joined(separator: ", ")
        case .postgresql: columns.map { "\($0) COLLATE \"C\"" }.joined(separator: ", ")
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

    /// A multi-row statement's rows, split into statements. SQLite compiles each distinct text
    /// once and keeps it (``SQLiteHandle``), so there the rows go in power-of-two runs (42 rows as
    /// 32 + 8 + 2): a few texts per table instead of one per batch size, which had the writer's
    /// thread compiling most batch statements anew, and emptying its statement cache every few
    /// hundred. PostgreSQL plans every statement anyway: `limit` rows per statement.
    func statementChunks<Element>(_ elements: [Element], limit: Int) -> [[Element]] {
        switch self {
        case .postgresql:
            return elements.chunked(limit)
        case .sqlite:
            let largest = Self.powerOfTwo(atMost: limit)
            var chunks: [[Element]] = []
            var start = 0
            while start < elements.count {
                let size = Self.powerOfTwo(atMost: min(elements.count - start, largest))
                chunks.append(Array(elements[start..<start + size]))
                start += size
            }
            return chunks
        }
    }

    /// Keys for `IN (…)`, on SQLite padded to a power of two by repeating the last (the same rows
    /// match), for the reason ``statementChunks(_:limit:)`` gives.
    func keyList<Element>(_ keys: [Element]) -> [Element] {
        guard self == .sqlite, let last = keys.last else { return keys }
        var padded = keys
        var size = 1
        while size < keys.count { size *= 2 }
        padded.append(contentsOf: repeatElement(last, count: size - keys.count))
        return padded
    }

    private static func powerOfTwo(atMost value: Int) -> Int {
        var power = 1
        while power * 2 <= value { power *= 2 }
        return power
    }
}
