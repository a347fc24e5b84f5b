import AppStoreServer
import Foundation
import Hummingbird
import Storekeeper
import StorekeeperStorage

/// The operators' actions on the stores: each confirmed on a page of its own, then done, then
/// recorded (who, what, to what, with what outcome) whatever the store answered.
extension Console {
    var appStore: AppStoreAdapter? { stores(.appStore) as? AppStoreAdapter }

    func record(_ session: ConsoleSession, _ action: String, target: String, detail: String, outcome: String)
        async throws
    {
        let entry = ConsoleAction(
            operatorName: session.operatorName, action: action, target: target, detail: detail, outcome: outcome,
            at: clock.now())
        try await storage.transaction { try await $0.appendConsoleAction(entry) }
        logger.info(
            "console action",
            metadata: ["operator": "\(session.operatorName)", "action": "\(action)", "target": "\(target)"])
    }

    /// What a store call returned, or its failure in words for the log (the API's own sentence).
    func attempt<Value: Sendable>(_ call: () async throws -> Value) async -> (value: Value?, failure: String?) {
        do {
            return (try await call(), nil)
        } catch {
            let mapped = (AppStoreAdapter.translateStoreError(error)) ?? ErrorMapping.serverError(for: error)
            return (nil, "failed: \(mapped.code.rawValue): \(mapped.message)")
        }
    }

    func storedPurchase(_ key: PurchaseKey) async throws -> Purchase {
        guard
            let purchase = try await storage.transaction({ try await $0.purchases(storeID: key.id) })
                .first(where: { $0.key == key })
        else { throw ServerError(.purchaseNotFound, "no \(key.store.rawValue) purchase \(key.id) is stored") }
        return purchase
    }

    // MARK: Extend one renewal date

    func extend(_ key: PurchaseKey, _ session: ConsoleSession, _ form: ConsoleForm) async throws -> Response {
        let purchase = try await storedPurchase(key)
        guard key.store == .appStore, purchase.kind == .subscription, let app = purchase.app else {
            throw ServerError(.invalidQuery, "only App Store subscriptions with a known app can be extended")
        }
        guard let days = Int(form["days"] ?? ""), (1...90).contains(days) else {
            throw ServerError(.invalidQuery, "days must be 1 to 90 (Apple's limit)")
        }
        guard let reason = Int32(form["reason"] ?? ""), (0...3).contains(reason) else {
            throw ServerError(.invalidQuery, "reason must be 0 to 3")
        }
        let path = Self.purchasePath(key)
        let back = purchase.customerID.map(Self.customerPath) ?? path
        guard form["confirm"] == "yes" else {
            return html(
                ConsolePages.confirm(
                    title: "Extend a renewal date",
                    question:
                        "Extend the renewal date of App Store subscription \(key.id) (\(purchase.productID), \(app.rawValue), \(purchase.environment.rawValue)) by \(days) day(s)? Apple allows two extensions a year per subscription.",
                    action: "\(path)/extend", fields: [("days", String(days)), ("reason", String(reason))],
                    cancel: back, session: session),
                status: .ok)
        }
        guard let adapter = appStore else { throw ServerError(.notConfigured, "no App Store adapter") }
        let client = try adapter.apps.client(app, purchase.environment)
        let request = ExtendRenewalDateRequest(
            extendByDays: Int32(days), extendReasonCode: ExtendReasonCode(rawValue: reason),
            requestIdentifier: UUID().uuidString.lowercased())
        let (response, failure) = await attempt {
            try await client.extendSubscriptionRenewalDate(originalTransactionId: key.id, request)
        }
        let outcome =
            failure
            ?? (response?.success == true
                ? "extended; effective \(ConsoleFormat.date(response?.effectiveDate))"
                : "Apple did not extend it (success false)")
        try await record(
            session, "extend-renewal-date", target: Self.actionTarget(key), detail: "\(days) day(s), reason \(reason)",
            outcome: outcome)
        return Self.redirect(back)
    }

    // MARK: Refresh from the store

    func refresh(_ key: PurchaseKey, _ session: ConsoleSession, _ form: ConsoleForm) async throws -> Response {
        let purchase = try await storedPurchase(key)
        let path = Self.purchasePath(key)
        let back = purchase.customerID.map(Self.customerPath) ?? path
        guard form["confirm"] == "yes" else {
            return html(
                ConsolePages.confirm(
                    title: "Refresh a purchase",
                    question:
                        "Ask \(key.store.rawValue) for the current state of purchase \(key.id) and record it now?",
                    action: "\(path)/refresh", fields: [], cancel: back, session: session),
                status: .ok)
        }
        let adapter = stores(key.store)
        let recorder = self.recorder
        let cause = ChangeCause(source: .refresh, event: "console", reference: session.operatorName)
        let now = clock.now()
        let (recorded, failure) = await attempt {
            let fact = try await adapter.currentFact(of: purchase)
            return try await storage.transaction { transaction -> String in
                try await transaction.markRefreshed(key, at: now)
                guard let fact else { return "the store has nothing newer" }
                let recorded = try await recorder.record(fact, cause: cause, in: transaction)
                return recorded.applied
                    ? "recorded: \(recorded.purchase.state.rawValue), expires \(ConsoleFormat.date(recorded.purchase.expiresAt))"
                    : "unchanged: what is stored is as new"
            }
        }
        let outcome = failure ?? recorded ?? ""
        try await record(session, "refresh-purchase", target: Self.actionTarget(key), detail: "", outcome: outcome)
        return Self.redirect(back)
    }

