import AsyncHTTPClient
import Foundation
import NIOCore
import StoreSimulator
import Storekeeper
import StorekeeperServer
import StorekeeperStorage
import Testing

/// The console's store actions over real HTTP against the store simulator: each asks first, then
/// calls the store, then is recorded with who did it; the status pages read the store's answer.
@Suite struct ConsoleStoreActionsTests {
    static let password = "store actions password"

    /// A browser without a browser: a session cookie, its CSRF token, redirects not followed.
    struct Session {
        let client: HTTPClient
        let baseURL: String
        var cookie = ""
        var csrf = ""

        func send(_ path: String, form: [(String, String)]? = nil) async throws -> (
            status: Int, body: String, location: String?
        ) {
            var request = HTTPClientRequest(url: baseURL + path)
            if !cookie.isEmpty { request.headers.add(name: "Cookie", value: cookie) }
            if let form {
                var allowed = CharacterSet.alphanumerics
                allowed.insert(charactersIn: "-._~")
                let fields = form.map {
                    "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")"
                }
                request.method = .POST
                request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
                request.body = .bytes(ByteBuffer(string: fields.joined(separator: "&")))
            }
            let response = try await client.execute(request, timeout: .seconds(60))
            let body = String(buffer: try await response.body.collect(upTo: 1 << 22))
            return (Int(response.status.code), body, response.headers.first(name: "Location"))
        }

        /// Posts the form, confirms it on the page that asks, and returns where the action sent the browser.
        func act(_ path: String, _ fields: [(String, String)]) async throws -> String {
            let asked = try await send(path, form: [("csrf", csrf)] + fields)
            #expect(asked.status == 200, "\(path): \(asked.body)")
            #expect(asked.body.contains("id=\"confirm\""), "\(path) did not ask first")
            let done = try await send(path, form: [("csrf", csrf), ("confirm", "yes")] + fields)
            #expect(done.status == 303, "\(path): \(done.body)")
            return try #require(done.location)
        }

        static func signIn(_ baseURL: String, client: HTTPClient) async throws -> Session {
            var session = Session(client: client, baseURL: baseURL)
            var request = HTTPClientRequest(url: baseURL + "/console/sign-in")
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
            request.body = .bytes(ByteBuffer(string: "name=olga&password=store+actions+password"))
            let response = try await client.execute(request, timeout: .seconds(60))
            let setCookie = try #require(response.headers.first(name: "Set-Cookie"))
            session.cookie = String(try #require(setCookie.split(separator: ";").first))
            let page = try await session.send("/console/actions").body
            let marker = "name=\"csrf\" value=\""
            let start = try #require(page.range(of: marker)).upperBound
            session.csrf = String(page[start...].prefix { $0 != "\"" })
            return session
        }
    }

    @Test(arguments: StorageBackend.available)
    func searchTimelineAndStoreActions(_ backend: StorageBackend) async throws {
        let client = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))
        let console = ConsoleSettings(operators: [
            ConsoleOperator(name: "olga", role: .operator, credential: .password(Self.password))
        ])
        let body: (ServerHarness) async throws -> Void = { h in
            let token = try await h.createCustomer("carla")
            let bought = try h.simulator.appStore.purchase(
                customer: "carla", product: "pro.monthly", appAccountToken: token)
            try await h.settle()
            let expiry = try #require(h.simulator.appStore.subscription(bought.originalTransactionId)?.expiresDate)
            let session = try await Session.signIn(h.baseURL, client: client)

            // Every kind of id finds the customer (the order id through Apple's Look Up Order ID).
            var allowed = CharacterSet.alphanumerics
            allowed.insert(charactersIn: "-._~")
            for (kind, value) in [
                ("any", "carla"), ("appAccountToken", token.uuidString), ("any", bought.originalTransactionId),
                ("appStoreTransaction", bought.transactionId),
                ("appStoreOrder", AppStoreSimulation.orderId(forTransactionId: bought.transactionId)),
                ("any", AppStoreSimulation.orderId(forTransactionId: bought.transactionId)),
            ] {
                let found = try await session.send(
                    "/console/customers?kind=\(kind)&q=\(value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")"
                )
                #expect(found.location == "/console/customer?id=carla", "\(kind) \(value): \(found.body)")
            }
            let nothing = try await session.send("/console/customers?kind=googleOrder&q=\(bought.transactionId)")
            #expect(nothing.status == 200)
            #expect(nothing.body.contains("Nothing matches."))
            let customer = try await session.send("/console/customer?id=carla")
            #expect(customer.body.contains("<tr class=\"state-change\">"), "\(customer.body)")
            #expect(customer.body.contains("SUBSCRIBED/INITIAL_BUY"), "\(customer.body)")

            let target = "\(ServerHarness.bundleID)|sandbox"

            // A test notification: requested, delivered here, shown with Apple's attempts.
            let testStatus = try await session.act("/console/test-notifications", [("target", target)])
            #expect(testStatus.hasPrefix("/console/test-notifications/"))
            try await h.settle()
            let delivered = try await session.send(testStatus)
            #expect(delivered.status == 200)
            #expect(delivered.body.contains("Received here"), "\(delivered.body)")
            #expect(delivered.body.contains("SUCCESS"), "\(delivered.body)")

            // A mass extension of every active subscriber of the product, and its status.
            let massStatus = try await session.act(
                "/console/mass-extensions",
                [("target", target), ("product", "pro.monthly"), ("days", "3"), ("reason", "3"), ("storefronts", "")])
            #expect(massStatus.hasPrefix("/console/mass-extensions/"))
            try await h.settle()
            let status = try await session.send(massStatus)
            #expect(status.body.contains("<strong id=\"complete\">yes</strong>"), "\(status.body)")
            #expect(status.body.contains("Succeeded: 1"), "\(status.body)")
            #expect(
                h.simulator.appStore.subscription(bought.originalTransactionId)?.expiresDate
                    == expiry.addingTimeInterval(3 * 86_400))

            // Refreshing the purchase from the store records what the store says now.
            let back = try await session.act(
                "/console/purchases/app-store/\(bought.originalTransactionId)/refresh", [])
            #expect(back == "/console/customer?id=carla")
            let page = try await session.send(back)
            #expect(page.body.contains("refresh-purchase by <strong>olga</strong>"), "\(page.body)")

            let actions = try await h.storage.transaction { try await $0.recentConsoleActions(limit: 10) }
            #expect(
                actions.map(\.action) == ["refresh-purchase", "mass-extend-renewal-dates", "request-test-notification"])
            #expect(actions.allSatisfy { $0.operatorName == "olga" && !$0.outcome.hasPrefix("failed") }, "\(actions)")
            let stored = try await h.storage.transaction {
                try await $0.purchases(storeID: bought.originalTransactionId)
            }
            #expect(stored.first?.expiresAt == expiry.addingTimeInterval(3 * 86_400))
        }
        do {
            try await ServerHarness.run(
                on: backend, customize: { _, configuration in configuration.console = console }, body)
        } catch {
            try await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }
}
