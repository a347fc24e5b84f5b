import AppStoreServer
import Benchmark
import Foundation
import Storekeeper
@_spi(Benchmarks) import StorekeeperServer

// The JSON Storekeeper writes by hand, each next to the JSONEncoder it replaced (built as
// EventWriter's and the API's: `.iso8601` dates, `.sortedKeys`; the record's as `AppStoreJSON`'s),
// on a typical value:
// `event-json` / `event-json-encoder`: a renewal event with two entitlements, as EventWriter stores
// and delivers it; `customer-view-json` / `customer-view-json-encoder`: GET /v1/customers/{id} for
// a customer with two subscriptions, a consumable, two entitlements, two balances and a consent;
// `notification-payload-json` / `notification-payload-json-encoder`: an App Store notification's
// payload without its signed strings, as every webhook keeps it with the stored row;
// `notification-body-read` / `notification-body-read-decoder`: the signed payload out of an App
// Store notification's 8.6 KB request body, directly and with JSONDecoder.
// The test suites check that both write the same bytes; here each pair says what that saves.
let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration(
        metrics: [.throughput, .wallClock, .mallocCountTotal],
        warmupIterations: 100,
        scalingFactor: .one,
        maxDuration: .seconds(3),
        maxIterations: 1_000_000
    )
    let encoder = JSONEncoder()
    encoder.dateEncodingStrategy = .iso8601
    encoder.outputFormatting = [.sortedKeys]
    let event: Event
    let view: CustomerView
    do {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        event = try decoder.decode(Event.self, from: Data(JSONBodyFixtures.event.utf8))
        view = try decoder.decode(CustomerView.self, from: Data(JSONBodyFixtures.customerView.utf8))
    } catch {
        fatalError("cannot read the JSON body fixtures: \(error)")
    }

    Benchmark("event-json", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try event.jsonData())
        }
    }
    Benchmark("event-json-encoder", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try encoder.encode(event))
        }
    }
    let payload = NotificationPayload(
        notificationType: .oneTimeCharge, notificationUUID: "4A0F5C1E-6D8B-4F7E-9B1A-2C3D4E5F6A7B", version: "2.0",
        signedDate: Date(timeIntervalSince1970: 1_795_770_903.123),
        data: NotificationData(
            appAppleId: 1_234_567_890, bundleId: "com.example.app", bundleVersion: "42", environment: .production))
    let appStoreEncoder = AppStoreJSON.makeEncoder()
    Benchmark("notification-payload-json", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try NotificationPayloadJSON.data(payload))
        }
    }
    Benchmark("notification-payload-json-encoder", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try appStoreEncoder.encode(payload))
        }
    }
    let token = String(repeating: "eyJhbGciOiJFUzI1NiIsIng1YyI6WyJNSUlC", count: 240)
    let body = Data(#"{"signedPayload":"\#(token)"}"#.utf8)
    struct Body: Decodable { var signedPayload: String }
    let decoder = JSONDecoder()
    Benchmark("notification-body-read", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(NotificationRequestBody.signedPayload(body))
        }
    }
    Benchmark("notification-body-read-decoder", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try decoder.decode(Body.self, from: body).signedPayload)
        }
    }
    Benchmark("customer-view-json", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(view.jsonData())
        }
    }
    Benchmark("customer-view-json-encoder", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try encoder.encode(view))
        }
    }
}

/// Typical bodies, as the server writes them.
enum JSONBodyFixtures {
    static let entitlements = """
        [{"active":true,"expiresAt":"2026-12-27T09:15:02Z","name":"pro","productID":"com.example.pro.monthly",\
        "purchaseID":"2000000123456789","state":"active","store":"app_store"},\
        {"active":true,"name":"remove-ads","productID":"com.example.remove_ads","purchaseID":"2000000123450001",\
        "state":"active","store":"app_store"}]
        """

    static let event = """
        {"app":"com.example.app","customerID":"user-8a41f0","details":{"autoRenew":true,\
        "expiresAt":"2026-12-27T09:15:02Z","previousState":"active","state":"active",\
        "transactionID":"2000000123456790"},"entitlements":\(entitlements),"environment":"production",\
        "id":"0FA15B3C-D2E4-476F-8A9B-0C1D2E3FABCD","occurredAt":"2026-11-27T09:15:03Z",\
        "productID":"com.example.pro.monthly","purchaseID":"2000000123456789","store":"app_store",\
        "type":"subscription.renewed"}
        """

    static func subscription(_ id: String, productID: String, active: Bool) -> String {
        """
        {"active":\(active),"app":"com.example.app","autoRenew":\(active),"environment":"production",\
        "environmentGrantsAccess":true,"expiresAt":"2026-12-27T09:15:02Z","kind":"subscription",\
        "offers":{"current":{"id":"spring-2026","kind":"promotional"},"eligibleWinBackOfferIDs":[]},\
        "ownership":"purchased","productID":"\(productID)","purchaseID":"\(id)",\
        "state":"\(active ? "active" : "expired")","store":"app_store"}
        """
    }

    static let customerView = """
        {"appAccountToken":"7C0E9A52-3B1D-4F6A-9E2C-5D8B1A7F4E30","asOf":"2026-11-27T09:15:03Z",\
        "balances":{"coins":120,"gems":4},"consumptionConsent":{"consented":true,\
        "decidedAt":"2026-10-01T12:00:00Z"},"customerID":"user-8a41f0","entitlements":\(entitlements),\
        "oneTimePurchases":[{"active":true,"app":"com.example.app","environment":"production",\
        "environmentGrantsAccess":true,"kind":"consumable","ownership":"purchased",\
        "productID":"com.example.coins_100","purchaseID":"2000000123450002","state":"active",\
        "store":"app_store"}],"subscriptions":[\(subscription("2000000123456789", productID: "com.example.pro.monthly", active: true)),\
        \(subscription("2000000100000001", productID: "com.example.pro.yearly", active: false))]}
        """
}
