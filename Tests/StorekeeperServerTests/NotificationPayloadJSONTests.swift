import AppStoreServer
import Foundation
import TestSupport
import Testing

@_spi(Benchmarks) @testable import StorekeeperServer

/// The kept record's payload JSON, written by hand, is byte for byte what `AppStoreJSON`'s
/// encoder writes (which `AppStoreJSON`'s decoder reads back).
@Suite struct NotificationPayloadJSONTests {
    static let allMembers = NotificationPayload(
        notificationType: .consumptionRequest, subtype: NotificationSubtype(rawValue: "NOT_YET_NAMED"),
        notificationUUID: "4a0f5c1e-6d8b-4f7e-9b1a-2c3d4e5f6a7b", version: "2.0",
        signedDate: Date(timeIntervalSince1970: 1_767_225_600.123),
        data: NotificationData(
            appAppleId: 1_234_567_890, bundleId: "com.example.app", bundleVersion: "1.2/3",
            consumptionRequestReason: .unintendedPurchase, environment: .sandbox, signedRenewalInfo: "r.r.r",
            signedTransactionInfo: "t.t.t", status: SubscriptionStatus(rawValue: 9)),
        summary: NotificationSummary(
            requestIdentifier: "req", environment: Environment(rawValue: "LocalTesting"), appAppleId: -1,
            bundleId: "b", productId: "p", storefrontCountryCodes: ["USA", "FRA", ""], failedCount: 0,
            succeededCount: Int64.max),
        externalPurchaseToken: ExternalPurchaseToken(
            externalPurchaseId: "e", tokenCreationDate: Date(timeIntervalSince1970: -0.0004), appAppleId: Int64.min,
            bundleId: "x\"y\\z", tokenExpirationDate: Date(timeIntervalSince1970: 4_102_444_800),
            tokenType: ExternalPurchaseTokenType(rawValue: "SERVICES")),
        appData: AppData(
            appAppleId: 7, bundleId: "\u{1}\n\t\u{7F}é😀", environment: .production, signedAppTransactionInfo: "a.a.a"))

    @Test func everyMemberIsWrittenAsTheEncoderWritesIt() throws {
        try expectSameAsEncoder(Self.allMembers)
        try expectSameAsEncoder(NotificationPayload())
        try expectSameAsEncoder(
            NotificationPayload(
                data: NotificationData(), summary: NotificationSummary(storefrontCountryCodes: []),
                externalPurchaseToken: ExternalPurchaseToken(), appData: AppData()))
    }

    /// 2,000 payloads with each member present or not, strings with escapes, slashes and
    /// non-ASCII characters, names the App Store has not used, and dates between milliseconds.
    @Test func randomPayloadsAreWrittenAsTheEncoderWritesThem() throws {
        var random = SplitMix64(state: 20_261_127)
        for _ in 0..<2_000 { try expectSameAsEncoder(Self.randomPayload(&random)) }
    }

    @Test func aDateBeyondMillisecondsIsRefusedAsTheEncoderRefusesIt() {
        let payload = NotificationPayload(signedDate: Date(timeIntervalSince1970: 1e300))
        #expect(throws: (any Error).self) { try AppStoreJSON.makeEncoder().encode(payload) }
        #expect(throws: ServerError.self) { try NotificationPayloadJSON.data(payload) }
    }

