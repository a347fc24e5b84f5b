import Foundation
public import Logging

/// The deprecated verifyReceipt endpoint, for apps not yet migrated to the App Store Server API.
///
/// Sends `{receipt-data, password, exclude-old-transactions}` to production first and follows
/// ``VerifyReceiptRetryPolicy``: a sandbox receipt (status 21007) goes to the sandbox endpoint, and
/// temporary failures are retried a bounded number of times with exponential backoff. Any JSON body
/// Apple returns is the result, whatever its `status`; only "no usable body" is thrown.
///
/// The shared secret is sent in the body only: it is never logged nor put in an error.
public struct VerifyReceiptClient: Sendable {
    /// Endpoints, secret and retry behaviour.
    public struct Configuration: Sendable {
        /// Apple's production endpoint.
        public static let appleProductionURL = "https://buy.itunes.apple.com/verifyReceipt"
        /// Apple's sandbox endpoint.
        public static let appleSandboxURL = "https://sandbox.itunes.apple.com/verifyReceipt"

        /// The production endpoint's full URL (overridable, e.g. for the store simulator).
        public var productionURL: String
        /// The sandbox endpoint's full URL.
        public var sandboxURL: String
        /// The app's shared secret (`password`), needed for auto-renewable subscriptions.
        public var sharedSecret: VerifyReceiptSharedSecret?
        /// `exclude-old-transactions`; left out of the request when `nil`.
        public var excludeOldTransactions: Bool?
        /// Retries and the production → sandbox rule.
        public var retryPolicy: VerifyReceiptRetryPolicy

        /// A configuration; the defaults are Apple's endpoints and ``VerifyReceiptRetryPolicy``'s defaults.
        public init(
            productionURL: String = appleProductionURL, sandboxURL: String = appleSandboxURL,
            sharedSecret: VerifyReceiptSharedSecret? = nil, excludeOldTransactions: Bool? = nil,
            retryPolicy: VerifyReceiptRetryPolicy = VerifyReceiptRetryPolicy()
        ) {
            self.productionURL = productionURL
            self.sandboxURL = sandboxURL
            self.sharedSecret = sharedSecret
            self.excludeOldTransactions = excludeOldTransactions
            self.retryPolicy = retryPolicy
        }

        /// The URL of `endpoint`.
        public func url(of endpoint: VerifyReceiptEndpoint) -> String {
            endpoint == .production ? productionURL : sandboxURL
        }
    }

    /// Endpoints, secret and retry behaviour.
    public let configuration: Configuration
    let transport: any VerifyReceiptTransport
    let logger: Logger

    /// A client sending through `transport` (AsyncHTTPClient's shared client by default).
    public init(
        configuration: Configuration = Configuration(),
        transport: any VerifyReceiptTransport = HTTPVerifyReceiptTransport(),
        logger: Logger = Logger(label: "storekeeper.verify-receipt")
    ) {
        self.configuration = configuration
        self.transport = transport
        self.logger = logger
    }

    /// The request body this client sends for `receiptData` (base64, as the app sent it).
    public func request(for receiptData: String) -> VerifyReceiptRequest {
        VerifyReceiptRequest(
            receiptData: receiptData, password: configuration.sharedSecret,
            excludeOldTransactions: configuration.excludeOldTransactions)
    }

    /// Verifies `receiptData` (base64) and returns Apple's answer; read its `status` (0 is valid).
    public func verify(receiptData: String) async throws(VerifyReceiptError) -> VerifyReceiptResponse {
        let body: [UInt8]
        do {
            body = Array(try JSONEncoder().encode(request(for: receiptData)))
        } catch {
            throw VerifyReceiptError(.malformedRequest, "the request body could not be encoded")
        }
        var endpoint = VerifyReceiptEndpoint.production
        var attempt = 1
        while true {
            let (outcome, result) = await attemptOnce(body: body, at: endpoint)
            switch configuration.retryPolicy.nextStep(after: outcome, at: endpoint, attempt: attempt) {
            case .finish:
                return try result.get()
            case .retry(let next, let delay):
                logger.debug(
                    "verifyReceipt: retrying",
                    metadata: [
                        "endpoint": "\(endpoint.rawValue)", "attempt": "\(attempt)", "outcome": "\(outcome)",
                        "next": "\(next.rawValue)", "delay": "\(delay)",
                    ])
                attempt = next == endpoint ? attempt + 1 : 1
                endpoint = next
                if delay > .zero {
                    do {
                        try await Task.sleep(for: delay)
                    } catch {
                        throw VerifyReceiptError(.cancelled, "cancelled while waiting to retry verifyReceipt")
                    }
                }
            }
        }
    }

    /// One POST: what the policy decides on, and what the call would return if it stopped here.
    private func attemptOnce(
        body: [UInt8], at endpoint: VerifyReceiptEndpoint
    ) async -> (VerifyReceiptOutcome, Result<VerifyReceiptResponse, VerifyReceiptError>) {
        let endpointName = "the \(endpoint.rawValue) verifyReceipt endpoint"
        let answer: VerifyReceiptHTTPResponse
        do {
            answer = try await transport.post(json: body, to: configuration.url(of: endpoint))
        } catch let error as VerifyReceiptResponseTooLargeError {
            let failure = VerifyReceiptError(
                .responseTooLarge, "\(endpointName) answered more than \(error.limit) bytes")
            return (.unusableBody, .failure(failure))
        } catch {
            let failure = VerifyReceiptError(.unavailable, "\(endpointName) could not be reached: \(error)")
            return (.transportFailure, .failure(failure))
        }
        guard answer.statusCode == 200 else {
            let reason: VerifyReceiptError.Reason = (500...599).contains(answer.statusCode) ? .unavailable : .httpError
            let failure = VerifyReceiptError(reason, "\(endpointName) answered HTTP \(answer.statusCode)")
            return (.httpStatus(answer.statusCode), .failure(failure))
        }
        do {
            let response = try JSONDecoder().decode(VerifyReceiptResponse.self, from: Data(answer.body))
            return (response.outcome, .success(response))
        } catch {
            let failure = VerifyReceiptError(
                .malformedResponse, "\(endpointName) answered a body that is not a verifyReceipt response")
            return (.unusableBody, .failure(failure))
        }
    }
}
