import AppStoreServer
import Crypto
import Foundation
import StoreSimulator
import Testing

/// The simulated Send Consumption Information V2 validates a body the way Apple documents it (field
/// types, required fields, consent, the percentage's range and its combinations with the product
/// type, delivery status and preference), records what it accepted, and decides an open refund
/// request by ``RefundDecisionRule``.
@Suite struct ConsumptionValidationTests {
    func send(_ h: Harness, _ transactionId: String, _ json: String) async throws -> HTTPResult {
        let privateKey = P256.Signing.PrivateKey()
        h.appStore.registerAPIKey(keyId: "SIMKEY0002", publicKey: privateKey.publicKey)
        let tokens = try AppStoreServerAPITokenProvider(
            key: try AppStoreSigningKey(pemRepresentation: privateKey.pemRepresentation, keyId: "SIMKEY0002"),
            issuerId: "57246542-96fe-1a63-e053-0824d011072a", bundleId: Harness.bundleId, clock: h.simulator.clock)
        return try await loopbackRequest(
            .PUT, h.endpoints.baseURL + "/inApps/v2/transactions/consumption/\(transactionId)", json: json,
            bearer: try tokens.bearerToken())
    }

    static let valid = #"{"customerConsented": true, "deliveryStatus": "DELIVERED", "sampleContentProvided": false"#

    @Test func eachBadFieldHasItsError() async throws {
        try await Harness.run { h in
            let coins = try h.appStore.purchase(customer: "ana", product: "coins.100").transactionId
            let subscription = try h.appStore.purchase(customer: "ana", product: "pro.monthly").transactionId
            let cases: [(transaction: String, body: String, code: Int64, mentions: String?)] = [
                (coins, #"{"deliveryStatus": "DELIVERED", "sampleContentProvided": false}"#, 4_000_035, nil),
                (
                    coins,
                    #"{"customerConsented": false, "deliveryStatus": "DELIVERED", "sampleContentProvided": false}"#,
                    4_000_035, nil
                ),
                (
                    coins,
                    #"{"customerConsented": "true", "deliveryStatus": "DELIVERED", "sampleContentProvided": false}"#,
                    4_000_035, nil
                ),
                (coins, #"{"customerConsented": true, "deliveryStatus": "DELIVERED"}"#, 4_000_041, nil),
                (
                    coins, #"{"customerConsented": true, "deliveryStatus": "DELIVERED", "sampleContentProvided": 0}"#,
                    4_000_041, nil
                ),
                (coins, #"{"customerConsented": true, "sampleContentProvided": false}"#, 4_000_036, nil),
                (
                    coins, #"{"customerConsented": true, "deliveryStatus": "LOST", "sampleContentProvided": false}"#,
                    4_000_036, nil
                ),
                (coins, Self.valid + #", "consumptionPercentage": 100001}"#, 4_000_000, "OutOfRange"),
                (coins, Self.valid + #", "consumptionPercentage": "half"}"#, 4_000_000, "OutOfRange"),
                (coins, Self.valid + #", "consumptionPercentage": 12.5}"#, 4_000_000, nil),
                (coins, Self.valid + #", "refundPreference": "MAYBE"}"#, 4_000_000, "InvalidRefundPreference"),
                (coins, Self.valid + #", "refundPreference": "GRANT_PRORATED"}"#, 4_000_000, "OutOfRange"),
                (
                    coins, Self.valid + #", "refundPreference": "GRANT_PRORATED", "consumptionPercentage": 100000}"#,
                    4_000_000, "OutOfRange"
                ),
                (
                    coins,
                    #"{"customerConsented": true, "deliveryStatus": "UNDELIVERED_OTHER", "sampleContentProvided": false, "consumptionPercentage": 10}"#,
                    4_000_000, "UndeliveredConsumptionPercentageNonZero"
                ),
                (subscription, Self.valid + #", "consumptionPercentage": 0}"#, 4_000_209, nil),
            ]
            for item in cases {
                let answer = try await send(h, item.transaction, item.body)
                #expect(answer.status == 400, "\(item.body)")
                #expect((answer.body["errorCode"] as? NSNumber)?.int64Value == item.code, "\(item.body)")
                if let mentions = item.mentions {
                    #expect((answer.body["errorMessage"] as? String)?.contains(mentions) == true, "\(item.body)")
                }
            }
            #expect(h.appStore.consumptionAnswers(transactionId: coins).isEmpty)
            #expect(h.appStore.consumptionAnswers(transactionId: subscription).isEmpty)

            // What Apple takes: a subscription without a percentage, prorated or not.
            let accepted = try await send(h, subscription, Self.valid + #", "refundPreference": "GRANT_PRORATED"}"#)
            #expect(accepted.status == 202)
            #expect(h.appStore.consumptionAnswers(transactionId: subscription).count == 1)
            // No refund was requested: nothing is decided.
            #expect(h.appStore.consumptionAnswers(transactionId: subscription).first?.decision == nil)
        }
    }

    @Test(arguments: [
        (#", "refundPreference": "DECLINE", "consumptionPercentage": 10000}"#, RefundDecision.decline),
        (#", "refundPreference": "GRANT_FULL", "consumptionPercentage": 90000}"#, .refund(percentage: 100_000)),
        (#", "refundPreference": "GRANT_PRORATED", "consumptionPercentage": 25000}"#, .refund(percentage: 75_000)),
        (#", "consumptionPercentage": 20000}"#, .refund(percentage: 100_000)),
        (#", "consumptionPercentage": 60000}"#, .decline),
    ])
    func anOpenRefundRequestIsDecidedByThePreference(tail: String, expected: RefundDecision) async throws {
        try await Harness.run { h in
            let coins = try h.appStore.purchase(customer: "bo", product: "coins.100").transactionId
            try h.appStore.requestRefund(transactionId: coins)
            #expect(try await send(h, coins, Self.valid + tail).status == 202)
            let answers = h.appStore.consumptionAnswers(transactionId: coins)
            #expect(answers.count == 1)
            #expect(answers.first?.decision == expected)
            let transaction = try #require(h.appStore.transaction(coins))
            switch expected {
            case .decline:
                #expect(transaction.revocationDate == nil)
                #expect(h.appStore.notifications.last?.payload.notificationType == .refundDeclined)
            case .refund(let percentage):
                #expect(transaction.revocationPercentage == percentage)
                #expect(transaction.revocationType == (percentage == 100_000 ? .refundFull : .refundProrated))
                #expect(h.appStore.notifications.last?.payload.notificationType == .refund)
            }
            // A second answer is recorded and decides nothing more.
            #expect(try await send(h, coins, Self.valid + tail).status == 202)
            #expect(h.appStore.consumptionAnswers(transactionId: coins).count == 2)
            #expect(h.appStore.consumptionAnswers(transactionId: coins).last?.decision == nil)
            // The control API shows what was received.
            let listed = try await loopbackRequest(
                .GET, h.endpoints.baseURL + "/control/appstore/transactions/\(coins)/consumption")
            #expect(listed.status == 200)
            #expect((listed.body["answers"] as? [[String: Any]])?.count == 2)
        }
    }
}
