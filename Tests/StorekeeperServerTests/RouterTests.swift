import Foundation
import Hummingbird
import HummingbirdTesting
import Storekeeper
import StorekeeperServer
import StorekeeperStorage
import Testing

/// The HTTP surface of a real `StorekeeperApplication` (SQLite, no apps configured) through
/// Hummingbird's router test client: authentication, validation and the error body.
@Suite struct RouterTests {
    static let secret = "secret-key-for-tests"
    static let readOnly = "read-only-key-for-tests"
    static let catalog = Catalog([
        CatalogProduct(id: "coins.100", store: .googlePlay, kind: .consumable, balance: "coins", credits: 100)
    ])

    struct ErrorBody: Decodable {
        struct Detail: Decodable {
            var code: String
            var message: String
        }
        var error: Detail
    }

    struct CreatedCustomer: Decodable {
        var id: String
        var appAccountToken: String
        var created: Bool
    }

    static func withRouter(
        _ body: @Sendable (any TestClientProtocol, StorekeeperApplication) async throws -> Void
    ) async throws {
        try await TemporaryStorage.withSQLiteFile { storage, path in
            let configuration = StorekeeperConfiguration(
                storageURL: path,
                apiKeys: [
                    ConfiguredAPIKey(name: "backend", scope: .secret, secret: secret),
                    ConfiguredAPIKey(name: "dashboard", scope: .readOnly, secret: readOnly),
                ],
                apps: [], catalog: catalog)
            let application = try StorekeeperApplication(
                configuration: configuration, storage: storage, logger: TemporaryStorage.quietLogger)
            let app = Application(router: application.makeRouter(), logger: TemporaryStorage.quietLogger)
            try await app.test(.router) { client in try await body(client, application) }
        }
    }

    static func headers(_ key: String? = secret) -> HTTPFields {
        guard let key else { return [:] }
        return [.authorization: "Bearer \(key)", .contentType: "application/json"]
    }

