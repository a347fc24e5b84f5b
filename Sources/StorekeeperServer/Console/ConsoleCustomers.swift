import AppStoreServer
import Foundation
import Hummingbird
import Storekeeper
import StorekeeperStorage

/// The kinds of id an operator can search by.
enum ConsoleSearchKind: String, Sendable, CaseIterable {
    case any
    case customer
    case appAccountToken
    case appStoreOriginalTransaction
    case appStoreTransaction
    case appStoreOrder
    case googleOrder
    case googlePurchaseToken

    var label: String {
        switch self {
        case .any: "Any id"
        case .customer: "Customer id"
        case .appAccountToken: "appAccountToken"
        case .appStoreOriginalTransaction: "App Store original transaction id"
        case .appStoreTransaction: "App Store transaction id"
        case .appStoreOrder: "App Store order id (receipt e-mail)"
        case .googleOrder: "Google Play order id"
        case .googlePurchaseToken: "Google Play purchase token"
        }
    }
}

/// What a search found: a customer, or a purchase (possibly not linked to anyone).
struct ConsoleSearchMatch: Sendable, Hashable {
    var how: String
    var customer: CustomerID?
    var purchase: PurchaseKey?
}

extension Console {
    // MARK: Search

    func search(_ request: Request, _ session: ConsoleSession) async throws -> Response {
        // A form sends a space as `+` (and a `+` as %2B); the router decoded only the %XX.
        let query = (request.uri.queryParameters.get("q") ?? "").replacingOccurrences(of: "+", with: " ")
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let kind = ConsoleSearchKind(rawValue: request.uri.queryParameters.get("kind") ?? "") ?? .any
        var matches: [ConsoleSearchMatch] = []
        var notes: [String] = []
        if !query.isEmpty {
            (matches, notes) = try await find(query, kind: kind)
            let customers = Set(matches.compactMap(\.customer))
            if customers.count == 1, let only = customers.first,
                matches.allSatisfy({ $0.customer == only })
            {
                return Self.redirect(Self.customerPath(only))
            }
        }
        let options = ConsoleSearchKind.allCases.map { option in
            "<option value=\"\(option.rawValue)\"\(option == kind ? " selected" : "")>\(option.label)</option>" as HTML
        }
        let rows = matches.map { match -> HTML in
            let customer: HTML =
                match.customer.map {
                    "<a href=\"\(Self.customerPath($0))\">\($0.rawValue)</a>"
                } ?? "<span class=\"muted\">not linked to a customer</span>"
            let purchase: HTML =
                match.purchase.map {
                    "<a href=\"\(Self.purchasePath($0))\">\($0.store.rawValue) \($0.id)</a>"
                } ?? "—"
            return "<tr><td>\(match.how)</td><td>\(customer)</td><td>\(purchase)</td></tr>"
        }
        let results: HTML =
            query.isEmpty
            ? .empty
            : """
            <h2>Results for “\(query)”</h2>
            \(HTML.joined(notes.map { "<p class=\"muted\">\($0)</p>" }))
            \(ConsolePages.table(["found as", "customer", "purchase"], rows, empty: "Nothing matches.", id: "results"))
            """
        return html(
            ConsolePages.layout(
                title: "Customers", session: session,
                """
                <form method="get" action="/console/customers" class="card row" id="search">
                  <label>Id <input name="q" id="q" value="\(query)" size="48" required></label>
                  <label>Kind <select name="kind" id="kind">\(options)</select></label>
                  <button type="submit">Search</button>
                </form>
                \(results)
                """), status: .ok)
    }

    /// Looks `query` up as `kind` (every local kind for `any`; Apple's Look Up Order ID when
    /// asked, or when nothing local matched).
    func find(_ query: String, kind: ConsoleSearchKind) async throws -> ([ConsoleSearchMatch], [String]) {
        var matches: [ConsoleSearchMatch] = try await storage.transaction { transaction in
            var found: [ConsoleSearchMatch] = []
            func wants(_ candidate: ConsoleSearchKind) -> Bool { kind == .any || kind == candidate }
            if wants(.customer), CustomerID.problem(with: query) == nil,
                let customer = try await transaction.customer(CustomerID(query))
            {
                found.append(ConsoleSearchMatch(how: "customer id", customer: customer.id))
            }
            if wants(.appAccountToken), let token = UUID(uuidString: query),
                let customer = try await transaction.customer(appAccountToken: token)
            {
                found.append(ConsoleSearchMatch(how: "appAccountToken", customer: customer.id))
            }
            if wants(.appStoreOriginalTransaction) || wants(.googlePurchaseToken) {
                for purchase in try await transaction.purchases(storeID: query) {
                    let how: ConsoleSearchKind =
                        purchase.key.store == .appStore ? .appStoreOriginalTransaction : .googlePurchaseToken
                    guard wants(how) else { continue }
                    found.append(
                        ConsoleSearchMatch(how: how.label, customer: purchase.customerID, purchase: purchase.key))
                }
            }
            if wants(.appStoreTransaction) || wants(.googleOrder) {
                for record in try await transaction.transactions(storeID: query) {
                    let how: ConsoleSearchKind =
                        record.purchaseKey.store == .appStore ? .appStoreTransaction : .googleOrder
                    guard wants(how) else { continue }
                    let owner = try await transaction.purchases(storeID: record.purchaseKey.id)
                        .first { $0.key == record.purchaseKey }?.customerID
                    found.append(ConsoleSearchMatch(how: how.label, customer: owner, purchase: record.purchaseKey))
                }
            }
            return found
        }
        var notes: [String] = []
        if kind == .appStoreOrder || (kind == .any && matches.isEmpty) {
            let (ordered, orderNotes) = try await lookUpOrder(query)
            matches += ordered
            notes += orderNotes
        }
        return (matches, notes)
    }