    // MARK: Test notification

    func requestTestNotification(_ session: ConsoleSession, _ form: ConsoleForm) async throws -> Response {
        let (app, environment) = try appAndEnvironment(form)
        guard form["confirm"] == "yes" else {
            return html(
                ConsolePages.confirm(
                    title: "Request a test notification",
                    question:
                        "Ask the App Store to send a TEST notification for \(app.rawValue) (\(environment.rawValue))?",
                    action: "/console/test-notifications",
                    fields: [("app", app.rawValue), ("environment", environment.rawValue)], cancel: "/console/actions",
                    session: session),
                status: .ok)
        }
        let client = try appStoreClient(app, environment)
        let (token, failure) = await attempt { try await client.requestTestNotification() }
        let outcome = failure ?? "requested"
        let statusPath = token.map {
            "/console/test-notifications/\(ConsoleFormat.component(app.rawValue))/\(environment.rawValue)/\(ConsoleFormat.component($0))"
        }
        try await record(
            session, "request-test-notification", target: statusPath ?? "app:\(app.rawValue):\(environment.rawValue)",
            detail: "\(app.rawValue) \(environment.rawValue)", outcome: outcome)
        return Self.redirect(statusPath ?? "/console/actions")
    }

    func testNotificationPage(app: AppID, environment: PurchaseEnvironment, token: String, _ session: ConsoleSession)
        async throws -> Response
    {
        let client = try appStoreClient(app, environment)
        let (status, failure) = await attempt { try await client.getTestNotificationStatus(token: token) }
        var body: HTML = "<p class=\"error\">\(failure ?? "")</p>"
        if let status {
            let uuid = status.notification.payload.notificationUUID ?? ""
            let stored = try await storage.transaction {
                try await $0.notification(store: .appStore, dedupeKey: uuid)
            }
            let attempts = status.sendAttempts.map { attempt -> HTML in
                "<tr><td>\(ConsoleFormat.date(attempt.attemptDate))</td><td>\(attempt.sendAttemptResult?.rawValue ?? "—")</td></tr>"
            }
            let arrival: HTML =
                stored.map {
                    "Received here \(ConsoleFormat.date($0.receivedAt)), <a href=\"\(Self.notificationPath(.appStore, uuid))\">\($0.status.rawValue)</a>."
                } ?? "<span class=\"error\">Not received here (yet).</span>"
            body = """
                <section class="card" id="test-notification">
                  <div>Notification <code>\(uuid)</code></div>
                  <div id="arrival">\(arrival)</div>
                </section>
                <h2>Apple's delivery attempts</h2>
                \(ConsolePages.table(["when", "result"], attempts, empty: "No attempt yet.", id: "attempts"))
                """
        }
        return html(ConsolePages.layout(title: "Test notification", session: session, body), status: .ok)
    }

    // MARK: Mass extension

    func massExtend(_ session: ConsoleSession, _ form: ConsoleForm) async throws -> Response {
        let (app, environment) = try appAndEnvironment(form)
        let product = (form["product"] ?? "").trimmingCharacters(in: .whitespaces)
        guard !product.isEmpty else { throw ServerError(.invalidQuery, "name the product to extend") }
        guard let days = Int(form["days"] ?? ""), (1...90).contains(days) else {
            throw ServerError(.invalidQuery, "days must be 1 to 90 (Apple's limit)")
        }
        guard let reason = Int32(form["reason"] ?? ""), (0...3).contains(reason) else {
            throw ServerError(.invalidQuery, "reason must be 0 to 3")
        }
        let storefronts = (form["storefronts"] ?? "").split(whereSeparator: { $0 == "," || $0 == " " })
            .map(String.init)
        guard form["confirm"] == "yes" else {
            return html(
                ConsolePages.confirm(
                    title: "Extend every active subscriber",
                    question:
                        "Extend the renewal date of every active subscriber of \(product) (\(app.rawValue), \(environment.rawValue)) by \(days) day(s)\(storefronts.isEmpty ? "" : " in \(storefronts.joined(separator: ", "))")?",
                    action: "/console/mass-extensions",
                    fields: [
                        ("app", app.rawValue), ("environment", environment.rawValue), ("product", product),
                        ("days", String(days)), ("reason", String(reason)),
                        ("storefronts", storefronts.joined(separator: ",")),
                    ], cancel: "/console/actions", session: session),
                status: .ok)
        }
        let client = try appStoreClient(app, environment)
        let requestID = UUID().uuidString.lowercased()
        let request = MassExtendRenewalDateRequest(
            extendByDays: Int32(days), extendReasonCode: ExtendReasonCode(rawValue: reason),
            requestIdentifier: requestID, storefrontCountryCodes: storefronts.isEmpty ? nil : storefronts,
            productId: product)
        let (answer, failure) = await attempt { try await client.extendRenewalDateForAllActiveSubscribers(request) }
        let outcome = failure ?? "requested"
        let statusPath =
            "/console/mass-extensions/\(ConsoleFormat.component(app.rawValue))/\(environment.rawValue)/\(ConsoleFormat.component(product))/\(ConsoleFormat.component(requestID))"
        try await record(
            session, "mass-extend-renewal-dates", target: answer == nil ? "app:\(app.rawValue)" : statusPath,
            detail: "\(product) \(environment.rawValue), \(days) day(s), reason \(reason)", outcome: outcome)
        return Self.redirect(answer == nil ? "/console/actions" : statusPath)
    }

