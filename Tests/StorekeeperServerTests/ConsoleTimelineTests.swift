import AsyncHTTPClient
import Foundation
import NIOCore
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
    static func customerPage(_ h: ServerHarness, _ customer: String) async throws -> String {
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
        var page = HTTPClientRequest(url: h.baseURL + "/console/customer?id=\(customer)")
        page.headers.add(name: "Cookie", value: String(cookie))
        let response = try await client.execute(page, timeout: .seconds(60))
        #expect(response.status == .ok)
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
}
