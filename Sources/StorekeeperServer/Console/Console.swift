import Foundation
import Hummingbird
import Logging
import NIOCore
import StoreCore
import Storekeeper
import StorekeeperStorage

/// The operators' console at `/console`: pages rendered here (HTML, CSS, SVG charts; no script
/// needed), behind a sign-in with the operators of the configuration. Every page needs a session;
/// every action (a POST) also needs the session's CSRF token and the `operator` role, is confirmed
/// on a page of its own first, and is recorded with who did it (`console_actions`).
final class Console: Sendable {
    let sessions: ConsoleSessions
    let settings: ConsoleSettings
    let storage: any Storage
    let customers: CustomerService
    let stores: StoreAdapters
    let recorder: PurchaseRecorder
    let clock: any WallClock
    let logger: Logger
    /// Wakes the notification worker (after a retry is scheduled).
    let wake: @Sendable () -> Void

    init(
        settings: ConsoleSettings, storage: any Storage, customers: CustomerService, stores: StoreAdapters,
        recorder: PurchaseRecorder, clock: any WallClock, logger: Logger,
        randomBytes: @escaping @Sendable (Int) -> [UInt8] = ConsoleSessions.systemRandomBytes,
        wake: @escaping @Sendable () -> Void
    ) {
        self.settings = settings
        sessions = ConsoleSessions(settings: settings, clock: clock, randomBytes: randomBytes)
        self.storage = storage
        self.customers = customers
        self.stores = stores
        self.recorder = recorder
        self.clock = clock
        self.logger = logger
        self.wake = wake
    }

    /// Paths answered without a session: the sign-in itself and the stylesheet it needs.
    static let publicPaths: Set<String> = ["/console/sign-in", "/console/assets/console.css"]

