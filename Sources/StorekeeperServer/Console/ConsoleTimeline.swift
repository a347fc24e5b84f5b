import Foundation
import Storekeeper
import StorekeeperStorage

/// One line of a customer's or purchase's timeline.
struct ConsoleTimelineEntry: Sendable {
    enum Kind: String, Sendable {
        case state = "state change"
        case billing = "billing event"
        case refund
        case ownership = "ownership move"
        case balance = "balance change"
        case action = "operator action"
        /// What the server told Apple on a refund consumption request (or why it told nothing).
        case consumption = "consumption request"
        /// An event written for the app's backend (the outbox of docs/events.md).
        case event
    }

    var at: Date
    var kind: Kind
    var purchase: PurchaseKey?
    var detail: HTML
}

extension Console {
    /// What happened to these purchases (and to the customer's balances): state changes with the
    /// notification behind each (its decoded payload one click away), billing events and refunds,
    /// ownership moves, ledger entries and operators' actions, newest first.
    func timeline(of purchases: [Purchase], customer: CustomerID?, in transaction: any StorageTransaction)
        async throws -> [ConsoleTimelineEntry]
    {
        var entries: [ConsoleTimelineEntry] = []
        for purchase in purchases {
            let key = purchase.key
            for change in try await transaction.stateChanges(of: key) {
                let from = change.from?.rawValue ?? "new"
                let cause = [change.cause.source.rawValue, change.cause.event].compactMap { $0 }.joined(separator: " ")
                var source: HTML = "\(cause)"
                if change.cause.source == .notification, let reference = change.cause.reference {
                    source =
                        "\(cause) · <a href=\"\(Self.notificationPath(key.store, reference))\" class=\"notification\">notification \(reference)</a>"
                }
                let expiry: HTML = change.expiresAt.map { " · expires \(ConsoleFormat.date($0))" } ?? .empty
                entries.append(
                    ConsoleTimelineEntry(
                        at: change.observedAt, kind: .state, purchase: key,
                        detail:
                            "\(from) → <strong>\(change.to.rawValue)</strong>\(expiry)<br><span class=\"muted\">\(source)</span>"
                    ))
            }
            for record in try await transaction.transactions(of: key) {
                let fact = record.fact
                entries.append(
                    ConsoleTimelineEntry(
                        at: fact.purchasedAt, kind: .billing, purchase: key,
                        detail: "<code>\(fact.id)</code> \(fact.productID) × \(fact.quantity)\(Self.priceNote(fact))"))
                if let revoked = fact.revokedAt {
                    let share = Int((fact.refundedFraction * 100).rounded())
                    entries.append(
                        ConsoleTimelineEntry(
                            at: revoked, kind: .refund, purchase: key,
                            detail: share > 0
                                ? "<code>\(fact.id)</code> refunded \(share)%"
                                : "<code>\(fact.id)</code> revoked, nothing refunded"))
                }
            }
            for transfer in try await transaction.transfers(of: key) {
                entries.append(
                    ConsoleTimelineEntry(
                        at: transfer.at, kind: .ownership, purchase: key,
                        detail: """
                            <a href="\(Self.customerPath(transfer.from))">\(transfer.from.rawValue)</a> → \
                            <a href="\(Self.customerPath(transfer.to))">\(transfer.to.rawValue)</a> \
                            <span class="muted">(policy \(transfer.policy.rawValue))</span>
                            """))
            }
            for action in try await transaction.consoleActions(target: Self.actionTarget(key)) {
                entries.append(
                    ConsoleTimelineEntry(
                        at: action.at, kind: .action, purchase: key,
                        detail:
                            "\(action.action) by <strong>\(action.operatorName)</strong> (\(action.detail)): \(action.outcome)"
                    ))
            }
        }
        if let customer {
            for request in try await transaction.refundRequests(of: customer) {
                entries.append(
                    ConsoleTimelineEntry(
                        at: request.updatedAt, kind: .consumption, purchase: request.purchaseKey,
                        detail: Self.consumptionDetail(request)))
            }
            // The customer's latest events (numbered by the feed or not yet); a long history is cut.
            let events = try await transaction.recentEvents(of: customer, limit: Self.timelineEventLimit)
            for event in events {
                let position: HTML = event.position.map { " <span class=\"muted\">#\($0)</span>" } ?? .empty
                entries.append(
                    ConsoleTimelineEntry(
                        at: event.occurredAt, kind: .event, purchase: nil,
                        detail: "<code>\(event.type.rawValue)</code>\(position)"))
            }
            // The latest balance changes only, as with events: a coin buyer's ledger runs to thousands.
            for entry in try await transaction.ledgerEntries(of: customer).suffix(Self.timelineLedgerLimit) {
                let sign = entry.amount >= 0 ? "+" : ""
                let reference: HTML = entry.transactionID.map { " · <code>\($0)</code>" } ?? .empty
                entries.append(
                    ConsoleTimelineEntry(
                        at: entry.createdAt, kind: .balance, purchase: nil,
                        detail:
                            "\(entry.balance) \(sign)\(entry.amount) <span class=\"muted\">\(entry.reason.rawValue)</span>\(reference)"
                    ))
            }
        }
        return entries.sorted { $0.at > $1.at }
    }

