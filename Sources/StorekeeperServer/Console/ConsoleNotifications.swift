import Foundation
import Hummingbird
import StoreCore
import Storekeeper
import StorekeeperStorage

extension Console {
    static let notificationPageSize = 100

    /// The inbox by status: failed (oldest first, with their last error) and pending are what an
    /// operator acts on; processed ones newest first.
    func notificationsPage(_ request: Request, _ session: ConsoleSession) async throws -> Response {
        let status =
            InboxNotification.Status(rawValue: request.uri.queryParameters.get("status") ?? "") ?? .failed
        // Processed ones are paged backwards from the previous page's last one.
        let query = request.uri.queryParameters
        var after: InboxPosition?
        if let milliseconds = query.get("before").flatMap(Int64.init),
            let store = query.get("beforeStore").flatMap(Store.init(pathSegment:)), let key = query.get("beforeKey")
        {
            after = InboxPosition(
                receivedAt: Date(timeIntervalSince1970: Double(milliseconds) / 1000), store: store, dedupeKey: key)
        }
        let position = after
        let found = try await storage.transaction { transaction in
            switch status {
            case .processed:
                try await transaction.recentNotifications(
                    status: status, after: position, limit: Self.notificationPageSize)
            case .pending, .failed:
                try await transaction.notifications(status: status, limit: Self.notificationPageSize)
            }
        }
        let tabs = InboxNotification.Status.allCases.map { candidate -> HTML in
            "<a href=\"/console/notifications?status=\(candidate.rawValue)\"\(candidate == status ? " class=\"current\"" as HTML : .empty)>\(candidate.rawValue)</a>"
        }
        let rows = found.map { notification -> HTML in
            let retry: HTML =
                session.canAct && notification.status != .processed
                ? ConsolePages.button(
                    "Retry now", action: "\(Self.notificationPath(notification.store, notification.dedupeKey))/retry",
                    session: session)
                : .empty
            return """
                <tr><td>\(notification.store.rawValue)</td>
                <td><a href="\(Self.notificationPath(notification.store, notification.dedupeKey))"><code>\(notification.dedupeKey)</code></a></td>
                <td>\(ConsoleFormat.date(notification.receivedAt))</td><td>\(notification.attempts)</td>
                <td>\(ConsoleFormat.date(notification.nextAttemptAt))</td><td class="error">\(notification.lastError ?? "")</td><td>\(retry)</td></tr>
                """
        }
        var older: HTML = .empty
        if status == .processed, found.count == Self.notificationPageSize, let last = found.last {
            let milliseconds = Int((last.receivedAt.timeIntervalSince1970 * 1000).rounded())
            let next =
                "/console/notifications?status=processed&before=\(milliseconds)&beforeStore=\(last.store.pathSegment)"
                + "&beforeKey=\(ConsoleFormat.component(last.dedupeKey))"
            older = "<p><a href=\"\(next)\" id=\"older\">Older →</a></p>"
        }
        return html(
            ConsolePages.layout(
                title: "Notifications", session: session,
                """
                <p class="tabs">\(tabs)</p>
                \(ConsolePages.table(["store", "notification", "received", "attempts", "next attempt", "last error", ""], rows, empty: "No \(status.rawValue) notifications.", id: "notifications"))
                \(older)
                """), status: .ok)
    }

    func notificationPage(_ store: Store, key: String, _ session: ConsoleSession) async throws -> Response {
        let found = try await storage.transaction { transaction -> (InboxNotification, [ConsoleAction])? in
            guard let notification = try await transaction.notification(store: store, dedupeKey: key) else {
                return nil
            }
            return (notification, try await transaction.consoleActions(target: Self.actionTarget(store, key)))
        }
        guard let (notification, actions) = found else {
            return html(
                ConsolePages.layout(
                    title: "Notification not found", session: session,
                    "<p class=\"error\">No \(store.rawValue) notification has the key “\(key)”. Processed notifications are deleted after <code>retention.notifications</code> (30 days by default).</p>"
                ), status: .notFound
            )
        }
        let retry: HTML =
            session.canAct && notification.status != .processed
            ? ConsolePages.button("Retry now", action: "\(Self.notificationPath(store, key))/retry", session: session)
            : .empty
        let actionRows = actions.map { action -> HTML in
            "<tr><td>\(ConsoleFormat.date(action.at))</td><td>\(action.operatorName)</td><td>\(action.action)</td><td>\(action.outcome)</td></tr>"
        }
        return html(
            ConsolePages.layout(
                title: "Notification \(key)", session: session,
                """
                <section class="card">
                  <div>Store: \(store.rawValue)</div>
                  <div>Status: <strong id="status">\(notification.status.rawValue)</strong> after \(notification.attempts) attempt(s)</div>
                  <div>Received: \(ConsoleFormat.date(notification.receivedAt)) · processed: \(ConsoleFormat.date(notification.processedAt)) · next attempt: \(ConsoleFormat.date(notification.nextAttemptAt))</div>
                  <div class="error">\(notification.lastError ?? "")</div>
                  \(retry)
                </section>
                <h2>Payload</h2>
                <details open id="payload"><summary>Decoded (signed parts decoded; verified when it arrived)</summary><pre>\(NotificationPayloadText.decoded(notification))</pre></details>
                <details><summary>As received</summary><pre>\(String(decoding: notification.body, as: UTF8.self))</pre></details>
                <h2>Operator actions</h2>
                \(ConsolePages.table(["when", "operator", "action", "outcome"], actionRows, empty: "None."))
                """), status: .ok)
    }

    /// Makes a failed (or pending) notification due now and wakes the worker; recorded.
    func retry(_ store: Store, key: String, _ session: ConsoleSession) async throws -> Response {
        let now = clock.now()
        let target = Self.actionTarget(store, key)
        let operatorName = session.operatorName
        let outcome = try await storage.transaction { transaction -> String? in
            guard var notification = try await transaction.notification(store: store, dedupeKey: key) else {
                return nil
            }
            let outcome: String
            if notification.status == .processed {
                outcome = "already processed: nothing to retry"
            } else {
                notification.nextAttemptAt = now
                try await transaction.updateNotification(notification)
                outcome =
                    "scheduled now (was \(notification.status.rawValue) after \(notification.attempts) attempt(s))"
            }
            try await transaction.appendConsoleAction(
                ConsoleAction(
                    operatorName: operatorName, action: "retry-notification", target: target, detail: "",
                    outcome: outcome,
                    at: now))
            return outcome
        }
        guard outcome != nil else {
            return html(ConsolePages.refusal("No such notification.", session: session), status: .notFound)
        }
        logger.info(
            "console: notification retry",
            metadata: ["operator": "\(operatorName)", "notification": "\(store.rawValue)/\(key)"])
        wake()
        return Self.redirect(Self.notificationPath(store, key))
    }

    static func actionTarget(_ store: Store, _ key: String) -> String { "notification:\(store.rawValue):\(key)" }
}