    static func json(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

    /// The error a response carries: its body is `{"error": {"code", "message"}}` and its status
    /// the code's own.
    @discardableResult
    static func expectError(
        _ response: TestResponse, _ expected: ErrorCode, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> ErrorBody.Detail {
        let body = try JSONDecoder().decode(ErrorBody.self, from: Data(buffer: response.body))
        let code = try #require(ErrorCode(rawValue: body.error.code), sourceLocation: sourceLocation)
        #expect(code.status == response.status, sourceLocation: sourceLocation)
        #expect(code == expected, sourceLocation: sourceLocation)
        #expect(response.status == expected.status, sourceLocation: sourceLocation)
        #expect(!body.error.message.isEmpty, sourceLocation: sourceLocation)
        return body.error
    }

    static func createCustomer(_ id: String, _ client: any TestClientProtocol) async throws -> CreatedCustomer {
        try await client.execute(uri: "/v1/customers/\(id)", method: .put, headers: headers()) { response in
            try JSONDecoder().decode(CreatedCustomer.self, from: Data(buffer: response.body))
        }
    }

    // MARK: API keys

    @Test func aRequestWithoutAnAPIKeyIsUnauthorized() async throws {
        try await Self.withRouter { client, _ in
            try await client.execute(uri: "/v1/customers/alice", method: .get) { response in
                _ = try Self.expectError(response, .missingAPIKey)
            }
            try await client.execute(
                uri: "/v1/customers/alice", method: .get, headers: [.authorization: "Basic \(Self.secret)"]
            ) { response in
                _ = try Self.expectError(response, .missingAPIKey)
            }
        }
    }

    @Test func anUnknownAPIKeyIsUnauthorized() async throws {
        try await Self.withRouter { client, _ in
            try await client.execute(uri: "/v1/customers/alice", method: .get, headers: Self.headers("wrong")) {
                _ = try Self.expectError($0, .invalidAPIKey)
            }
        }
    }

    @Test func aReadOnlyKeyCanReadButNotWrite() async throws {
        try await Self.withRouter { client, application in
            try await client.execute(uri: "/v1/customers/alice", method: .put, headers: Self.headers(Self.readOnly)) {
                _ = try Self.expectError($0, .readOnlyAPIKey)
            }
            #expect(try await application.customers.view(of: CustomerID("alice")) == nil)
            _ = try await Self.createCustomer("alice", client)
            try await client.execute(uri: "/v1/customers/alice", method: .get, headers: Self.headers(Self.readOnly)) {
                #expect($0.status == .ok)
            }
        }
    }

    // MARK: Customers

    @Test func putCreatesThenFetchesTheSameCustomer() async throws {
        try await Self.withRouter { client, _ in
            let token = try await client.execute(uri: "/v1/customers/alice", method: .put, headers: Self.headers()) {
                response in
                #expect(response.status == .created)
                let body = try JSONDecoder().decode(CreatedCustomer.self, from: Data(buffer: response.body))
                #expect(body.id == "alice")
                #expect(body.created)
                #expect(UUID(uuidString: body.appAccountToken) != nil)
                #expect(body.appAccountToken == body.appAccountToken.lowercased())
                return body.appAccountToken
            }
            try await client.execute(uri: "/v1/customers/alice", method: .put, headers: Self.headers()) { response in
                #expect(response.status == .ok)
                let body = try JSONDecoder().decode(CreatedCustomer.self, from: Data(buffer: response.body))
                #expect(!body.created)
                #expect(body.appAccountToken == token)
            }
            try await client.execute(uri: "/v1/customers/alice", method: .get, headers: Self.headers()) { response in
                #expect(response.status == .ok)
            }
        }
    }

    @Test func anInvalidCustomerIDIsRefused() async throws {
        try await Self.withRouter { client, _ in
            let long = String(repeating: "a", count: CustomerID.maxLength + 1)
            try await client.execute(uri: "/v1/customers/\(long)", method: .put, headers: Self.headers()) {
                _ = try Self.expectError($0, .invalidCustomerID)
            }
            try await client.execute(uri: "/v1/customers/\(long)", method: .get, headers: Self.headers()) {
                _ = try Self.expectError($0, .invalidCustomerID)
            }
        }
    }

    @Test func anUnknownCustomerIsNotFound() async throws {
        try await Self.withRouter { client, _ in
            try await client.execute(uri: "/v1/customers/nobody", method: .get, headers: Self.headers()) {
                _ = try Self.expectError($0, .customerNotFound)
            }
        }
    }

    // MARK: Debits

    static func debit(
        _ body: String, of customer: String = "alice", _ client: any TestClientProtocol,
        _ check: @escaping @Sendable (TestResponse) async throws -> Void
    ) async throws {
        try await client.execute(
            uri: "/v1/customers/\(customer)/balances/coins/debits", method: .post, headers: headers(), body: json(body),
            testCallback: check)
    }

    @Test func aDebitMustBeAPositiveAmount() async throws {
        try await Self.withRouter { client, _ in
            _ = try await Self.createCustomer("alice", client)
            try await Self.debit(#"{"amount": 0, "idempotencyKey": "k1"}"#, client) {
                _ = try Self.expectError($0, .invalidAmount)
            }
            try await Self.debit(#"{"amount": -5, "idempotencyKey": "k1"}"#, client) {
                _ = try Self.expectError($0, .invalidAmount)
            }
        }
    }

    @Test func aDebitNeedsAnIdempotencyKeyOf1To200Bytes() async throws {
        try await Self.withRouter { client, _ in
            _ = try await Self.createCustomer("alice", client)
            try await Self.debit(#"{"amount": 1, "idempotencyKey": ""}"#, client) {
                _ = try Self.expectError($0, .invalidIdempotencyKey)
            }
            let long = String(repeating: "k", count: 201)
            try await Self.debit(#"{"amount": 1, "idempotencyKey": "\#(long)"}"#, client) {
                _ = try Self.expectError($0, .invalidIdempotencyKey)
            }
        }
    }

    @Test func aDebitBodyThatIsNotJSONIsMalformed() async throws {
        try await Self.withRouter { client, _ in
            _ = try await Self.createCustomer("alice", client)
            try await Self.debit("amount=1", client) { _ = try Self.expectError($0, .malformedBody) }
        }
    }

    @Test func aDebitBeyondTheBalanceIsAConflict() async throws {
        try await Self.withRouter { client, application in
            _ = try await Self.createCustomer("alice", client)
            try await Self.debit(#"{"amount": 1, "idempotencyKey": "k1"}"#, client) {
                _ = try Self.expectError($0, .insufficientBalance)
            }
            let entries = try await application.storage.transaction {
                try await $0.ledgerEntries(of: CustomerID("alice"))
            }
            #expect(entries.isEmpty)
        }
    }

    @Test func aDebitOfAnUnknownCustomerIsNotFound() async throws {
        try await Self.withRouter { client, _ in
            try await Self.debit(#"{"amount": 1, "idempotencyKey": "k1"}"#, of: "nobody", client) {
                _ = try Self.expectError($0, .customerNotFound)
            }
        }
    }

    @Test func aDebitAnswersTheRemainingBalance() async throws {
        try await Self.withRouter { client, application in
            let customer = try await Self.createCustomer("alice", client)
            let now = Date()
            let fact = PurchaseFact(
                key: .googlePlay("coins-1"), app: AppID("com.example.app"), productID: "coins.100", kind: .consumable,
                environment: .production, state: .active, accountHint: customer.appAccountToken, observedAt: now,
                transactions: [TransactionFact(id: "GPA.1", productID: "coins.100", purchasedAt: now, observedAt: now)])
            let recorder = application.customers.recorder
            _ = try await application.storage.transaction {
                try await recorder.record(fact, cause: ChangeCause(source: .submission), in: $0)
            }
            try await Self.debit(#"{"amount": 30, "idempotencyKey": "k1"}"#, client) { response in
                #expect(response.status == .ok)
                let body = try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]
                #expect(body?["remaining"] as? Int == 70)
                #expect(body?["amount"] as? Int == 30)
            }
        }
    }

    // MARK: Purchase history

    struct PurchasePage: Decodable {
        struct Listed: Decodable {
            var purchaseID: String
            var kind: String
        }
        var purchases: [Listed]
        var next: String?
        var hasMore: Bool
    }

    /// Consumables reach the app as balances: the view leaves them out (a customer may hold
    /// thousands), and the history pages through every purchase from its `next` cursor.
    @Test func theViewLeavesConsumablesToTheHistoryWhichPagesThroughThem() async throws {
        try await Self.withRouter { client, application in
            let customer = try await Self.createCustomer("alice", client)
            let now = Date()
            let recorder = application.customers.recorder
            let tokens = ["coins-3", "coins-1", "coins-5", "coins-2", "coins-4"]
            for (offset, token) in tokens.enumerated() {
                let fact = PurchaseFact(
                    key: .googlePlay(token), app: AppID("com.example.app"), productID: "coins.100", kind: .consumable,
                    environment: .production, state: .active, accountHint: customer.appAccountToken, observedAt: now,
                    transactions: [
                        TransactionFact(id: "GPA.\(offset)", productID: "coins.100", purchasedAt: now, observedAt: now)
                    ])
                _ = try await application.storage.transaction {
                    try await recorder.record(fact, cause: ChangeCause(source: .submission), in: $0)
                }
            }
            try await client.execute(uri: "/v1/customers/alice", method: .get, headers: Self.headers()) { response in
                let view = try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]
                #expect((view?["oneTimePurchases"] as? [Any])?.isEmpty == true)
                #expect(view?["balances"] as? [String: Int] == ["coins": 500])
            }
            var listed: [String] = []
            var uri = "/v1/customers/alice/purchases?limit=2"
            for _ in 0..<5 {
                let page = try await client.execute(uri: uri, method: .get, headers: Self.headers(Self.readOnly)) {
                    #expect($0.status == .ok)
                    return try JSONDecoder().decode(PurchasePage.self, from: Data(buffer: $0.body))
                }
                #expect(page.purchases.allSatisfy { $0.kind == "consumable" })
                listed += page.purchases.map(\.purchaseID)
                #expect(page.hasMore == (page.next != nil))
                guard let next = page.next else { break }
                #expect(page.purchases.count == 2)
                uri = "/v1/customers/alice/purchases?limit=2&after=\(next)"
            }
            #expect(listed == tokens.sorted())
            try await client.execute(uri: "/v1/customers/alice/purchases", method: .get, headers: Self.headers()) {
                let page = try JSONDecoder().decode(PurchasePage.self, from: Data(buffer: $0.body))
                #expect(page.purchases.map(\.purchaseID) == tokens.sorted())
                #expect(!page.hasMore && page.next == nil)
            }
            for (query, code) in [
                ("after=not-a-cursor", ErrorCode.unknownCursor),
                ("after=\(Self.base64URL("elsewhere:1"))", .unknownCursor),
                ("limit=0", .invalidQuery), ("limit=1001", .invalidQuery),
            ] {
                try await client.execute(
                    uri: "/v1/customers/alice/purchases?\(query)", method: .get, headers: Self.headers()
                ) { try Self.expectError($0, code) }
            }
            try await client.execute(uri: "/v1/customers/bob/purchases", method: .get, headers: Self.headers()) {
                try Self.expectError($0, .customerNotFound)
            }
        }
    }

