import Foundation
import SQLKit
import Storekeeper

/// Consent, reported usage and the refund request outbox (migration 8).
extension SQLStorageTransaction {
    // MARK: Consent

    func consumptionConsent(of customer: CustomerID) async throws -> ConsumptionConsent? {
        try await row(
            """
            SELECT consented, decided_at FROM consumption_consents
            WHERE customer_id = \(bind: customer.rawValue)
            """
        ).flatMap(consent(from:))
    }

    /// The consent a row of `consumption_consents`, alone or joined, holds; nil when a join found none.
    func consent(from row: any SQLRow) throws -> ConsumptionConsent? {
        let reader = RowReader(row: row, table: "consumption_consents")
        guard let consented = try reader.optionalBool("consented"),
            let decidedAt = try reader.optionalDate("decided_at")
        else { return nil }
        return ConsumptionConsent(consented: consented, decidedAt: decidedAt)
    }

    func saveConsumptionConsent(_ consent: ConsumptionConsent?, of customer: CustomerID) async throws {
        guard let consent else {
            try await run("DELETE FROM consumption_consents WHERE customer_id = \(bind: customer.rawValue)")
            return
        }
        try await run(
            """
            INSERT INTO consumption_consents (customer_id, consented, decided_at)
            VALUES (\(bind: customer.rawValue), \(bind: consent.consented),
                    \(bind: StoredTime.milliseconds(consent.decidedAt)))
            ON CONFLICT (customer_id) DO UPDATE SET
                consented = excluded.consented, decided_at = excluded.decided_at
            """)
    }

    // MARK: Usage

    func purchaseUsage(_ key: PurchaseKey) async throws -> PurchaseUsage? {
        guard
            let found = try await row(
                """
                SELECT customer_id, consumed_milli_percent, delivery_problem, reported_at FROM purchase_usage
                WHERE store = \(bind: key.store.rawValue) AND purchase_id = \(bind: key.id)
                """)
        else { return nil }
        let reader = RowReader(row: found, table: "purchase_usage")
        return PurchaseUsage(
            key: key, customerID: CustomerID(try reader.string("customer_id")),
            consumedMilliPercent: try reader.int("consumed_milli_percent"),
            deliveryProblem: try reader.optionalRaw("delivery_problem", as: DeliveryStatus.self),
            reportedAt: try reader.date("reported_at"))
    }

    func savePurchaseUsage(_ usage: PurchaseUsage) async throws {
        try await run(
            """
            INSERT INTO purchase_usage
                (store, purchase_id, customer_id, consumed_milli_percent, delivery_problem, reported_at)
            VALUES (\(bind: usage.key.store.rawValue), \(bind: usage.key.id), \(bind: usage.customerID.rawValue),
                    \(bind: usage.consumedMilliPercent), \(bind: usage.deliveryProblem?.rawValue),
                    \(bind: StoredTime.milliseconds(usage.reportedAt)))
            ON CONFLICT (store, purchase_id) DO UPDATE SET
                customer_id = excluded.customer_id, consumed_milli_percent = excluded.consumed_milli_percent,
                delivery_problem = excluded.delivery_problem, reported_at = excluded.reported_at
            """)
    }

    // MARK: Refund requests

    private static let refundRequestColumns = """
        store, id, purchase_id, transaction_id, app, environment, reason, requested_at, deadline, status, attempts,
        next_attempt_at, answer, skip_reason, store_error_code, last_error, customer_id, updated_at
        """

    /// The columns prefixed by the table's alias `r`, for a query that joins it.
    private static let qualifiedRefundRequestColumns = refundRequestColumns.split(separator: ",")
        .map { "r." + $0.trimmingCharacters(in: .whitespacesAndNewlines) }.joined(separator: ", ")