    static let timelineEventLimit = 200
    static let timelineLedgerLimit = 200

    /// A consumption request: the transaction it was about, how it was settled, and the values
    /// sent to Apple (or why none were).
    static func consumptionDetail(_ request: RefundRequest) -> HTML {
        var parts: [HTML] = [
            "<code>\(request.transactionID)</code> \(request.reason ?? "") → <strong>\(request.status.rawValue)</strong>"
        ]
        if let answer = request.answer {
            let consumed = answer.consumptionMilliPercent.map { "\(Double($0) / 1_000)%" } ?? "—"
            parts.append(
                """
                sent: consented \(answer.customerConsented ? "yes" : "no"), consumed \(consumed), delivery \(answer.deliveryStatus.rawValue), \
                refund preference \(answer.refundPreference?.rawValue ?? "—"), sample content \(answer.sampleContentProvided ? "yes" : "no")
                """)
        }
        if let skip = request.skipReason { parts.append("not sent: \(skip.rawValue)") }
        if let code = request.storeErrorCode { parts.append("store error \(code)") }
        if let error = request.lastError { parts.append("<span class=\"muted\">\(error)</span>") }
        return HTML.joined(parts.enumerated().map { $0.offset == 0 ? $0.element : " · \($0.element)" })
    }

    /// A billing event's price and offer as its store reported them (or that it reported none).
    static func priceNote(_ fact: TransactionFact) -> HTML {
        let price: HTML =
            fact.price.map {
                " · <span class=\"price\">\($0.currency.rawValue) \(ConsoleFormat.amount($0.micros))</span>"
            }
            ?? " · <span class=\"muted\">no price reported</span>"
        let offer: HTML =
            switch fact.offer {
            case .freeTrial?: " · <span class=\"trial\">free trial</span>"
            case .introductory?: " · introductory offer"
            case .other?: " · offer"
            case nil: .empty
            }
        return "\(price)\(offer)"
    }

    func timelineTable(_ entries: [ConsoleTimelineEntry]) -> HTML {
        let rows = entries.map { entry -> HTML in
            let purchase: HTML =
                entry.purchase.map { "<a href=\"\(Self.purchasePath($0))\"><code>\($0.id)</code></a>" } ?? "—"
            return """
                <tr class="\(entry.kind.rawValue.replacingOccurrences(of: " ", with: "-"))"><td>\(ConsoleFormat.date(entry.at))</td><td>\(entry.kind.rawValue)</td><td>\(purchase)</td><td>\(entry.detail)</td></tr>
                """
        }
        return ConsolePages.table(
            ["when", "what", "purchase", "detail"], rows, empty: "Nothing recorded yet.", id: "timeline")
    }

    /// How an operator's action on a purchase is filed, to be read back with the purchase.
    static func actionTarget(_ key: PurchaseKey) -> String { "purchase:\(key.store.rawValue):\(key.id)" }

    static func notificationPath(_ store: Store, _ key: String) -> String {
        "/console/notifications/\(store.pathSegment)/\(ConsoleFormat.component(key))"
    }
}
