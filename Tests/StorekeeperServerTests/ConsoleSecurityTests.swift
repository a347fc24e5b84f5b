import Foundation
import Hummingbird
import HummingbirdTesting
import Storekeeper
import StorekeeperStorage
import Synchronization
import Testing

@testable import StorekeeperServer

/// The console's guards, through Hummingbird's router test client on a real application (SQLite):
/// anonymous requests, roles, CSRF tokens, escaping, cookie flags, expiry and sign-out.
@Suite struct ConsoleSecurityTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)
    static let operatorPassword = "correct horse battery"
    static let viewerPassword = "look but do not touch"
    static let lifetime: TimeInterval = 3600

    struct Harness {
        let client: any TestClientProtocol
        let storage: any Storage
        let clock: SettableWallClock
    }

    static func withConsole(_ body: @Sendable (Harness) async throws -> Void) async throws {
        try await TemporaryStorage.withSQLiteFile { storage, path in
            let clock = SettableWallClock(start)
            let configuration = StorekeeperConfiguration(
                storageURL: path,
                apiKeys: [ConfiguredAPIKey(name: "backend", scope: .secret, secret: "secret-key-for-tests")],
                apps: [], catalog: Catalog([]),
                console: ConsoleSettings(
                    operators: [
                        ConsoleOperator(name: "olga", role: .operator, credential: .password(operatorPassword)),
                        ConsoleOperator(name: "rita", role: .readOnly, credential: .password(viewerPassword)),
                    ],
                    sessionLifetime: lifetime))
            let application = try StorekeeperApplication(
                configuration: configuration, storage: storage, clock: clock, logger: TemporaryStorage.quietLogger)
            let app = Application(router: application.makeRouter(), logger: TemporaryStorage.quietLogger)
            try await app.test(.router) { client in
                try await body(Harness(client: client, storage: storage, clock: clock))
            }
        }
    }

    static func form(_ fields: [(String, String)]) -> ByteBuffer {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return ByteBuffer(
            string: fields.map {
                "\($0.0.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")"
            }.joined(separator: "&"))
    }

    static let formHeaders: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]

    /// Signs in; returns the cookie (`name=value`) and the whole Set-Cookie header.
    static func signIn(_ client: any TestClientProtocol, _ name: String, _ password: String, headers: HTTPFields = [:])
        async throws -> (cookie: String, setCookie: String)
    {
        var requestHeaders = formHeaders
        requestHeaders.append(contentsOf: headers)
        return try await client.execute(
            uri: "/console/sign-in", method: .post, headers: requestHeaders,
            body: form([("name", name), ("password", password)])
        ) { response in
            #expect(response.status == .seeOther)
            let setCookie = try #require(response.headers[.setCookie])
            let cookie = try #require(setCookie.split(separator: ";").first).trimmingCharacters(in: .whitespaces)
            return (cookie, setCookie)
        }
    }

    static func get(_ client: any TestClientProtocol, _ uri: String, cookie: String?) async throws -> TestResponse {
        try await client.execute(uri: uri, method: .get, headers: cookie.map { [.cookie: $0] } ?? [:], body: nil)
    }

    static func csrf(in page: TestResponse) throws -> String {
        let text = String(buffer: page.body)
        let marker = "name=\"csrf\" value=\""
        let start = try #require(text.range(of: marker)).upperBound
        let end = try #require(text[start...].firstIndex(of: "\""))
        return String(text[start..<end])
    }

    static func failedNotification(_ storage: any Storage) async throws -> InboxNotification {
        let notification = InboxNotification(
            store: .googlePlay, dedupeKey: "message-1", body: Data("{}".utf8), receivedAt: start, status: .failed,
            attempts: 3, nextAttemptAt: start.addingTimeInterval(3600), lastError: "store unavailable")
        _ = try await storage.transaction { try await $0.insertNotification(notification) }
        return notification
    }

    // MARK: Anonymous

    @Test func everyConsoleRouteRefusesAnAnonymousRequest() async throws {
        try await Self.withConsole { harness in
            _ = try await Self.failedNotification(harness.storage)
            let routes = try await Self.consoleRoutes()
            #expect(routes.count >= 15)
            for (method, path) in routes {
                let uri = path.replacingOccurrences(of: ":store", with: "google-play")
                    .replacingOccurrences(of: ":key", with: "message-1").replacingOccurrences(
                        of: ":environment", with: "sandbox"
                    )
                    .replacingOccurrences(of: ":id", with: "x").replacingOccurrences(of: ":app", with: "com.example")
                    .replacingOccurrences(of: ":product", with: "p").replacingOccurrences(of: ":request", with: "r")
                    .replacingOccurrences(of: ":token", with: "t")
                for cookie in [nil, "storekeeper_console=forged.1.2.3"] {
                    try await harness.client.execute(
                        uri: uri, method: method, headers: cookie.map { [.cookie: $0] } ?? [:], body: nil
                    ) { response in
                        let body = String(buffer: response.body)
                        if method == .get {
                            #expect(response.status == .seeOther, "GET \(uri)")
                            #expect(response.headers[.location] == "/console/sign-in", "GET \(uri)")
                            #expect(body.isEmpty, "GET \(uri)")
                        } else {
                            #expect(response.status == .unauthorized, "\(method) \(uri)")
                            #expect(!body.contains("message-1"), "\(method) \(uri)")
                        }
                    }
                }
            }
            // Nothing was done by those requests.
            let stored = try await harness.storage.transaction {
                try await $0.notification(store: .googlePlay, dedupeKey: "message-1")
            }
            #expect(stored?.nextAttemptAt == Self.start.addingTimeInterval(3600))
        }
    }

    /// Every `/console` route but the sign-in and its stylesheet, as the router has them.
    static func consoleRoutes() async throws -> [(HTTPRequest.Method, String)] {
        try await TemporaryStorage.withSQLiteFile { storage, path in
            let configuration = StorekeeperConfiguration(
                storageURL: path, apiKeys: [], apps: [], catalog: Catalog([]),
                console: ConsoleSettings(operators: [
                    ConsoleOperator(name: "olga", role: .operator, credential: .password(operatorPassword))
                ]))
            let application = try StorekeeperApplication(
                configuration: configuration, storage: storage, logger: TemporaryStorage.quietLogger)
            let open: Set<String> = [
                "GET /console/sign-in", "POST /console/sign-in", "GET /console/assets/console.css",
            ]
            return application.makeRouter().routes.compactMap { route in
                let path = route.path.description
                guard path.hasPrefix("/console"), !open.contains("\(route.method.rawValue) \(path)") else {
                    return nil
                }
                return (route.method, path)
            }
        }
    }

    // MARK: Sign-in

    @Test func signInSetsAHardenedCookieAndRefusesWrongPasswords() async throws {
        try await Self.withConsole { harness in
            let (_, plain) = try await Self.signIn(harness.client, "olga", Self.operatorPassword)
            #expect(plain.contains("HttpOnly"))
            #expect(plain.contains("SameSite=Strict"))
            #expect(plain.contains("Path=/console"))
            #expect(!plain.contains("Secure"))
            let forwarded = try #require(HTTPFields.Element.Name("X-Forwarded-Proto"))
            let (_, behindTLS) = try await Self.signIn(
                harness.client, "olga", Self.operatorPassword, headers: [forwarded: "https"])
            #expect(behindTLS.contains("; Secure"))
            for (name, password) in [("olga", "wrong password!"), ("nobody", Self.operatorPassword), ("olga", "")] {
                try await harness.client.execute(
                    uri: "/console/sign-in", method: .post, headers: Self.formHeaders,
                    body: Self.form([("name", name), ("password", password)])
                ) { response in
                    #expect(response.status == .unauthorized)
                    #expect(response.headers[.setCookie] == nil)
                }
            }
        }
    }

    /// A password check (PBKDF2: a tenth of a second of a core or more) runs on the checks' own
    /// queue, one at a time, not on the request's event loop: with that queue busy, a sign-in
    /// waits for it. (Checked on the event loop, a few sign-in attempts at once held every
    /// connection on the loops, store webhooks included.)
    @Test func aSignInWaitsForThePasswordChecksQueue() async throws {
        try await Self.withConsole { harness in
            let release = DispatchSemaphore(value: 0)
            ConsoleSessions.passwordChecks.async { release.wait() }
            let finished = Mutex(false)
            let signIn = Task {
                _ = try await Self.signIn(harness.client, "olga", Self.operatorPassword)
                finished.withLock { $0 = true }
            }
            try await Task.sleep(for: .milliseconds(300))
            #expect(!finished.withLock { $0 })
            release.signal()
            try await signIn.value
            #expect(finished.withLock { $0 })
        }
    }

    // MARK: Roles and CSRF

    @Test func aReadOnlyOperatorCannotAct() async throws {
        try await Self.withConsole { harness in
            _ = try await Self.failedNotification(harness.storage)
            let (cookie, _) = try await Self.signIn(harness.client, "rita", Self.viewerPassword)
            let page = try await Self.get(harness.client, "/console/notifications?status=failed", cookie: cookie)
            #expect(page.status == .ok)
            #expect(String(buffer: page.body).contains("message-1"))
            #expect(!String(buffer: page.body).contains("Retry now"))
            let token = try Self.csrf(in: page)  // the sign-out form's
            try await harness.client.execute(
                uri: "/console/notifications/google-play/message-1/retry", method: .post,
                headers: [.cookie: cookie, .contentType: "application/x-www-form-urlencoded"],
                body: Self.form([("csrf", token), ("confirm", "yes")])
            ) { response in
                #expect(response.status == .forbidden)
                #expect(String(buffer: response.body).contains("read-only"))
            }
            let (stored, actions) = try await harness.storage.transaction {
                (
                    try await $0.notification(store: .googlePlay, dedupeKey: "message-1"),
                    try await $0.recentConsoleActions(limit: 10)
                )
            }
            #expect(stored?.nextAttemptAt == Self.start.addingTimeInterval(3600))
            #expect(actions.isEmpty)
        }
    }

    @Test func anActionWithoutItsCSRFTokenIsRefused() async throws {
        try await Self.withConsole { harness in
            _ = try await Self.failedNotification(harness.storage)
            let (cookie, _) = try await Self.signIn(harness.client, "olga", Self.operatorPassword)
            let headers: HTTPFields = [.cookie: cookie, .contentType: "application/x-www-form-urlencoded"]
            let uri = "/console/notifications/google-play/message-1/retry"
            // Another session's token is as wrong as none.
            let (otherCookie, _) = try await Self.signIn(harness.client, "olga", Self.operatorPassword)
            let otherToken = try Self.csrf(
                in: try await Self.get(harness.client, "/console/actions", cookie: otherCookie))
            for fields in [[], [("csrf", "")], [("csrf", "forged")], [("csrf", otherToken)]] {
                try await harness.client.execute(uri: uri, method: .post, headers: headers, body: Self.form(fields)) {
                    response in
                    #expect(response.status == .forbidden)
                    #expect(String(buffer: response.body).contains("CSRF"))
                }
            }
            var stored = try await harness.storage.transaction {
                try await $0.notification(store: .googlePlay, dedupeKey: "message-1")
            }
            #expect(stored?.nextAttemptAt == Self.start.addingTimeInterval(3600))
            // With its token the same action goes through and is recorded with who did it.
            let token = try Self.csrf(in: try await Self.get(harness.client, "/console/notifications", cookie: cookie))
            try await harness.client.execute(
                uri: uri, method: .post, headers: headers, body: Self.form([("csrf", token)])
            ) { response in
                #expect(response.status == .seeOther)
            }
            let actions = try await harness.storage.transaction { try await $0.recentConsoleActions(limit: 10) }
            stored = try await harness.storage.transaction {
                try await $0.notification(store: .googlePlay, dedupeKey: "message-1")
            }
            #expect(stored?.nextAttemptAt == Self.start)
            #expect(actions.map(\.operatorName) == ["olga"])
            #expect(actions.first?.action == "retry-notification")
        }
    }

    // MARK: Escaping

    @Test func customerDataIsEscaped() async throws {
        try await Self.withConsole { harness in
            let hostile = "<script>alert('x')</script>\"><img src=x onerror=alert(1)>"
            try await harness.storage.transaction {
                try await $0.insertCustomer(
                    Customer(id: CustomerID(hostile), appAccountToken: UUID(), createdAt: Self.start))
            }
            let (cookie, _) = try await Self.signIn(harness.client, "olga", Self.operatorPassword)
            var allowed = CharacterSet.alphanumerics
            allowed.insert(charactersIn: "-._~")
            let encoded = hostile.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
            let found = try await Self.get(harness.client, "/console/customers?q=\(encoded)", cookie: cookie)
            #expect(found.status == .seeOther)
            let location = try #require(found.headers[.location])
            let page = try await Self.get(harness.client, location, cookie: cookie)
            #expect(page.status == .ok)
            let text = String(buffer: page.body)
            #expect(
                text.contains(
                    "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"))
            #expect(!text.contains("<script>"))
            #expect(!text.contains("<img"))
            #expect(page.headers[.contentSecurityPolicy]?.contains("default-src 'none'") == true)
        }
    }

    // MARK: Sessions

    @Test func sessionsExpireAndSignOutEndsThem() async throws {
        try await Self.withConsole { harness in
            let (cookie, _) = try await Self.signIn(harness.client, "olga", Self.operatorPassword)
            #expect(try await Self.get(harness.client, "/console/overview", cookie: cookie).status == .ok)
            harness.clock.set(Self.start.addingTimeInterval(Self.lifetime - 1))
            #expect(try await Self.get(harness.client, "/console/overview", cookie: cookie).status == .ok)
            harness.clock.set(Self.start.addingTimeInterval(Self.lifetime + 1))
            let expired = try await Self.get(harness.client, "/console/overview", cookie: cookie)
            #expect(expired.status == .seeOther)
            #expect(expired.headers[.location] == "/console/sign-in")

            let (second, _) = try await Self.signIn(harness.client, "olga", Self.operatorPassword)
            let token = try Self.csrf(in: try await Self.get(harness.client, "/console/overview", cookie: second))
            try await harness.client.execute(
                uri: "/console/sign-out", method: .post,
                headers: [.cookie: second, .contentType: "application/x-www-form-urlencoded"],
                body: Self.form([("csrf", token)])
            ) { response in
                #expect(response.status == .seeOther)
                #expect(response.headers[.setCookie]?.contains("Max-Age=0") == true)
            }
            #expect(try await Self.get(harness.client, "/console/overview", cookie: second).status == .seeOther)
        }
    }

    @Test func aTamperedCookieIsRefused() async throws {
        try await Self.withConsole { harness in
            let (cookie, _) = try await Self.signIn(harness.client, "rita", Self.viewerPassword)
            // Claiming another operator's name with rita's signature.
            let value = String(cookie.dropFirst("storekeeper_console=".count))
            var parts = value.split(separator: ".").map(String.init)
            parts[0] = Data("olga".utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
            let forged = "storekeeper_console=" + parts.joined(separator: ".")
            #expect(try await Self.get(harness.client, "/console/overview", cookie: forged).status == .seeOther)
            #expect(try await Self.get(harness.client, "/console/overview", cookie: cookie).status == .ok)
        }
    }
}