    func massExtensionPage(
        app: AppID, environment: PurchaseEnvironment, product: String, request: String, _ session: ConsoleSession
    ) async throws -> Response {
        let client = try appStoreClient(app, environment)
        let (status, failure) = await attempt {
            try await client.getStatusOfSubscriptionRenewalDateExtensions(
                productId: product, requestIdentifier: request)
        }
        let body: HTML =
            status.map { status in
                """
                <section class="card" id="mass-extension">
                  <div>Request <code>\(request)</code> for \(product) (\(app.rawValue), \(environment.rawValue))</div>
                  <div>Complete: <strong id="complete">\(status.complete == true ? "yes" : "not yet")</strong> \(ConsoleFormat.date(status.completeDate))</div>
                  <div>Succeeded: \(Int(status.succeededCount ?? 0)) · failed: \(Int(status.failedCount ?? 0))</div>
                </section>
                """
            } ?? "<p class=\"error\">\(failure ?? "")</p>"
        return html(ConsolePages.layout(title: "Mass extension", session: session, body), status: .ok)
    }

    // MARK: The actions page

    func actionsPage(_ session: ConsoleSession) async throws -> Response {
        let actions = try await storage.transaction { try await $0.recentConsoleActions(limit: 200) }
        let rows = actions.map { action -> HTML in
            let target: HTML =
                action.target.hasPrefix("/console/") ? "<a href=\"\(action.target)\">status</a>" : "\(action.target)"
            return """
                <tr><td>\(ConsoleFormat.date(action.at))</td><td>\(action.operatorName)</td><td>\(action.action)</td>
                <td>\(target)</td><td>\(action.detail)</td><td>\(action.outcome)</td></tr>
                """
        }
        var forms: HTML = .empty
        if session.canAct, let adapter = appStore {
            let choices = adapter.apps.apps.flatMap { app in
                app.clients.keys.sorted { $0.rawValue < $1.rawValue }.map { environment in
                    "<option value=\"\(app.id.rawValue)|\(environment.rawValue)\">\(app.name): \(app.id.rawValue) (\(environment.rawValue))</option>"
                        as HTML
                }
            }
            if !choices.isEmpty {
                forms = """
                    <h2>App Store</h2>
                    <form method="post" action="/console/test-notifications" class="card row" id="test-notification-form">\(ConsolePages.csrfField(session))
                      <label>App <select name="target">\(choices)</select></label>
                      <button type="submit">Request a test notification</button>
                    </form>
                    <form method="post" action="/console/mass-extensions" class="card row" id="mass-extension-form">\(ConsolePages.csrfField(session))
                      <label>App <select name="target">\(choices)</select></label>
                      <label>Product <input name="product" required></label>
                      <label>Days <input name="days" type="number" min="1" max="90" value="3"></label>
                      <label>Reason <select name="reason"><option value="3">service issue</option><option value="1">customer satisfaction</option><option value="2">other</option><option value="0">undeclared</option></select></label>
                      <label>Storefronts <input name="storefronts" placeholder="all, or USA, FRA"></label>
                      <button type="submit">Extend every active subscriber</button>
                    </form>
                    """
            }
        }
        return html(
            ConsolePages.layout(
                title: "Actions", session: session,
                """
                \(forms)
                <h2>What operators did</h2>
                \(ConsolePages.table(["when", "operator", "action", "target", "detail", "outcome"], rows, empty: "No actions yet.", id: "actions"))
                """), status: .ok)
    }

    /// `target=<bundle id>|<environment>` (the actions page's select) or `app` and `environment`
    /// (a confirmation page's fields).
    func appAndEnvironment(_ form: ConsoleForm) throws -> (AppID, PurchaseEnvironment) {
        var app = form["app"] ?? ""
        var environment = form["environment"] ?? ""
        if let target = form["target"], let bar = target.lastIndex(of: "|") {
            app = String(target[..<bar])
            environment = String(target[target.index(after: bar)...])
        }
        guard let parsed = PurchaseEnvironment(rawValue: environment), !app.isEmpty else {
            throw ServerError(.invalidQuery, "choose an App Store app and environment")
        }
        return (AppID(app), parsed)
    }

    func appStoreClient(_ app: AppID, _ environment: PurchaseEnvironment) throws -> AppStoreServerAPIClient {
        guard let adapter = appStore else { throw ServerError(.notConfigured, "no App Store adapter") }
        return try adapter.apps.client(app, environment)
    }
}
