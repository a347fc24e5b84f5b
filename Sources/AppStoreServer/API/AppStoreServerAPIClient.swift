public import AsyncHTTPClient
public import Foundation
public import NIOCore
import NIOHTTP1

/// A client of the App Store Server API on AsyncHTTPClient.
///
/// Every signed field of a response is verified with the ``SignedDataVerifier`` before it is
/// returned; nothing unverified leaves the client. Retryable failures (429 with `Retry-After`,
/// Apple's retryable error codes, other 5xx, timeouts, network errors) are retried under the
/// ``RetryPolicy``; requests go no faster than the optional ``RateLimiter``.
public struct AppStoreServerAPIClient: Sendable {
    /// Where and how to call.
    public struct Configuration: Sendable {
        /// `https://api.storekit.itunes.apple.com` in production, the sandbox URL in sandbox, or the
        /// store simulator's base URL.
        public var baseURL: String
        public var retryPolicy: RetryPolicy
        /// Optional client-side limit (Apple's limits are per endpoint and per hour).
        public var rateLimiter: RateLimiter?
        /// Optional quota asked right before each request goes out (bucket
        /// ``StoreCore/QuotaBucket/appStoreServerAPI``); a server with several instances passes
        /// one counted in its database, per app.
        public var quota: (any RequestQuota)?
        /// Timeout of one attempt.
        public var requestTimeout: TimeAmount
        /// The largest response body accepted.
        public var maxResponseBytes: Int

        public init(
            baseURL: String, retryPolicy: RetryPolicy = RetryPolicy(), rateLimiter: RateLimiter? = nil,
            quota: (any RequestQuota)? = nil, requestTimeout: TimeAmount = .seconds(30),
            maxResponseBytes: Int = 8 * 1024 * 1024
        ) {
            self.baseURL = baseURL
            self.retryPolicy = retryPolicy
            self.rateLimiter = rateLimiter
            self.quota = quota
            self.requestTimeout = requestTimeout
            self.maxResponseBytes = maxResponseBytes
        }

        /// Apple's production endpoint.
        public static let productionBaseURL = "https://api.storekit.itunes.apple.com"
        /// Apple's sandbox endpoint.
        public static let sandboxBaseURL = "https://api.storekit-sandbox.itunes.apple.com"
    }

    public let configuration: Configuration
    let authorization: any AppStoreAPIAuthorization
    let verifier: SignedDataVerifier
    let httpClient: HTTPClient

    public init(
        configuration: Configuration, authorization: any AppStoreAPIAuthorization, verifier: SignedDataVerifier,
        httpClient: HTTPClient = .shared
    ) {
        self.configuration = configuration
        self.authorization = authorization
        self.verifier = verifier
        self.httpClient = httpClient
    }

    // MARK: Transactions

    /// Get Transaction Info.
    public func getTransactionInfo(transactionId: String) async throws -> JWSTransaction {
        let response: TransactionInfoResponse = try await send(
            .GET, "/inApps/v1/transactions/\(segment(transactionId))")
        return try await verifier.verify(try required(response.signedTransactionInfo, "signedTransactionInfo"))
    }

    /// A page of Get Transaction History (v2).
    public func getTransactionHistory(
        transactionId: String, request: TransactionHistoryRequest = TransactionHistoryRequest(), revision: String? = nil
    ) async throws -> TransactionPage {
        let response: HistoryResponse = try await send(
            .GET, "/inApps/v2/history/\(segment(transactionId))", query: request.queryItems(revision: revision))
        return TransactionPage(
            transactions: try await verifyAll(response.signedTransactions ?? []),
            revision: response.revision, hasMore: response.hasMore ?? false)
    }

    /// Every transaction of a customer's history, page by page (by revision).
    public func transactionHistory(
        transactionId: String, request: TransactionHistoryRequest = TransactionHistoryRequest()
    ) -> Paged<JWSTransaction> {
        Paged { token in
            let page = try await getTransactionHistory(transactionId: transactionId, request: request, revision: token)
            return (page.transactions, page.hasMore ? page.revision : nil)
        }
    }