/// A stored notification as a person reads it: JSON, pretty-printed, with every signed part (a
/// JWS) replaced by its decoded payload and Pub/Sub's base64 `data` decoded. Display only: it was
/// verified when it arrived.
enum NotificationPayloadText {
    static func decoded(_ notification: InboxNotification) -> String {
        guard let object = try? JSONSerialization.jsonObject(with: notification.body, options: [.fragmentsAllowed])
        else { return String(decoding: notification.body, as: UTF8.self) }
        let expanded = expand(object, key: nil)
        guard
            let data = try? JSONSerialization.data(
                withJSONObject: expanded,
                options: [.prettyPrinted, .sortedKeys, .fragmentsAllowed, .withoutEscapingSlashes])
        else { return String(decoding: notification.body, as: UTF8.self) }
        return String(decoding: data, as: UTF8.self)
    }

    static func expand(_ value: Any, key: String?) -> Any {
        switch value {
        case let dictionary as [String: Any]:
            return dictionary.reduce(into: [String: Any]()) { result, pair in
                result[pair.key] = expand(pair.value, key: pair.key)
            }
        case let array as [Any]:
            return array.map { expand($0, key: nil) }
        case let text as String:
            if let payload = jwsPayload(text) { return expand(payload, key: nil) }
            // Pub/Sub carries the developer notification as base64 in `message.data`.
            if key == "data", let data = Data(base64Encoded: text),
                let object = try? JSONSerialization.jsonObject(with: data)
            {
                return expand(object, key: nil)
            }
            return text
        default:
            return value
        }
    }

    /// The payload of a compact JWS (`header.payload.signature`, the header a JSON object).
    static func jwsPayload(_ text: String) -> Any? {
        guard text.hasPrefix("eyJ") else { return nil }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let data = Base64URL.decode(parts[1]) else { return nil }
        return try? JSONSerialization.jsonObject(with: data)
    }
}