    func register(on router: Router<BasicRequestContext>) {
        let group = router.group("console")
        page(group, "/") { _, _, _ in Self.redirect("/console/overview") }
        group.get("assets/console.css") { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "text/css; charset=utf-8", .cacheControl: "max-age=3600"],
                body: .init(byteBuffer: ByteBuffer(string: ConsoleStyle.css)))
        }
        group.get("sign-in") { request, _ in
            if self.session(request) != nil { return Self.redirect("/console/overview") }
            return self.html(ConsolePages.signIn(message: nil), status: .ok)
        }
        group.post("sign-in") { request, _ in try await self.signIn(request) }
        action(group, "sign-out", requiresOperator: false) { request, _, session, _ in
            self.sessions.revoke(session)
            self.logger.info("console sign-out", metadata: ["operator": "\(session.operatorName)"])
            var response = Self.redirect("/console/sign-in")
            response.headers[.setCookie] = self.cookieHeader(value: "", maxAge: 0, request: request)
            return response
        }
        page(group, "overview") { request, _, session in try await self.overview(request, session) }
        page(group, "customers") { request, _, session in try await self.search(request, session) }
        page(group, "customer") { request, _, session in
            let query = request.uri.queryParameters
            return try await self.customerPage(
                CustomerID(query.get("id") ?? ""),
                after: try PurchaseCursor.key(after: query.get("after")),
                limit: try query.get("limit").map { text throws(ServerError) in try PageLimit.parse(text) }
                    ?? Self.purchasesPerPage, session)
        }
        page(group, "purchases/:store/:id") { _, context, session in
            try await self.purchasePage(try Self.purchaseKey(context), session)
        }
        page(group, "notifications") { request, _, session in try await self.notificationsPage(request, session) }
        page(group, "notifications/:store/:key") { _, context, session in
            try await self.notificationPage(
                try Self.store(context), key: Self.pathParameter(context, "key") ?? "", session)
        }
        page(group, "actions") { _, _, session in try await self.actionsPage(session) }
        page(group, "test-notifications/:app/:environment/:token") { _, context, session in
            try await self.testNotificationPage(
                app: AppID(Self.pathParameter(context, "app") ?? ""), environment: try Self.environment(context),
                token: Self.pathParameter(context, "token") ?? "", session)
        }
        page(group, "mass-extensions/:app/:environment/:product/:request") { _, context, session in
            try await self.massExtensionPage(
                app: AppID(Self.pathParameter(context, "app") ?? ""), environment: try Self.environment(context),
                product: Self.pathParameter(context, "product") ?? "",
                request: Self.pathParameter(context, "request") ?? "",
                session)
        }
        action(group, "notifications/:store/:key/retry") { _, context, session, _ in
            try await self.retry(try Self.store(context), key: Self.pathParameter(context, "key") ?? "", session)
        }
        action(group, "purchases/:store/:id/extend") { _, context, session, form in
            try await self.extend(try Self.purchaseKey(context), session, form)
        }
        action(group, "purchases/:store/:id/refresh") { _, context, session, form in
            try await self.refresh(try Self.purchaseKey(context), session, form)
        }
        action(group, "test-notifications") { _, _, session, form in
            try await self.requestTestNotification(session, form)
        }
        action(group, "mass-extensions") { _, _, session, form in try await self.massExtend(session, form) }
    }

    // MARK: Guards

    /// A page: a session is required, or the browser is sent to sign in (nothing else is shown).
    private func page(
        _ group: RouterGroup<BasicRequestContext>, _ path: RouterPath,
        _ body: @escaping @Sendable (Request, BasicRequestContext, ConsoleSession) async throws -> Response
    ) {
        group.get(path) { request, context in
            guard let session = self.session(request) else { return Self.redirect("/console/sign-in") }
            return await self.rendering(session) { try await body(request, context, session) }
        }
    }

    /// An action: a session, its CSRF token and (unless `requiresOperator` is false) the operator
    /// role are required; refused with a page saying which is missing.
    private func action(
        _ group: RouterGroup<BasicRequestContext>, _ path: RouterPath, requiresOperator: Bool = true,
        _ body: @escaping @Sendable (Request, BasicRequestContext, ConsoleSession, ConsoleForm) async throws -> Response
    ) {
        group.post(path) { request, context in
            guard let session = self.session(request) else {
                return self.html(ConsolePages.refusal("Sign in first.", session: nil), status: .unauthorized)
            }
            let form = try await ConsoleForm.read(request)
            guard self.sessions.checkCSRF(form["csrf"], for: session) else {
                self.logger.notice(
                    "console action without a valid CSRF token", metadata: ["operator": "\(session.operatorName)"])
                return self.html(
                    ConsolePages.refusal(
                        "This form is stale or did not come from the console (no valid CSRF token). Reload the page and try again.",
                        session: session),
                    status: .forbidden)
            }
            if requiresOperator && !session.canAct {
                return self.html(
                    ConsolePages.refusal("Your role is read-only: you can look but not act.", session: session),
                    status: .forbidden)
            }
            return await self.rendering(session) { try await body(request, context, session, form) }
        }
    }

    /// Runs a page's work; a failure becomes an error page naming what failed (never a stack or a
    /// secret: the same sentences the API gives).
    private func rendering(_ session: ConsoleSession, _ body: () async throws -> Response) async -> Response {
        do {
            return try await body()
        } catch {
            let mapped = ErrorMapping.serverError(for: error)
            logger.warning(
                "console page failed",
                metadata: ["error": "\(mapped.code.rawValue)", "operator": "\(session.operatorName)"])
            return html(
                ConsolePages.refusal("\(mapped.code.rawValue): \(mapped.message)", session: session),
                status: mapped.status)
        }
    }

    func session(_ request: Request) -> ConsoleSession? {
        guard let value = request.cookies[Self.cookieNameValue]?.value, !value.isEmpty else { return nil }
        return sessions.session(cookie: value)
    }

    static let cookieNameValue = ConsoleSessions.cookieName

    // MARK: Sign-in

    private func signIn(_ request: Request) async throws -> Response {
        let form = try await ConsoleForm.read(request)
        guard let person = await sessions.authenticate(name: form["name"] ?? "", password: form["password"] ?? "")
        else {
            logger.notice("console sign-in refused")
            return html(ConsolePages.signIn(message: "The name or the password is wrong."), status: .unauthorized)
        }
        let (cookie, _) = sessions.open(for: person)
        logger.info("console sign-in", metadata: ["operator": "\(person.name)", "role": "\(person.role.rawValue)"])
        var response = Self.redirect("/console/overview")
        response.headers[.setCookie] = cookieHeader(
            value: cookie, maxAge: Int(settings.sessionLifetime), request: request)
        return response
    }

    /// `HttpOnly` (no script reads it), `SameSite=Strict` (no other site's page sends it),
    /// `Secure` behind TLS, scoped to `/console`.
    func cookieHeader(value: String, maxAge: Int, request: Request) -> String {
        let forwarded = Self.forwardedProtocol.map { request.headers[values: $0] } ?? []
        let overTLS = settings.secureCookie ?? forwarded.contains { $0.lowercased() == "https" }
        return "\(Self.cookieNameValue)=\(value); Path=/console; Max-Age=\(maxAge); HttpOnly; SameSite=Strict"
            + (overTLS ? "; Secure" : "")
    }

    // MARK: Responses

    static let forwardedProtocol = HTTPFields.Element.Name("X-Forwarded-Proto")
    static let referrerPolicy = HTTPFields.Element.Name("Referrer-Policy")

    func html(_ page: HTML, status: HTTPResponse.Status) -> Response {
        var headers: HTTPFields = [
            .contentType: "text/html; charset=utf-8",
            .cacheControl: "no-store",
            .contentSecurityPolicy:
                "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
            .xContentTypeOptions: "nosniff",
        ]
        if let name = Self.referrerPolicy { headers[name] = "same-origin" }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: page.description)))
    }

    static func redirect(_ location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
    }

    /// A path segment as it was meant: the router hands it over percent-encoded.
    static func pathParameter(_ context: BasicRequestContext, _ name: String) -> String? {
        context.parameters.get(name).map { $0.removingPercentEncoding ?? $0 }
    }

    static func store(_ context: BasicRequestContext) throws -> Store {
        let segment = Self.pathParameter(context, "store") ?? ""
        guard let store = Store(pathSegment: segment) else {
            throw ServerError(.invalidQuery, "unknown store '\(segment)'")
        }
        return store
    }

    static func purchaseKey(_ context: BasicRequestContext) throws -> PurchaseKey {
        PurchaseKey(store: try store(context), id: Self.pathParameter(context, "id") ?? "")
    }

    static func environment(_ context: BasicRequestContext) throws -> PurchaseEnvironment {
        let raw = Self.pathParameter(context, "environment") ?? ""
        guard let environment = PurchaseEnvironment(rawValue: raw) else {
            throw ServerError(.invalidQuery, "unknown environment '\(raw)'")
        }
        return environment
    }
}

/// A submitted form (`application/x-www-form-urlencoded`).
struct ConsoleForm: Sendable {
    var values: [String: String]

    subscript(_ name: String) -> String? { values[name] }

    static func read(_ request: Request) async throws -> ConsoleForm {
        let buffer = try await request.body.collect(upTo: 64 * 1024)
        return ConsoleForm(values: parse(String(buffer: buffer)))
    }

    static func parse(_ text: String) -> [String: String] {
        var values: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decoded(_ part: Substring) -> String {
                String(part).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
            }
            guard let name = parts.first else { continue }
            values[decoded(name)] = parts.count > 1 ? decoded(parts[1]) : ""
        }
        return values
    }
}