    private func refundRequest(from row: any SQLRow) throws -> RefundRequest {
        let reader = RowReader(row: row, table: "refund_requests")
        var answer: ConsumptionAnswer?
        if let json = try reader.optionalString("answer") {
            do {
                answer = try JSONDecoder().decode(ConsumptionAnswer.self, from: Data(json.utf8))
            } catch {
                throw StorageError(.corrupt, "refund_requests.answer holds unreadable JSON: \(error)")
            }
        }
        let store = try reader.raw("store", as: Store.self)
        return RefundRequest(
            id: try reader.string("id"), purchaseKey: PurchaseKey(store: store, id: try reader.string("purchase_id")),
            transactionID: try reader.string("transaction_id"), app: AppID(try reader.string("app")),
            environment: try reader.raw("environment", as: PurchaseEnvironment.self),
            reason: try reader.optionalString("reason"), requestedAt: try reader.date("requested_at"),
            deadline: try reader.date("deadline"), status: try reader.raw("status", as: RefundRequestStatus.self),
            attempts: try reader.int("attempts"), nextAttemptAt: try reader.optionalDate("next_attempt_at"),
            answer: answer, skipReason: try reader.optionalRaw("skip_reason", as: ConsumptionSkipReason.self),
            storeErrorCode: try reader.decodeIfPresent("store_error_code", as: Int.self),
            lastError: try reader.optionalString("last_error"),
            customerID: try reader.optionalString("customer_id").map(CustomerID.init(rawValue:)),
            updatedAt: try reader.date("updated_at"))
    }

    private static func answerJSON(_ answer: ConsumptionAnswer?) throws -> String? {
        guard let answer else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(answer), as: UTF8.self)
    }

    func insertRefundRequest(_ request: RefundRequest) async throws -> Bool {
        let inserted = try await rows(
            """
            INSERT INTO refund_requests (\(unsafeRaw: Self.refundRequestColumns))
            VALUES (\(bind: request.purchaseKey.store.rawValue), \(bind: request.id), \(bind: request.purchaseKey.id),
                    \(bind: request.transactionID), \(bind: request.app.rawValue), \(bind: request.environment.rawValue),
                    \(bind: request.reason), \(bind: StoredTime.milliseconds(request.requestedAt)),
                    \(bind: StoredTime.milliseconds(request.deadline)), \(bind: request.status.rawValue),
                    \(bind: request.attempts), \(bind: StoredTime.milliseconds(request.nextAttemptAt)),
                    \(bind: try Self.answerJSON(request.answer)), \(bind: request.skipReason?.rawValue),
                    \(bind: request.storeErrorCode), \(bind: request.lastError), \(bind: request.customerID?.rawValue),
                    \(bind: StoredTime.milliseconds(request.updatedAt)))
            ON CONFLICT (store, id) DO NOTHING
            RETURNING id
            """)
        return !inserted.isEmpty
    }

    func claimDueRefundRequests(now: Date, limit: Int, lease: TimeInterval) async throws -> [RefundRequest] {
        guard limit > 0 else { return [] }
        let leasedUntil = StoredTime.milliseconds(now.addingTimeInterval(max(lease, 0)))
        let claimed = try await claim(
            from: "refund_requests", through: "refund_requests_due_in_order", key: "id", due: "status = 'pending'",
            now: StoredTime.milliseconds(now),
            orderBy: "next_attempt_at, store, id", limit: limit, leasedUntil: leasedUntil,
            returning: Self.refundRequestColumns
        ).map(refundRequest(from:))
        return claimed.sorted { ($0.requestedAt, $0.id) < ($1.requestedAt, $1.id) }
    }

    func updateRefundRequest(_ request: RefundRequest) async throws {
        try await run(
            """
            UPDATE refund_requests SET
                status = \(bind: request.status.rawValue), attempts = \(bind: request.attempts),
                next_attempt_at = \(bind: StoredTime.milliseconds(request.nextAttemptAt)),
                answer = \(bind: try Self.answerJSON(request.answer)), skip_reason = \(bind: request.skipReason?.rawValue),
                store_error_code = \(bind: request.storeErrorCode), last_error = \(bind: request.lastError),
                customer_id = \(bind: request.customerID?.rawValue),
                updated_at = \(bind: StoredTime.milliseconds(request.updatedAt))
            WHERE store = \(bind: request.purchaseKey.store.rawValue) AND id = \(bind: request.id)
            """)
    }

    func refundRequests(of customer: CustomerID) async throws -> [RefundRequest] {
        try await rows(
            """
            SELECT \(unsafeRaw: Self.qualifiedRefundRequestColumns)
            FROM refund_requests r JOIN purchases p ON p.store = r.store AND p.id = r.purchase_id
            WHERE p.customer_id = \(bind: customer.rawValue)
            ORDER BY r.requested_at, r.id
            """
        ).map(refundRequest(from:))
    }
}
