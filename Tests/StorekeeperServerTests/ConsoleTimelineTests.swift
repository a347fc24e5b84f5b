import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import StoreSimulator
import Storekeeper
import StorekeeperServer
import StorekeeperStorage
import Testing

/// The customer's timeline in the console shows what the server told Apple on a consumption
/// request and the events written for the app's backend, next to prices and offers, over real HTTP
/// against the simulator.
@Suite(.serialized) struct ConsoleTimelineTests {
    static let password = "timeline test password"

    /// The console's customer page for `customer`, signed in as a read-only operator.
    static func customerPage(
        _ h: ServerHarness, _ customer: String, query: String = "", status: HTTPResponseStatus = .ok
    ) async throws -> String {
        var signIn = HTTPClientRequest(url: h.baseURL + "/console/sign-in")
        signIn.method = .POST
        signIn.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        signIn.body = .bytes(ByteBuffer(string: "name=rita&password=timeline+test+password"))
        let client = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))
        defer { _ = client.shutdown() }
        let answer = try await client.execute(signIn, timeout: .seconds(60))
        let cookie = try #require(answer.headers.first(name: "Set-Cookie")?.split(separator: ";").first)
        var page = HTTPClientRequest(url: h.baseURL + "/console/customer?id=\(customer)\(query)")
        page.headers.add(name: "Cookie", value: String(cookie))
        let response = try await client.execute(page, timeout: .seconds(60))
        #expect(response.status == status)
        return String(buffer: try await response.body.collect(upTo: 4 << 20))
    }

    @Test(arguments: StorageBackend.available)
    func theTimelineShowsConsumptionAnswersEventsAndPrices(_ backend: StorageBackend) async throws {
        let console = ConsoleSettings(operators: [
            ConsoleOperator(name: "rita", role: .readOnly, credential: .password(Self.password))
        ])
        let walkthrough: (ServerHarness) async throws -> Void = { h in
            let token = try await h.createCustomer("ada")
            let consent = try await h.request(.PUT, "/v1/customers/ada", json: #"{"consumptionConsent": true}"#)
            #expect(consent.status == 200)
            let coins = try h.simulator.appStore.purchase(customer: "ada", product: "coins.100", appAccountToken: token)
            try await h.settle()
            try h.simulator.appStore.requestRefund(transactionId: coins.transactionId)
            try await h.settle()
            #expect(try await h.answerRefundRequests() == 1)

            let page = try await Self.customerPage(h, "ada")
            let rows = page.components(separatedBy: "<tr class=\"").dropFirst()
            let consumption = rows.filter { $0.hasPrefix("consumption-request\"") }
            #expect(consumption.count == 1, "\(page)")
            let answer = consumption.first ?? ""
            #expect(answer.contains(coins.transactionId) && answer.contains("<strong>sent</strong>"), "\(answer)")
            #expect(answer.contains("consented yes") && answer.contains("delivery "), "\(answer)")
            let events = rows.filter { $0.hasPrefix("event\"") }
            for type in ["purchase.started", "balance.changed", "refund_request.settled"] {
                #expect(events.contains { $0.contains("<code>\(type)</code>") }, "no \(type) in \(events)")
            }
            // The billing event with the price the store reported.
            let billing = rows.filter { $0.hasPrefix("billing-event\"") }
            #expect(billing.contains { $0.contains("USD 0.99") }, "\(billing)")
        }
        try await ServerHarness.run(
            on: backend, customize: { _, configuration in configuration.console = console }, walkthrough)
    }

    /// A customer's page lists a page of purchases (a coin buyer may hold thousands, each with a
    /// timeline of its own) and links to the next; the timeline covers the purchases listed.
    @Test func aCustomersPurchasesAreListedAPageAtATime() async throws {
        let console = ConsoleSettings(operators: [
            ConsoleOperator(name: "rita", role: .readOnly, credential: .password(Self.password))
        ])
        let walkthrough: (ServerHarness) async throws -> Void = { h in
            let token = try await h.createCustomer("ada")
            var bought: [String] = []
            for _ in 0..<3 {
                let coins = try h.simulator.appStore.purchase(
                    customer: "ada", product: "coins.100", appAccountToken: token)
                bought.append(coins.originalTransactionId)
            }
            try await h.settle()
            func listed(_ page: String) -> [String] {
                let table = page.components(separatedBy: "id=\"purchases\"").dropFirst().first ?? ""
                let body = table.components(separatedBy: "</table>").first ?? ""
                return bought.filter { body.contains("<code>\($0)</code>") }
            }
            func billed(_ page: String) -> [String] {
                let rows = page.components(separatedBy: "<tr class=\"").filter { $0.hasPrefix("billing-event\"") }
                return bought.filter { id in rows.contains { $0.contains(id) } }
            }
            let first = try await Self.customerPage(h, "ada", query: "&limit=2")
            #expect(listed(first) == Array(bought.sorted().prefix(2)), "\(first)")
            #expect(billed(first) == listed(first))
            #expect(!first.contains("id=\"first-purchases\""))
            let link = try #require(
                first.components(separatedBy: "id=\"next-purchases\"").first?
                    .components(separatedBy: "href=\"").last?.components(separatedBy: "\"").first)
            let after = try #require(link.components(separatedBy: "after=").last)
            let second = try await Self.customerPage(h, "ada", query: "&limit=2&after=\(after)")
            #expect(listed(second) == [bought.sorted()[2]], "\(second)")
            #expect(billed(second) == listed(second))
            #expect(second.contains("id=\"first-purchases\"") && !second.contains("id=\"next-purchases\""))
            // The timeline shows the latest 200 balance changes of a longer ledger (3 credits and
            // 250 debits here), the newest first.
            try await h.storage.transaction { transaction in
                for index in 0..<250 {
                    _ = try await transaction.appendLedgerEntry(
                        LedgerEntry(
                            customerID: CustomerID("ada"), balance: "coins", amount: -1, reason: .debit,
                            idempotencyKey: "debit-\(index)", createdAt: Date()))
                }
            }
            let long = try await Self.customerPage(h, "ada")
            let changes = long.components(separatedBy: "<tr class=\"").filter { $0.hasPrefix("balance-change\"") }
            #expect(changes.count == 200)
            #expect(changes.first?.contains("coins -1") == true && changes.last?.contains("coins -1") == true)
            // Without a limit all three fit one page; a cursor the console did not give is refused.
            #expect(listed(try await Self.customerPage(h, "ada")) == bought.sorted())
            let refused = try await Self.customerPage(h, "ada", query: "&after=nonsense", status: .badRequest)
            #expect(refused.contains("unknown-cursor"), "\(refused)")
        }
        try await ServerHarness.run(
            on: .sqlite, customize: { _, configuration in configuration.console = console }, walkthrough)
    }
}
