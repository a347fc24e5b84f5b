import Foundation
import Storekeeper
import StorekeeperStorage
import Synchronization
import Testing

/// A date at millisecond precision: what storage promises to give back exactly.
func date(milliseconds: Int64) -> Date {
    Date(timeIntervalSince1970: Double(milliseconds) / 1000)
}

let baseTime = date(milliseconds: 1_750_000_000_123)

func at(_ offsetMilliseconds: Int64) -> Date {
    date(milliseconds: 1_750_000_000_123 + offsetMilliseconds)
}

func makeCustomer(_ id: String, at time: Date = baseTime) -> Customer {
    Customer(id: CustomerID(id), appAccountToken: UUID(), createdAt: time)
}

/// A purchase with every optional field set.
func fullPurchase(_ key: PurchaseKey, customer: CustomerID?) -> Purchase {
    var purchase = Purchase(
        key: key, customerID: customer, app: AppID("com.example.app"), productID: "pro.monthly", kind: .subscription,
        environment: .sandbox,
        state: .gracePeriod, expiresAt: at(86_400_000), gracePeriodExpiresAt: at(2 * 86_400_000), autoRenew: false,
        ownership: .familyShared, quantity: 3, accountHint: "hint-\(key.id)", replaces: .googlePlay("older-token"),
        observedAt: at(1), needsAcknowledgement: true)
    purchase.basePlanID = "monthly-p1m"
    return purchase
}

/// A purchase with every optional field nil.
func minimalPurchase(_ key: PurchaseKey, observedAt: Date = baseTime) -> Purchase {
    Purchase(
        key: key, app: nil, productID: "coins.100", kind: .consumable, environment: .production, state: .pending,
        observedAt: observedAt)
}

func makeNotification(
    _ key: String, store: Store = .appStore, receivedAt: Date = baseTime, body: Data = Data("{\"n\":1}".utf8)
) -> InboxNotification {
    InboxNotification(store: store, dedupeKey: key, body: body, receivedAt: receivedAt)
}

/// A notification stored first, then a group holding its key again, one key twice and one key
/// under another store: what the inbox's group inserts tell apart, whichever way they run.
struct DedupingGroup: Sendable {
    let stored = makeNotification("n-0", body: Data("stored".utf8))
    let group = [
        makeNotification("n-1", body: Data("first".utf8)),
        makeNotification("n-0", body: Data("again".utf8)),
        makeNotification("n-1", body: Data("second".utf8)),
        makeNotification("n-1", store: .googlePlay, body: Data()),
        makeNotification("n-2"),
    ]
    /// Whether each of ``group`` is new.
    let outcomes = [true, false, false, true, true]

    /// Expects the first copy of each key kept, and nothing else stored.
    func expectKept(in storage: any Storage) async throws {
        try await storage.transaction { [stored, group] transaction async throws in
            #expect(try await transaction.notification(store: .appStore, dedupeKey: "n-0") == stored)
            #expect(try await transaction.notification(store: .appStore, dedupeKey: "n-1") == group[0])
            #expect(try await transaction.notification(store: .googlePlay, dedupeKey: "n-1") == group[3])
            #expect(try await transaction.notification(store: .appStore, dedupeKey: "n-2") == group[4])
            #expect(try await transaction.notificationCounts()[.pending] == 4)
        }
    }
}

/// Expects `body` to throw a ``StorageError`` with `reason`; returns it.
@discardableResult
func expectStorageError(
    _ reason: StorageError.Reason, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async -> StorageError? {
    do {
        try await body()
        Issue.record("expected StorageError(\(reason)), nothing was thrown", sourceLocation: sourceLocation)
        return nil
    } catch let error as StorageError {
        #expect(error.reason == reason, "\(error)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected StorageError(\(reason)), got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// The error a test body throws to make its transaction roll back.
struct Abandon: Error {}

/// Counts how often transaction bodies ran (reruns included).
final class AttemptCounter: Sendable {
    private let value = Mutex(0)

    /// Counts one more attempt; returns the running total.
    func next() -> Int {
        value.withLock {
            $0 += 1
            return $0
        }
    }
    var count: Int { value.withLock { $0 } }
}

extension StorageTransaction {
    /// Claims what is due as a worker that works outside the transaction does: locked, then leased
    /// for `lease` seconds.
    func claimDueNotifications(now: Date, limit: Int, lease: TimeInterval) async throws -> [InboxNotification] {
        try await leaseNotifications(
            try await lockDueNotifications(now: now, limit: limit), until: now.addingTimeInterval(lease))
    }
}
