import AsyncHTTPClient
import Foundation
import GooglePlay
import Hummingbird
import NIOCore
import NIOHTTP1
import StoreSimulator
import Synchronization
import Testing

/// What a loopback server answered, with the raw body (to decode with the GooglePlay models).
struct PlayHTTPAnswer {
    var status: Int
    var headers: [String: String]
    var body: Data

    func decode<Value: Decodable>(_ type: Value.Type) throws -> Value {
        try JSONDecoder().decode(type, from: body)
    }
}

func playRequest(
    _ method: HTTPMethod, _ url: String, json: String? = nil, bearer: String? = nil,
    headers extra: [(String, String)] = []
) async throws -> PlayHTTPAnswer {
    var request = HTTPClientRequest(url: url)
    request.method = method
    if let bearer { request.headers.add(name: "Authorization", value: "Bearer \(bearer)") }
    request.headers.add(contentsOf: extra)
    if let json {
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: json))
    }
    // A guard against a hang, not a speed check (see loopbackRequest).
    let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
    let body = try await response.body.collect(upTo: 1 << 20)
    var headers: [String: String] = [:]
    for header in response.headers { headers[header.name.lowercased()] = header.value }
    return PlayHTTPAnswer(status: Int(response.status.code), headers: headers, body: Data(buffer: body))
}

/// The test's Pub/Sub push endpoint (playing the server's role): records every push (its
/// `Authorization` header and body) and answers with planned statuses, then 200.
final class PlayPushReceiver: Sendable {
    struct Push: Sendable {
        var authorization: String?
        var body: Data
    }

    private let pushes = Mutex<[Push]>([])
    private let plannedStatuses = Mutex<[Int]>([])
    private let task = Mutex<Task<Void, any Error>?>(nil)
    private let port = Mutex<Int>(0)

    var url: String { "http://127.0.0.1:\(port.withLock { $0 })/push" }
    var received: [Push] { pushes.withLock { $0 } }

    /// The next answers, in order; 200 once they are used up.
    func plan(_ statuses: [Int]) { plannedStatuses.withLock { $0.append(contentsOf: statuses) } }

    func start() async throws {
        let router = Router()
        router.post("push") { [self] request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            pushes.withLock {
                $0.append(Push(authorization: request.headers[.authorization], body: Data(buffer: body)))
            }
            let status = plannedStatuses.withLock { $0.isEmpty ? 200 : $0.removeFirst() }
            return Response(status: HTTPResponse.Status(code: status))
        }
        let (stream, continuation) = AsyncStream.makeStream(of: Int?.self)
        let application = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port)
                continuation.finish()
            })
        let running = Task {
            defer { continuation.finish() }
            try await application.runService(gracefulShutdownSignals: [])
        }
        task.withLock { $0 = running }
        var iterator = stream.makeAsyncIterator()
        let bound = try #require(await iterator.next() ?? nil)
        port.withLock { $0 = bound }
    }

    func stop() async {
        let running = task.withLock { $0 }
        running?.cancel()
        _ = await running?.result
    }
}

/// A simulator on a stopped clock with one app (`com.example.play`), a monthly subscription
/// (`premium`, base plans `monthly` and `yearly`), a `gold` subscription, a consumable (`coins`, up
/// to 10 a purchase) and a non-consumable (`lifetime`), plus a service account whose access
/// tokens (refreshed as simulated time passes) authorize the requests.
struct PlayHarness {
    static let start = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01T00:00:00Z
    static let package = "com.example.play"
    static let day: TimeInterval = 86_400

    let simulator: StoreSimulator
    let endpoints: StoreSimulator.Endpoints
    let tokens: ServiceAccountTokenProvider
    /// A currently valid access token (tokens live an hour of simulated time).
    var bearer: String { get async throws { try await tokens.accessToken() } }
    var play: GooglePlaySimulation { simulator.googlePlay }

    static func run(
        push: PlayPushSubscription? = nil,
        configuration: GooglePlaySimulation.Configuration = GooglePlaySimulation.Configuration(),
        _ body: (PlayHarness) async throws -> Void
    ) async throws {
        let simulatorConfiguration = StoreSimulator.Configuration(start: start, rate: 0, googlePlay: configuration)
        try await StoreSimulator.withRunning(configuration: simulatorConfiguration) { simulator, endpoints in
            let play = simulator.googlePlay
            play.addApp(SimulatedPlayApp(packageName: package, push: push))
            try play.addSubscription(
                SimulatedPlaySubscription(
                    packageName: package, productId: "premium",
                    basePlans: [
                        SimulatedBasePlan(basePlanId: "monthly", billingPeriod: .iso8601("P1M")),
                        SimulatedBasePlan(
                            basePlanId: "yearly", billingPeriod: .iso8601("P1Y"),
                            price: PlayPrice(priceMicros: 49_990_000)),
                        SimulatedBasePlan(basePlanId: "prepaid", billingPeriod: .iso8601("P1M"), autoRenewing: false),
                    ]))
            try play.addSubscription(
                SimulatedPlaySubscription(
                    packageName: package, productId: "gold",
                    basePlans: [
                        SimulatedBasePlan(
                            basePlanId: "monthly", billingPeriod: .iso8601("P1M"),
                            price: PlayPrice(priceMicros: 9_990_000, currency: "EUR"))
                    ]))
            try play.addProduct(SimulatedPlayProduct(packageName: package, productId: "coins", maxQuantity: 10))
            try play.addProduct(
                SimulatedPlayProduct(
                    packageName: package, productId: "lifetime", consumable: false,
                    price: PlayPrice(priceMicros: 29_990_000)))
            let account = try simulator.googleIdentity.makeServiceAccount()
            let provider = ServiceAccountTokenProvider(
                key: try ServiceAccountKey(jsonData: account.jsonKey), clock: simulator.clock)
            try await body(PlayHarness(simulator: simulator, endpoints: endpoints, tokens: provider))
        }
    }

    /// `…/androidpublisher/v3/applications/com.example.play/` + `path`.
    func url(_ path: String) -> String {
        endpoints.baseURL + "/androidpublisher/v3/applications/\(Self.package)/" + path
    }

    func get(_ path: String, headers: [(String, String)] = []) async throws -> PlayHTTPAnswer {
        try await playRequest(.GET, url(path), bearer: try await bearer, headers: headers)
    }

    func post(_ path: String, json: String? = nil) async throws -> PlayHTTPAnswer {
        try await playRequest(.POST, url(path), json: json, bearer: try await bearer)
    }

    /// `purchases.subscriptionsv2.get`, decoded.
    func subscriptionV2(_ token: String) async throws -> SubscriptionPurchaseV2 {
        let answer = try await get("purchases/subscriptionsv2/tokens/\(token)")
        #expect(answer.status == 200)
        return try answer.decode(SubscriptionPurchaseV2.self)
    }

    /// Acknowledges a subscription purchase through the v1 API.
    func acknowledgeSubscription(_ token: String, productId: String = "premium") async throws {
        let answer = try await post("purchases/subscriptions/\(productId)/tokens/\(token):acknowledge", json: "{}")
        #expect(answer.status == 204)
    }

    /// The subscription notification types recorded so far for `token`, oldest first.
    func subscriptionEvents(_ token: String) -> [Int] {
        play.pushes.compactMap { push in
            guard let notification = push.notification.subscriptionNotification,
                notification.purchaseToken == token
            else { return nil }
            return notification.notificationType?.rawValue
        }
    }

    func date(_ base: Date, months: Int = 0, years: Int = 0, days: Int = 0) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        return calendar.date(byAdding: DateComponents(year: years, month: months, day: days), to: base) ?? base
    }
}
