import AppStoreServer
import Foundation
import Synchronization
import Testing

@Suite struct VerifyReceiptTests {
    static let secret = "s3cr3t-shared-secret-0123456789"

    // MARK: - Request encoding

    @Test func requestEncodesTheDocumentedKeys() throws {
        let request = VerifyReceiptRequest(
            receiptData: "MIIB", password: VerifyReceiptSharedSecret(Self.secret), excludeOldTransactions: true)
        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(request)) as? [String: Any]
        #expect(json?.count == 3)
        #expect(json?["receipt-data"] as? String == "MIIB")
        #expect(json?["password"] as? String == Self.secret)
        #expect(json?["exclude-old-transactions"] as? Bool == true)

        let minimal = try JSONEncoder().encode(VerifyReceiptRequest(receiptData: "MIIB"))
        #expect(String(decoding: minimal, as: UTF8.self) == #"{"receipt-data":"MIIB"}"#)
    }

    @Test func theSecretNeverAppearsInDescriptions() {
        let secret = VerifyReceiptSharedSecret(Self.secret)
        let request = VerifyReceiptRequest(receiptData: "MIIB", password: secret)
        let configuration = VerifyReceiptClient.Configuration(sharedSecret: secret)
        var dumped = ""
        dump(configuration, to: &dumped)
        dump(request, to: &dumped)
        for text in [
            "\(secret)", String(reflecting: secret), "\(request)", String(reflecting: request), "\(configuration)",
            String(reflecting: configuration), dumped,
        ] {
            #expect(!text.contains(Self.secret), "\(text)")
        }
        #expect("\(request)".contains("<redacted>"))
    }

    // MARK: - Response decoding

    static let responseJSON = """
        {
          "status": 0,
          "environment": "Sandbox",
          "receipt": {
            "receipt_type": "ProductionSandbox", "adam_id": 0, "app_item_id": 0, "bundle_id": "com.example",
            "application_version": "1", "download_id": 0, "version_external_identifier": 0,
            "receipt_creation_date": "2024-02-15 10:00:05 Etc/GMT", "receipt_creation_date_ms": "1707991205000",
            "request_date_ms": "1707991300000", "original_purchase_date_ms": "1375340400000",
            "original_application_version": "1.0",
            "in_app": [
              { "quantity": "1", "product_id": "com.example.monthly", "transaction_id": "2000000100000002",
                "original_transaction_id": "2000000100000001", "purchase_date_ms": "1707991200000",
                "original_purchase_date_ms": "1705312800000", "expires_date_ms": "1710496800000",
                "web_order_line_item_id": "2000000000000002", "is_trial_period": "false",
                "is_in_intro_offer_period": "false", "in_app_ownership_type": "PURCHASED",
                "a_future_key": {"nested": [1, 2, 3]} }
            ]
          },
          "latest_receipt_info": [
            { "quantity": "1", "product_id": "com.example.monthly", "transaction_id": "2000000100000002",
              "original_transaction_id": "2000000100000001", "purchase_date_ms": "1707991200000",
              "expires_date_ms": "1710496800000", "subscription_group_identifier": "20000001",
              "is_upgraded": "false", "app_account_token": "7e3fb20b-4cdb-47cc-936d-99d65f608138",
              "cancellation_date_ms": "1708000000000", "cancellation_reason": "0" }
          ],
          "latest_receipt": "MIIUVAYJKoZIhvcNAQcCoIIURTCCFEEC",
          "pending_renewal_info": [
            { "auto_renew_product_id": "com.example.yearly", "original_transaction_id": "2000000100000001",
              "product_id": "com.example.monthly", "auto_renew_status": "1", "expiration_intent": "7",
              "is_in_billing_retry_period": "0", "grace_period_expires_date_ms": "1710500000000" }
          ],
          "unknown_top_level_key": true
        }
        """

    @Test func responseDecodesTheDocumentedMembers() throws {
        let response = try JSONDecoder().decode(VerifyReceiptResponse.self, from: Data(Self.responseJSON.utf8))
        #expect(response.status == .valid)
        #expect(response.environment == .sandbox)
        #expect(response.isRetryable == nil)
        #expect(response.receipt?.bundleId == "com.example")
        #expect(response.receipt?.receiptType == "ProductionSandbox")
        #expect(response.receipt?.receiptCreationDate == Date(timeIntervalSince1970: 1_707_991_205))
        let inApp = try #require(response.receipt?.inApp?.first)
        #expect(inApp.transactionId == "2000000100000002")
        #expect(inApp.originalTransactionId == "2000000100000001")
        #expect(inApp.purchaseDate == Date(timeIntervalSince1970: 1_707_991_200))
        #expect(inApp.expiresDate == Date(timeIntervalSince1970: 1_710_496_800))
        #expect(inApp.inAppOwnershipType == "PURCHASED")
        let latest = try #require(response.latestReceiptInfo?.first)
        #expect(latest.subscriptionGroupIdentifier == "20000001")
        #expect(latest.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(latest.cancellationDate == Date(timeIntervalSince1970: 1_708_000_000))
        #expect(response.latestReceipt == "MIIUVAYJKoZIhvcNAQcCoIIURTCCFEEC")
        let renewal = try #require(response.pendingRenewalInfo?.first)
        #expect(renewal.autoRenewProductId == "com.example.yearly")
        // An expiration intent Apple has not documented (yet) is kept as sent.
        #expect(renewal.expirationIntent == "7")
        #expect(renewal.gracePeriodExpiresDate == Date(timeIntervalSince1970: 1_710_500_000))
        // Round trip: what the store simulator will serve decodes to the same value.
        let encoded = try JSONEncoder().encode(response)
        #expect(try JSONDecoder().decode(VerifyReceiptResponse.self, from: encoded) == response)
    }

    @Test func errorResponsesKeepUnknownStatusesAndReadIsRetryableEitherWay() throws {
        let decode = { (json: String) in try JSONDecoder().decode(VerifyReceiptResponse.self, from: Data(json.utf8)) }
        let unknown = try decode(#"{"status": 21150, "is-retryable": true}"#)
        #expect(unknown.status.rawValue == 21150)
        #expect(unknown.status.isInternalDataAccessError)
        #expect(unknown.isRetryable == true)
        #expect(try decode(#"{"status": 21199, "is-retryable": 0}"#).isRetryable == false)
        #expect(try decode(#"{"status": 21199, "is-retryable": 1}"#).isRetryable == true)
        #expect(
            try decode(#"{"status": 21007, "environment": "Production"}"#).status == .sandboxReceiptSentToProduction)
        #expect(try decode(#"{"status": 21002}"#).receipt == nil)
        #expect(throws: DecodingError.self) { try decode(#"{"environment": "Sandbox"}"#) }
        #expect(throws: DecodingError.self) { try decode(#"{"status": "zero"}"#) }
    }

    // MARK: - Routing and retry decisions (pure)

    @Test func sandboxReceiptAtProductionGoesToSandboxOnce() {
        let policy = VerifyReceiptRetryPolicy()
        let sandboxReceipt = VerifyReceiptOutcome.status(.sandboxReceiptSentToProduction, isRetryable: nil)
        #expect(policy.nextStep(after: sandboxReceipt, at: .production, attempt: 1) == .retry(.sandbox, after: .zero))
        // Even on the last production attempt: the switch is not a retry.
        #expect(policy.nextStep(after: sandboxReceipt, at: .production, attempt: 3) == .retry(.sandbox, after: .zero))
        // Never bounced back: the sandbox's 21007 or 21008 is the answer.
        #expect(policy.nextStep(after: sandboxReceipt, at: .sandbox, attempt: 1) == .finish)
        let productionReceipt = VerifyReceiptOutcome.status(.productionReceiptSentToSandbox, isRetryable: nil)
        #expect(policy.nextStep(after: productionReceipt, at: .sandbox, attempt: 1) == .finish)
        #expect(policy.nextStep(after: .status(.valid, isRetryable: nil), at: .production, attempt: 1) == .finish)
        #expect(
            policy.nextStep(after: .status(.notAuthenticated, isRetryable: nil), at: .production, attempt: 1) == .finish
        )
        #expect(
            policy.nextStep(after: .status(.malformedReceiptData, isRetryable: nil), at: .production, attempt: 1)
                == .finish)
    }

    @Test func temporaryFailuresAreRetriedWithBoundedBackoff() {
        let policy = VerifyReceiptRetryPolicy(
            maximumAttempts: 4, initialBackoff: .milliseconds(500), maximumBackoff: .milliseconds(1500))
        let temporary: [VerifyReceiptOutcome] = [
            .status(VerifyReceiptStatus(rawValue: 21100), isRetryable: nil),
            .status(VerifyReceiptStatus(rawValue: 21199), isRetryable: true),
            .status(.serverUnavailable, isRetryable: nil),
            .status(.internalDataAccessError, isRetryable: nil),
            .httpStatus(500), .httpStatus(503), .transportFailure,
        ]
        for outcome in temporary {
            #expect(
                policy.nextStep(after: outcome, at: .sandbox, attempt: 1) == .retry(.sandbox, after: .milliseconds(500))
            )
            #expect(
                policy.nextStep(after: outcome, at: .production, attempt: 2) == .retry(.production, after: .seconds(1)))
            #expect(
                policy.nextStep(after: outcome, at: .production, attempt: 3)
                    == .retry(.production, after: .milliseconds(1500)))
            #expect(policy.nextStep(after: outcome, at: .production, attempt: 4) == .finish, "\(outcome)")
        }
        let final: [VerifyReceiptOutcome] = [
            .status(VerifyReceiptStatus(rawValue: 21100), isRetryable: false),
            .status(VerifyReceiptStatus(rawValue: 21200), isRetryable: nil),
            .httpStatus(400), .httpStatus(404), .httpStatus(200), .unusableBody,
        ]
        for outcome in final {
            #expect(policy.nextStep(after: outcome, at: .production, attempt: 1) == .finish, "\(outcome)")
        }
        #expect(VerifyReceiptRetryPolicy(maximumAttempts: 0).maximumAttempts == 1)
        #expect(policy.backoff(beforeAttempt: 100) == .milliseconds(1500))
    }

    // MARK: - The client's loop, over a scripted transport (the HTTP-level test comes with the store simulator)

    struct Unreachable: Error {}

    final class ScriptedTransport: VerifyReceiptTransport {
        enum Answer: Sendable {
            case http(Int, String)
            case failure
        }
        let script: Mutex<[Answer]>
        let requests = Mutex<[(url: String, body: [UInt8])]>([])

        init(_ answers: [Answer]) { script = Mutex(answers) }

        func post(json body: [UInt8], to url: String) async throws -> VerifyReceiptHTTPResponse {
            requests.withLock { $0.append((url, body)) }
            let answer = script.withLock { $0.isEmpty ? Answer.failure : $0.removeFirst() }
            switch answer {
            case .http(let status, let body):
                return VerifyReceiptHTTPResponse(statusCode: status, body: Array(body.utf8))
            case .failure: throw Unreachable()
            }
        }
    }

    static func client(_ transport: ScriptedTransport) -> VerifyReceiptClient {
        VerifyReceiptClient(
            configuration: .init(
                productionURL: "http://127.0.0.1:1/production", sandboxURL: "http://127.0.0.1:1/sandbox",
                sharedSecret: VerifyReceiptSharedSecret(secret), excludeOldTransactions: true,
                retryPolicy: VerifyReceiptRetryPolicy(maximumAttempts: 3, initialBackoff: .zero)),
            transport: transport)
    }

    @Test func clientFollowsSandboxStatusToTheSandboxEndpoint() async throws {
        let transport = ScriptedTransport([
            .http(200, #"{"status": 21007}"#),
            .http(200, #"{"status": 0, "environment": "Sandbox", "receipt": {"bundle_id": "com.example"}}"#),
        ])
        let response = try await Self.client(transport).verify(receiptData: "MIIB")
        #expect(response.status == .valid)
        #expect(response.environment == .sandbox)
        let requests = transport.requests.withLock { $0 }
        #expect(requests.map(\.url) == ["http://127.0.0.1:1/production", "http://127.0.0.1:1/sandbox"])
        let body = try JSONSerialization.jsonObject(with: Data(requests[0].body)) as? [String: Any]
        #expect(body?["password"] as? String == Self.secret)
        #expect(body?["exclude-old-transactions"] as? Bool == true)
        #expect(requests[0].body == requests[1].body)
    }

    @Test func clientRetriesTemporaryFailuresAndReturnsApplesStatus() async throws {
        let transport = ScriptedTransport([
            .http(503, ""), .failure, .http(200, #"{"status": 21007}"#),
            .http(200, #"{"status": 21101, "is-retryable": true}"#), .http(200, #"{"status": 21003}"#),
        ])
        let response = try await Self.client(transport).verify(receiptData: "MIIB")
        // A non-zero status is an answer, not an error.
        #expect(response.status == .notAuthenticated)
        #expect(transport.requests.withLock { $0.map(\.url) }.count == 5)
    }

    @Test func clientGivesUpWithoutLeakingTheSecret() async {
        let outcomes: [([ScriptedTransport.Answer], VerifyReceiptError.Reason, Int)] = [
            ([.http(502, "bad gateway"), .http(503, ""), .http(500, "")], .unavailable, 3),
            ([.failure, .failure, .failure], .unavailable, 3),
            ([.http(403, "")], .httpError, 1),
            ([.http(200, "<html>")], .malformedResponse, 1),
            ([.http(200, #"{"status": 21007}"#), .http(200, "{}")], .malformedResponse, 2),
        ]
        for (answers, expected, calls) in outcomes {
            let transport = ScriptedTransport(answers)
            do {
                _ = try await Self.client(transport).verify(receiptData: "MIIB")
                Issue.record("expected \(expected)")
            } catch {
                #expect(error.reason == expected)
                #expect(error.isRetryable == (expected == .unavailable))
                #expect(!"\(error)".contains(Self.secret))
                #expect(!"\(error)".contains("MIIB"))
            }
            #expect(transport.requests.withLock { $0.count } == calls)
        }
    }
}