    /// Get All Subscription Statuses, optionally only those with the given statuses.
    public func getAllSubscriptionStatuses(
        transactionId: String, status: [SubscriptionStatus] = []
    ) async throws -> [SubscriptionGroupStatus] {
        let response: StatusResponse = try await send(
            .GET, "/inApps/v1/subscriptions/\(segment(transactionId))",
            query: status.map { URLQueryItem(name: "status", value: String($0.rawValue)) })
        var groups: [SubscriptionGroupStatus] = []
        for group in response.data ?? [] {
            var subscriptions: [SubscriptionGroupStatus.Subscription] = []
            for item in group.lastTransactions ?? [] {
                subscriptions.append(
                    .init(
                        status: item.status, originalTransactionId: item.originalTransactionId,
                        transaction: try await item.signedTransactionInfo.asyncMap { try await verifier.verify($0) },
                        renewalInfo: try await item.signedRenewalInfo.asyncMap { try await verifier.verify($0) }))
            }
            groups.append(
                .init(subscriptionGroupIdentifier: group.subscriptionGroupIdentifier, subscriptions: subscriptions))
        }
        return groups
    }

    /// A page of Get Refund History (v2).
    public func getRefundHistory(transactionId: String, revision: String? = nil) async throws -> TransactionPage {
        let response: RefundHistoryResponse = try await send(
            .GET, "/inApps/v2/refund/lookup/\(segment(transactionId))",
            query: revision.map { [URLQueryItem(name: "revision", value: $0)] } ?? [])
        return TransactionPage(
            transactions: try await verifyAll(response.signedTransactions ?? []),
            revision: response.revision, hasMore: response.hasMore ?? false)
    }

    /// Every refunded transaction of a customer, page by page.
    public func refundHistory(transactionId: String) -> Paged<JWSTransaction> {
        Paged { token in
            let page = try await getRefundHistory(transactionId: transactionId, revision: token)
            return (page.transactions, page.hasMore ? page.revision : nil)
        }
    }

    /// Get App Transaction Info.
    public func getAppTransactionInfo(transactionId: String) async throws -> AppTransaction {
        let response: AppTransactionInfoResponse = try await send(
            .GET, "/inApps/v1/transactions/appTransactions/\(segment(transactionId))")
        return try await verifier.verify(try required(response.signedAppTransactionInfo, "signedAppTransactionInfo"))
    }

    /// Look Up Order ID: the transactions of an order id from a customer's receipt e-mail.
    public func lookUpOrderId(_ orderId: String) async throws -> (
        status: OrderLookupStatus?, transactions: [JWSTransaction]
    ) {
        let response: OrderLookupResponse = try await send(.GET, "/inApps/v1/lookup/\(segment(orderId))")
        return (response.status, try await verifyAll(response.signedTransactions ?? []))
    }

    /// Finish Transaction: tells the App Store a transaction's content was delivered.
    public func finishTransaction(transactionId: String) async throws {
        try await sendWithoutResponse(.POST, "/inApps/v1/transactions/\(segment(transactionId))/finish")
    }

    // MARK: Notifications

    /// A page of Get Notification History; each notification is verified (nested fields included).
    public func getNotificationHistory(
        _ request: NotificationHistoryRequest, paginationToken: String? = nil
    ) async throws -> NotificationHistoryPage {
        let response: NotificationHistoryResponse = try await send(
            .POST, "/inApps/v1/notifications/history",
            query: paginationToken.map { [URLQueryItem(name: "paginationToken", value: $0)] } ?? [], body: request)
        var entries: [NotificationHistoryPage.Entry] = []
        for item in response.notificationHistory ?? [] {
            let signedPayload = try required(item.signedPayload, "signedPayload")
            entries.append(
                .init(
                    notification: try await verifier.verifyNotification(signedPayload), signedPayload: signedPayload,
                    sendAttempts: item.sendAttempts ?? []))
        }
        return NotificationHistoryPage(
            entries: entries, paginationToken: response.paginationToken, hasMore: response.hasMore ?? false)
    }

    /// Every notification of the history matching `request`, page by page.
    public func notificationHistory(_ request: NotificationHistoryRequest) -> Paged<NotificationHistoryPage.Entry> {
        Paged { token in
            let page = try await getNotificationHistory(request, paginationToken: token)
            return (page.entries, page.hasMore ? page.paginationToken : nil)
        }
    }

    /// Request a Test Notification; returns the token to check its status with.
    public func requestTestNotification() async throws -> String {
        let response: SendTestNotificationResponse = try await send(.POST, "/inApps/v1/notifications/test")
        return try required(response.testNotificationToken, "testNotificationToken")
    }

    /// Get Test Notification Status.
    public func getTestNotificationStatus(
        token: String
    ) async throws -> (notification: VerifiedNotification, sendAttempts: [SendAttemptItem]) {
        let response: CheckTestNotificationResponse = try await send(
            .GET, "/inApps/v1/notifications/test/\(segment(token))")
        let notification = try await verifier.verifyNotification(try required(response.signedPayload, "signedPayload"))
        return (notification, response.sendAttempts ?? [])
    }