    // MARK: Purchase submissions

    func purchases(of id: String, _ application: StorekeeperApplication) async throws -> [Purchase] {
        try await application.storage.transaction { try await $0.purchases(of: CustomerID(id)) }
    }

    @Test func aSubmissionToAnUnknownStoreIsMalformed() async throws {
        try await Self.withRouter { client, _ in
            _ = try await Self.createCustomer("alice", client)
            try await client.execute(
                uri: "/v1/customers/alice/purchases/unknown-store", method: .post, headers: Self.headers(),
                body: Self.json("{}")
            ) { _ = try Self.expectError($0, .malformedSubmission) }
        }
    }

    @Test func anAppStoreSubmissionWithoutAConfiguredAppIsNotConfigured() async throws {
        try await Self.withRouter { client, application in
            _ = try await Self.createCustomer("alice", client)
            try await client.execute(
                uri: "/v1/customers/alice/purchases/app-store", method: .post, headers: Self.headers(),
                body: Self.json(#"{"transactionId": "2000000000000001"}"#)
            ) { _ = try Self.expectError($0, .notConfigured) }
            #expect(try await purchases(of: "alice", application).isEmpty)
        }
    }

    @Test func anEmptyAppStoreSubmissionIsMalformedAndStoresNothing() async throws {
        try await Self.withRouter { client, application in
            _ = try await Self.createCustomer("alice", client)
            try await client.execute(
                uri: "/v1/customers/alice/purchases/app-store", method: .post, headers: Self.headers(),
                body: Self.json("{}")
            ) { _ = try Self.expectError($0, .malformedSubmission) }
            #expect(try await purchases(of: "alice", application).isEmpty)
        }
    }

    @Test func aSubmissionForAnUnknownCustomerIsNotFound() async throws {
        try await Self.withRouter { client, _ in
            try await client.execute(
                uri: "/v1/customers/nobody/purchases/app-store", method: .post, headers: Self.headers(),
                body: Self.json(#"{"transactionId": "2000000000000001"}"#)
            ) { _ = try Self.expectError($0, .customerNotFound) }
        }
    }

    // MARK: Notifications

    func inboxCount(_ application: StorekeeperApplication) async throws -> Int {
        try await application.storage.transaction { try await $0.notificationCounts() }.values.reduce(0, +)
    }

    @Test func aNotificationThatIsNotJSONIsMalformed() async throws {
        try await Self.withRouter { client, application in
            try await client.execute(
                uri: "/v1/notifications/app-store", method: .post, body: Self.json("this is not JSON")
            ) { _ = try Self.expectError($0, .malformedPayload) }
            #expect(try await inboxCount(application) == 0)
        }
    }

    @Test func aNotificationToAnUnknownStoreIsNotFound() async throws {
        try await Self.withRouter { client, _ in
            try await client.execute(uri: "/v1/notifications/nowhere", method: .post, body: Self.json("{}")) {
                #expect($0.status == .notFound)
            }
        }
    }

    static func base64URL(_ text: String) -> String {
        Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    @Test func aNotificationForAnUnconfiguredAppIsRefusedAndNotStored() async throws {
        try await Self.withRouter { client, application in
            // Unsigned, with no App Store app configured: there is no verifier to check it with
            // (and no configured bundle id to keep from the caller), so the claim decides.
            let header = Self.base64URL(#"{"alg":"ES256","x5c":["AAAA"]}"#)
            let payload = Self.base64URL(
                #"{"notificationType":"TEST","notificationUUID":"7b1c6f2e-0000-4000-8000-000000000001","#
                    + #""data":{"bundleId":"com.example.unconfigured","environment":"Sandbox"}}"#)
            let body = #"{"signedPayload":"\#(header).\#(payload).c2lnbmF0dXJl"}"#
            try await client.execute(uri: "/v1/notifications/app-store", method: .post, body: Self.json(body)) {
                let error = try Self.expectError($0, .unknownApp)
                #expect(error.message.contains("com.example.unconfigured"))
            }
            #expect(try await inboxCount(application) == 0)
        }
    }

    // MARK: Inbox

    @Test func theInboxRefusesAnUnknownStatus() async throws {
        try await Self.withRouter { client, _ in
            try await client.execute(uri: "/v1/inbox?status=bogus", method: .get, headers: Self.headers()) {
                _ = try Self.expectError($0, .invalidQuery)
            }
            try await client.execute(uri: "/v1/inbox?limit=0", method: .get, headers: Self.headers()) {
                _ = try Self.expectError($0, .invalidQuery)
            }
        }
    }

    @Test func theInboxListsByStatus() async throws {
        try await Self.withRouter { client, _ in
            try await client.execute(uri: "/v1/inbox?status=pending", method: .get, headers: Self.headers()) {
                response in
                #expect(response.status == .ok)
                let body = try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]
                #expect((body?["notifications"] as? [Any])?.isEmpty == true)
            }
            try await client.execute(uri: "/v1/inbox", method: .get) { _ = try Self.expectError($0, .missingAPIKey) }
        }
    }

    // MARK: Health

    @Test func healthAndMetricsAnswerWithoutAKey() async throws {
        try await Self.withRouter { client, _ in
            try await client.execute(uri: "/health", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body).contains("ok"))
            }
            try await client.execute(uri: "/ready", method: .get) { #expect($0.status == .ok) }
            try await client.execute(uri: "/v1/customers/nobody", method: .get, headers: Self.headers()) {
                #expect($0.status == .notFound)
            }
            try await client.execute(uri: "/metrics", method: .get) { response in
                #expect(response.status == .ok)
                let text = String(buffer: response.body)
                #expect(text.contains("storekeeper_http_requests_total"))
                #expect(text.contains("storekeeper_inbox_notifications"))
            }
        }
    }
}