    func expectSameAsEncoder(_ payload: NotificationPayload, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let written = try NotificationPayloadJSON.data(payload)
        let encoded = try AppStoreJSON.makeEncoder().encode(payload)
        #expect(
            String(decoding: written, as: UTF8.self) == String(decoding: encoded, as: UTF8.self),
            sourceLocation: sourceLocation)
    }

    static func randomPayload(_ random: inout SplitMix64) -> NotificationPayload {
        func maybe<Value>(_ make: (inout SplitMix64) -> Value) -> Value? {
            Bool.random(using: &random) ? make(&random) : nil
        }
        func string(_ random: inout SplitMix64) -> String {
            let pieces = ["a", "Z", "0", "\"", "\\", "/", "\n", "\u{0}", "\u{1F}", "\u{7F}", "é", "😀", " ", "."]
            return String(
                (0..<Int.random(in: 0...12, using: &random)).map { _ in
                    pieces.randomElement(using: &random) ?? ""
                }.joined())
        }
        func integer(_ random: inout SplitMix64) -> Int64 {
            [Int64.min, -1, 0, 1, Int64.max, Int64.random(in: Int64.min...Int64.max, using: &random)]
                .randomElement(using: &random) ?? 0
        }
        func date(_ random: inout SplitMix64) -> Date {
            let milliseconds = Double(Int64.random(in: -10_000_000_000_000...10_000_000_000_000, using: &random))
            return Date(timeIntervalSince1970: (milliseconds + Double.random(in: 0..<1, using: &random)) / 1000)
        }
        return NotificationPayload(
            notificationType: maybe { NotificationType(rawValue: string(&$0)) },
            subtype: maybe { NotificationSubtype(rawValue: string(&$0)) }, notificationUUID: maybe(string),
            version: maybe(string), signedDate: maybe(date),
            data: maybe { random in
                NotificationData(
                    appAppleId: Bool.random(using: &random) ? integer(&random) : nil,
                    bundleId: Bool.random(using: &random) ? string(&random) : nil,
                    bundleVersion: Bool.random(using: &random) ? string(&random) : nil,
                    consumptionRequestReason: Bool.random(using: &random)
                        ? ConsumptionRequestReason(rawValue: string(&random)) : nil,
                    environment: Bool.random(using: &random) ? Environment(rawValue: string(&random)) : nil,
                    signedRenewalInfo: Bool.random(using: &random) ? string(&random) : nil,
                    signedTransactionInfo: Bool.random(using: &random) ? string(&random) : nil,
                    status: Bool.random(using: &random)
                        ? SubscriptionStatus(rawValue: Int32.random(in: Int32.min...Int32.max, using: &random)) : nil)
            },
            summary: maybe { random in
                NotificationSummary(
                    requestIdentifier: Bool.random(using: &random) ? string(&random) : nil,
                    environment: Bool.random(using: &random) ? Environment(rawValue: string(&random)) : nil,
                    appAppleId: Bool.random(using: &random) ? integer(&random) : nil,
                    bundleId: Bool.random(using: &random) ? string(&random) : nil,
                    productId: Bool.random(using: &random) ? string(&random) : nil,
                    storefrontCountryCodes: Bool.random(using: &random)
                        ? (0..<Int.random(in: 0...3, using: &random)).map { _ in string(&random) } : nil,
                    failedCount: Bool.random(using: &random) ? integer(&random) : nil,
                    succeededCount: Bool.random(using: &random) ? integer(&random) : nil)
            },
            externalPurchaseToken: maybe { random in
                ExternalPurchaseToken(
                    externalPurchaseId: Bool.random(using: &random) ? string(&random) : nil,
                    tokenCreationDate: Bool.random(using: &random) ? date(&random) : nil,
                    appAppleId: Bool.random(using: &random) ? integer(&random) : nil,
                    bundleId: Bool.random(using: &random) ? string(&random) : nil,
                    tokenExpirationDate: Bool.random(using: &random) ? date(&random) : nil,
                    tokenType: Bool.random(using: &random) ? ExternalPurchaseTokenType(rawValue: string(&random)) : nil)
            },
            appData: maybe { random in
                AppData(
                    appAppleId: Bool.random(using: &random) ? integer(&random) : nil,
                    bundleId: Bool.random(using: &random) ? string(&random) : nil,
                    environment: Bool.random(using: &random) ? Environment(rawValue: string(&random)) : nil,
                    signedAppTransactionInfo: Bool.random(using: &random) ? string(&random) : nil)
            })
    }
}