    // MARK: Answers to the App Store

    /// Send Consumption Information (v2), in answer to a CONSUMPTION_REQUEST.
    public func sendConsumptionInformation(transactionId: String, _ request: ConsumptionRequest) async throws {
        try await sendWithoutResponse(
            .PUT, "/inApps/v2/transactions/consumption/\(segment(transactionId))", body: request)
    }

    /// Send Consumption Information V1 (deprecated by Apple).
    @available(
        *, deprecated, message: "Apple deprecated Send Consumption Information V1; use sendConsumptionInformation"
    )
    public func sendConsumptionInformationV1(originalTransactionId: String, _ request: ConsumptionRequestV1)
        async throws
    {
        try await sendWithoutResponse(
            .PUT, "/inApps/v1/transactions/consumption/\(segment(originalTransactionId))", body: request)
    }

    /// Set App Account Token on a purchase made outside the app.
    public func setAppAccountToken(originalTransactionId: String, appAccountToken: UUID) async throws {
        try await sendWithoutResponse(
            .PUT, "/inApps/v1/transactions/\(segment(originalTransactionId))/appAccountToken",
            body: UpdateAppAccountTokenRequest(appAccountToken: appAccountToken.uuidString.lowercased()))
    }

    /// Extend a Subscription Renewal Date.
    public func extendSubscriptionRenewalDate(
        originalTransactionId: String, _ request: ExtendRenewalDateRequest
    ) async throws -> ExtendRenewalDateResponse {
        try await send(.PUT, "/inApps/v1/subscriptions/extend/\(segment(originalTransactionId))", body: request)
    }

    /// Extend Subscription Renewal Dates for All Active Subscribers.
    public func extendRenewalDateForAllActiveSubscribers(
        _ request: MassExtendRenewalDateRequest
    ) async throws -> MassExtendRenewalDateResponse {
        try await send(.POST, "/inApps/v1/subscriptions/extend/mass", body: request)
    }

    /// Get Status of Subscription Renewal Date Extensions.
    public func getStatusOfSubscriptionRenewalDateExtensions(
        productId: String, requestIdentifier: String
    ) async throws -> MassExtendRenewalDateStatusResponse {
        try await send(.GET, "/inApps/v1/subscriptions/extend/mass/\(segment(productId))/\(segment(requestIdentifier))")
    }

    // MARK: Transport

    private func verifyAll(_ tokens: [String]) async throws -> [JWSTransaction] {
        var transactions: [JWSTransaction] = []
        transactions.reserveCapacity(tokens.count)
        for token in tokens { transactions.append(try await verifier.verify(token)) }
        return transactions
    }

    private func required(_ value: String?, _ field: String) throws -> String {
        guard let value else {
            throw AppStoreServerAPIError(
                httpStatus: 200, code: nil, message: "the response has no \(field)", isRetryable: false)
        }
        return value
    }

    /// A path segment: identifiers are opaque, but nothing may change the path.
    private func segment(_ value: String) throws -> String {
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-_."))
        guard !value.isEmpty, value.unicodeScalars.allSatisfy(allowed.contains) else {
            throw AppStoreServerAPIError(
                httpStatus: nil, code: nil, message: "\"\(value.prefix(64))\" is not a valid identifier",
                isRetryable: false)
        }
        return value
    }

    private func send<Response: Decodable>(
        _ method: HTTPMethod, _ path: String, query: [URLQueryItem] = [],
        body: (some Encodable & Sendable)? = nil as String?
    ) async throws -> Response {
        let data = try await perform(method, path, query: query, body: body)
        do {
            return try AppStoreJSON.makeDecoder().decode(Response.self, from: data)
        } catch {
            throw AppStoreServerAPIError(
                httpStatus: 200, code: nil, message: "the response is not a valid \(Response.self)", isRetryable: false)
        }
    }

    private func sendWithoutResponse(
        _ method: HTTPMethod, _ path: String, body: (some Encodable & Sendable)? = nil as String?
    ) async throws {
        _ = try await perform(method, path, query: [], body: body)
    }