    /// Apple's Look Up Order ID with every App Store app and environment that has an API key; the
    /// transactions found are looked up here by their original transaction id.
    func lookUpOrder(_ orderID: String) async throws -> ([ConsoleSearchMatch], [String]) {
        guard let adapter = stores(.appStore) as? AppStoreAdapter else { return ([], []) }
        var originals: Set<String> = []
        var notes: [String] = []
        for app in adapter.apps.apps {
            for (environment, client) in app.clients.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                do {
                    let (status, transactions) = try await client.lookUpOrderId(orderID)
                    if status == .valid {
                        originals.formUnion(transactions.compactMap(\.originalTransactionId))
                    }
                } catch {
                    notes.append("Look Up Order ID with \(app.name) (\(environment.rawValue)) failed: \(error)")
                }
            }
        }
        guard !originals.isEmpty else { return ([], notes) }
        let wanted = originals
        let matches = try await storage.transaction { transaction in
            var found: [ConsoleSearchMatch] = []
            for original in wanted.sorted() {
                for purchase in try await transaction.purchases(storeID: original) where purchase.key.store == .appStore
                {
                    found.append(
                        ConsoleSearchMatch(
                            how: ConsoleSearchKind.appStoreOrder.label, customer: purchase.customerID,
                            purchase: purchase.key))
                }
            }
            return found
        }
        if matches.isEmpty {
            notes.append(
                "Apple knows order \(orderID) (original transactions \(originals.sorted().joined(separator: ", "))), "
                    + "but no purchase with those ids is stored here.")
        }
        return (matches, notes)
    }

    static func purchasePath(_ key: PurchaseKey) -> String {
        "/console/purchases/\(key.store.pathSegment)/\(ConsoleFormat.component(key.id))"
    }

    static func customerPath(_ id: CustomerID) -> String {
        "/console/customer?id=\(ConsoleFormat.component(id.rawValue))"
    }

    // MARK: Customer

    /// Purchases per page of a customer's page: its timeline costs a few reads per purchase, and a
    /// customer who buys coins may hold thousands.
    static let purchasesPerPage = 100

    /// The customer's view, a page of its purchases (after `after`, in key order) and the
    /// timeline of those purchases and of the customer.
    func customerPage(_ id: CustomerID, after: PurchaseKey?, limit: Int, _ session: ConsoleSession) async throws
        -> Response
    {
        guard CustomerID.problem(with: id.rawValue) == nil, let view = try await customers.view(of: id) else {
            return html(
                ConsolePages.layout(
                    title: "Customer not found", session: session,
                    "<p class=\"error\">No customer has the id “\(id.rawValue)”.</p><p><a href=\"/console/customers\">Search</a></p>"
                ), status: .notFound)
        }
        let (purchases, hasMore, timeline, trials) = try await storage.transaction { transaction in
            let found = try await transaction.purchases(of: id, after: after, limit: limit + 1)
            let purchases = Array(found.prefix(limit))
            let timeline = try await self.timeline(of: purchases, customer: id, in: transaction)
            return (
                purchases, found.count > limit, timeline, try await Self.trials(among: purchases, in: transaction)
            )
        }
        var pages: [HTML] = []
        if after != nil {
            pages.append("<a href=\"\(Self.customerPath(id))\" id=\"first-purchases\">First purchases</a> ")
        }
        if hasMore, let last = purchases.last {
            let next = "\(Self.customerPath(id))&after=\(PurchaseCursor(last.key).text)"
            pages.append("<a href=\"\(next)\" id=\"next-purchases\">Next purchases →</a>")
        }
        let paging: HTML = pages.isEmpty ? .empty : "<p class=\"pages\">\(HTML.joined(pages))</p>"
        let entitlements = view.entitlements.map { entitlement -> HTML in
            """
            <tr><td>\(entitlement.name)</td><td class="\(entitlement.active ? "active" : "inactive")">\(entitlement.active ? "yes" : "no")</td>
            <td>\(ConsoleFormat.date(entitlement.expiresAt))</td><td>\(entitlement.productID)</td>
            <td>\(entitlement.store.rawValue)</td><td>\(entitlement.state.rawValue)</td></tr>
            """
        }
        let balances = view.balances.sorted { $0.key < $1.key }.map { name, amount -> HTML in
            "<tr><td>\(name)</td><td>\(amount)</td></tr>"
        }
        let body: HTML = """
            <section class="card" id="customer">
              <div>Customer id: <code id="customer-id">\(view.customerID.rawValue)</code></div>
              <div>appAccountToken: <code>\(view.appAccountToken.uuidString.lowercased())</code></div>
              <div class="muted">as of \(ConsoleFormat.date(view.asOf))</div>
            </section>
            <h2>Entitlements now</h2>
            \(ConsolePages.table(["entitlement", "active", "until", "product", "store", "state"], entitlements, empty: "No entitlements.", id: "entitlements"))
            <h2>Balances</h2>
            \(ConsolePages.table(["balance", "amount"], balances, empty: "No balances.", id: "balances"))
            <h2>Purchases</h2>
            \(purchaseTable(purchases, trials: trials, session: session))
            \(paging)
            <h2>Timeline</h2>
            \(timelineTable(timeline))
            """
        return html(
            ConsolePages.layout(title: "Customer \(view.customerID.rawValue)", session: session, body), status: .ok)
    }

    func purchasePage(_ key: PurchaseKey, _ session: ConsoleSession) async throws -> Response {
        let found = try await storage.transaction {
            transaction -> (Purchase, [ConsoleTimelineEntry], Set<PurchaseKey>)? in
            guard let purchase = try await transaction.purchases(storeID: key.id).first(where: { $0.key == key }) else {
                return nil
            }
            return (
                purchase, try await self.timeline(of: [purchase], customer: nil, in: transaction),
                try await Self.trials(among: [purchase], in: transaction)
            )
        }
        guard let (purchase, timeline, trials) = found else {
            return html(
                ConsolePages.layout(
                    title: "Purchase not found", session: session,
                    "<p class=\"error\">No \(key.store.rawValue) purchase has the id “\(key.id)”.</p>"),
                status: .notFound)
        }
        let owner: HTML =
            purchase.customerID.map { "Customer: <a href=\"\(Self.customerPath($0))\">\($0.rawValue)</a>" }
            ?? "<span class=\"muted\">Not linked to a customer.</span>"
        return html(
            ConsolePages.layout(
                title: "Purchase \(key.id)", session: session,
                """
                <p>\(owner)</p>
                \(purchaseTable([purchase], trials: trials, session: session))
                <h2>Timeline</h2>
                \(timelineTable(timeline))
                """), status: .ok)
    }

    /// The subscriptions among `purchases` in a free trial: granting access (active or canceled)
    /// with a free trial as their latest billing event. A trial grants access like any active
    /// subscription; the console only names it.
    static func trials(among purchases: [Purchase], in transaction: any StorageTransaction) async throws
        -> Set<PurchaseKey>
    {
        var trials = Set<PurchaseKey>()
        for purchase in purchases where purchase.kind == .subscription && [.active, .canceled].contains(purchase.state)
        {
            let latest = try await transaction.transactions(of: purchase.key).max {
                $0.fact.purchasedAt < $1.fact.purchasedAt
            }
            if latest?.fact.offer == .freeTrial { trials.insert(purchase.key) }
        }
        return trials
    }

    func purchaseTable(_ purchases: [Purchase], trials: Set<PurchaseKey>, session: ConsoleSession) -> HTML {
        let now = clock.now()
        let rows = purchases.map { purchase -> HTML in
            var actions: [HTML] = []
            if session.canAct {
                let path = Self.purchasePath(purchase.key)
                if purchase.key.store == .appStore && purchase.kind == .subscription {
                    actions.append(
                        """
                        <form method="post" action="\(path)/extend" class="inline extend">\(ConsolePages.csrfField(session))
                        <input name="days" type="number" min="1" max="90" value="7" aria-label="days">
                        <select name="reason" aria-label="reason"><option value="1">customer satisfaction</option><option value="3">service issue</option><option value="2">other</option><option value="0">undeclared</option></select>
                        <button type="submit">Extend renewal date</button></form>
                        """)
                }
                actions.append(ConsolePages.button("Refresh from store", action: "\(path)/refresh", session: session))
            }
            let trialMark: HTML = trials.contains(purchase.key) ? " <span class=\"trial\">(trial)</span>" : .empty
            return """
                <tr><td>\(purchase.key.store.rawValue)</td><td><a href="\(Self.purchasePath(purchase.key))"><code>\(purchase.key.id)</code></a></td>
                <td>\(purchase.app?.rawValue ?? "—")</td><td>\(purchase.environment.rawValue)</td><td>\(purchase.productID)\(purchase.basePlanID.map { " (\($0))" } ?? "")</td>
                <td>\(purchase.kind.rawValue)</td><td class="\(purchase.grantsAccess(at: now) ? "active" : "inactive")">\(purchase.state.rawValue)\(trialMark)</td>
                <td>\(ConsoleFormat.date(purchase.expiresAt))</td><td>\(purchase.autoRenew.map { $0 ? "on" : "off" } ?? "—")</td>
                <td>\(purchase.ownership.rawValue)</td><td>\(actions)</td></tr>
                """
        }
        return ConsolePages.table(
            [
                "store", "id", "app", "environment", "product", "kind", "state", "expires", "auto-renew", "ownership",
                "",
            ],
            rows, empty: "No purchases.", id: "purchases")
    }
}