    private func perform(
        _ method: HTTPMethod, _ path: String, query: [URLQueryItem], body: (some Encodable & Sendable)?
    ) async throws -> Data {
        guard var components = URLComponents(string: configuration.baseURL + path) else {
            throw AppStoreServerAPIError(
                httpStatus: nil, code: nil, message: "invalid base URL \(configuration.baseURL)", isRetryable: false)
        }
        if !query.isEmpty { components.queryItems = query }
        guard let url = components.string else {
            throw AppStoreServerAPIError(httpStatus: nil, code: nil, message: "invalid request URL", isRetryable: false)
        }
        let bodyBytes = try body.map { try AppStoreJSON.makeEncoder().encode($0) }
        return try await configuration.retryPolicy.run { (attempt) -> Result<Data, AppStoreServerAPIError> in
            if let limiter = configuration.rateLimiter { try await limiter.acquire() }
            do {
                var (status, headers, data) = try await attemptOnce(method, url: url, body: bodyBytes)
                if status == 401 {
                    // A cached token the App Store no longer accepts: once more with a new token,
                    // within the same attempt.
                    authorization.invalidate()
                    (status, headers, data) = try await attemptOnce(method, url: url, body: bodyBytes)
                }
                if (200..<300).contains(status) { return .success(data) }
                let payload = try? AppStoreJSON.makeDecoder().decode(ErrorPayload.self, from: data)
                return .failure(
                    AppStoreServerAPIError(
                        httpStatus: status, code: payload?.errorCode,
                        message: payload?.errorMessage ?? "\(method.rawValue) \(path) failed",
                        retryAfter: headers.first(name: "Retry-After").flatMap(Double.init), attempts: attempt))
            } catch let error as AppStoreServerAPIError {
                throw error
            } catch let error as QuotaExhausted {
                // The quota's own refusal: nothing was sent.
                throw AppStoreServerAPIError(httpStatus: nil, code: nil, message: error.description, isRetryable: false)
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                return .failure(
                    AppStoreServerAPIError(
                        httpStatus: nil, code: nil, message: "\(method.rawValue) \(path): \(error)", attempts: attempt,
                        isRetryable: true))
            }
        }
    }

    private func attemptOnce(
        _ method: HTTPMethod, url: String, body: Data?
    ) async throws -> (status: Int, headers: HTTPHeaders, body: Data) {
        try await configuration.quota?.acquire(.appStoreServerAPI)
        var request = HTTPClientRequest(url: url)
        request.method = method
        let token: String
        do {
            token = try authorization.bearerToken()
        } catch {
            // A key or configuration problem: retrying will not help, and the error must not echo the key.
            throw AppStoreServerAPIError(
                httpStatus: nil, code: nil, message: "could not make the API token: \(type(of: error))",
                isRetryable: false)
        }
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Accept", value: "application/json")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let response = try await httpClient.execute(request, timeout: configuration.requestTimeout)
        let collected = try await response.body.collect(upTo: configuration.maxResponseBytes)
        return (Int(response.status.code), response.headers, Data(collected.readableBytesView))
    }
}

/// A page of verified transactions.
public struct TransactionPage: Sendable, Hashable {
    public var transactions: [JWSTransaction]
    /// The token of the next page.
    public var revision: String?
    public var hasMore: Bool
}

/// The subscriptions of one group, verified.
public struct SubscriptionGroupStatus: Sendable, Hashable {
    /// One subscription's status with its latest transaction and renewal info.
    public struct Subscription: Sendable, Hashable {
        public var status: SubscriptionStatus?
        public var originalTransactionId: String?
        public var transaction: JWSTransaction?
        public var renewalInfo: JWSRenewalInfo?
    }

    public var subscriptionGroupIdentifier: String?
    public var subscriptions: [Subscription]
}

extension [SubscriptionGroupStatus] {
    /// The status of the subscription with this original transaction id (Get All Subscription
    /// Statuses answers for every subscription of the customer, across groups).
    public func subscription(originalTransactionId: String) -> SubscriptionGroupStatus.Subscription? {
        lazy.flatMap(\.subscriptions).last { $0.originalTransactionId == originalTransactionId }
    }
}

/// A page of the notification history, verified.
public struct NotificationHistoryPage: Sendable, Hashable {
    /// One notification with its delivery attempts.
    public struct Entry: Sendable, Hashable {
        public var notification: VerifiedNotification
        /// The notification as Apple signed it, for storing.
        public var signedPayload: String
        public var sendAttempts: [SendAttemptItem]
    }

    public var entries: [Entry]
    public var paginationToken: String?
    public var hasMore: Bool
}

extension Optional {
    fileprivate func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async throws -> T? {
        guard let self else { return nil }
        return try await transform(self)
    }
}

extension QuotaBucket {
    /// Every call to the App Store Server API (Apple publishes its limits per app, per endpoint and
    /// per hour; a deployment counts them all together, as one bucket).
    public static let appStoreServerAPI = Self(rawValue: "app-store-server-api")
}
