public import AsyncHTTPClient
import Foundation
public import NIOCore
import NIOHTTP1

/// A client of the Android Publisher API (Google Play Developer API v3) for purchases: the calls a
/// purchase server needs, on AsyncHTTPClient, authorized as a service account.
///
/// Every call goes through three guards: the ``ServiceAccountTokenProvider`` (a cached token; on
/// a 401 one refresh and one more try), the ``RequestQuota`` right before each request goes out
/// (so no more than the configured rate reaches Google, 401 retries included), and the ``RetryPolicy`` (429, 5xx and transport failures are retried
/// with backoff, honouring `Retry-After`). A 410 — or a purchase Google calls "no longer
/// available" — is the terminal ``AndroidPublisherError/Reason/gone`` and is never retried.
public struct AndroidPublisherClient: Sendable {
    /// Where and how to call.
    public struct Configuration: Sendable {
        /// `https://androidpublisher.googleapis.com`, or the store simulator's base URL.
        public var baseURL: String
        public var retryPolicy: RetryPolicy
        /// Client-side quota per bucket, asked right before each request; nil sends without limit.
        /// A server with several instances passes one counted in its database.
        public var quota: (any RequestQuota)?
        /// Timeout of one attempt.
        public var requestTimeout: TimeAmount
        /// The largest response body accepted.
        public var maxResponseBytes: Int
        /// Sent as `User-Agent`, with the calling job appended (``StoreCallOrigin``).
        public var userAgent: String?

        public init(
            baseURL: String = Configuration.googleBaseURL, retryPolicy: RetryPolicy = RetryPolicy(),
            quota: (any RequestQuota)? = QuotaLimiter(limits: .googleDefaults),
            requestTimeout: TimeAmount = .seconds(30),
            maxResponseBytes: Int = 4 * 1024 * 1024, userAgent: String? = nil
        ) {
            self.userAgent = userAgent
            self.baseURL = baseURL
            self.retryPolicy = retryPolicy
            self.quota = quota
            self.requestTimeout = requestTimeout
            self.maxResponseBytes = maxResponseBytes
        }

        /// Google's endpoint.
        public static let googleBaseURL = "https://androidpublisher.googleapis.com"
    }

    public let configuration: Configuration
    let tokens: ServiceAccountTokenProvider
    let httpClient: HTTPClient

    public init(configuration: Configuration, tokens: ServiceAccountTokenProvider, httpClient: HTTPClient = .shared) {
        self.configuration = configuration
        self.tokens = tokens
        self.httpClient = httpClient
    }

    // MARK: Subscriptions

    /// `purchases.subscriptionsv2.get`: a subscription purchase's current state.
    public func subscription(packageName: String, token: String) async throws -> SubscriptionPurchaseV2 {
        try await send(
            .GET, try applicationPath(packageName, "purchases", "subscriptionsv2", "tokens", token),
            bucket: .subscriptions)
    }

    /// `purchases.subscriptionsv2.cancel`: stops renewals (access lasts until the paid period ends).
    public func cancelSubscription(
        packageName: String, token: String, context: CancellationContext? = nil
    ) async throws {
        let path = try applicationPath(packageName, "purchases", "subscriptionsv2", "tokens", token) + ":cancel"
        let _: CancelSubscriptionPurchaseResponse = try await send(
            .POST, path, body: CancelSubscriptionPurchaseRequest(cancellationContext: context),
            bucket: .subscriptionUpdates)
    }

    /// `purchases.subscriptionsv2.revoke`: ends access now, with a full, prorated or item-based refund.
    public func revokeSubscription(packageName: String, token: String, context: RevocationContext) async throws {
        let path = try applicationPath(packageName, "purchases", "subscriptionsv2", "tokens", token) + ":revoke"
        let _: RevokeSubscriptionPurchaseResponse = try await send(
            .POST, path, body: RevokeSubscriptionPurchaseRequest(revocationContext: context),
            bucket: .subscriptionUpdates)
    }

    /// `purchases.subscriptionsv2.defer`: moves the next renewal later.
    public func deferSubscription(
        packageName: String, token: String, _ request: DeferSubscriptionPurchaseRequest
    ) async throws -> DeferSubscriptionPurchaseResponse {
        let path = try applicationPath(packageName, "purchases", "subscriptionsv2", "tokens", token) + ":defer"
        return try await send(.POST, path, body: request, bucket: .subscriptionUpdates)
    }

    /// `purchases.subscriptions.acknowledge` (v1; there is no v2 acknowledge). A subscription not
    /// acknowledged within three days is refunded and revoked by Google.
    public func acknowledgeSubscription(
        packageName: String, subscriptionId: String, token: String, developerPayload: String? = nil
    ) async throws {
        let path =
            try applicationPath(packageName, "purchases", "subscriptions", subscriptionId, "tokens", token)
            + ":acknowledge"
        try await sendWithoutResponse(
            .POST, path, body: SubscriptionPurchasesAcknowledgeRequest(developerPayload: developerPayload),
            bucket: .subscriptions)
    }

    // MARK: One-time products

    /// `purchases.products.get`.
    public func product(packageName: String, productId: String, token: String) async throws -> ProductPurchase {
        try await send(
            .GET, try applicationPath(packageName, "purchases", "products", productId, "tokens", token),
            bucket: .oneTimePurchases)
    }

    /// `purchases.products.acknowledge`: required within three days, like subscriptions.
    public func acknowledgeProduct(
        packageName: String, productId: String, token: String, developerPayload: String? = nil
    ) async throws {
        let path =
            try applicationPath(packageName, "purchases", "products", productId, "tokens", token) + ":acknowledge"
        try await sendWithoutResponse(
            .POST, path, body: ProductPurchasesAcknowledgeRequest(developerPayload: developerPayload),
            bucket: .oneTimePurchases)
    }

    /// `purchases.products.consume`: a consumable may be bought again (consuming also acknowledges).
    public func consumeProduct(packageName: String, productId: String, token: String) async throws {
        let path = try applicationPath(packageName, "purchases", "products", productId, "tokens", token) + ":consume"
        try await sendWithoutResponse(.POST, path, body: nil as String?, bucket: .oneTimePurchases)
    }

    /// `purchases.productsv2.getproductpurchasev2`.
    public func productV2(packageName: String, token: String) async throws -> ProductPurchaseV2 {
        try await send(
            .GET, try applicationPath(packageName, "purchases", "productsv2", "tokens", token),
            bucket: .oneTimePurchases)
    }

    // MARK: Voided purchases and orders

    /// One page of `purchases.voidedpurchases.list`; `pageToken` is the previous page's
    /// `tokenPagination.nextPageToken`.
    public func voidedPurchasesPage(
        packageName: String, _ query: VoidedPurchasesQuery = VoidedPurchasesQuery(), pageToken: String? = nil
    ) async throws -> VoidedPurchasesListResponse {
        try await send(
            .GET, try applicationPath(packageName, "purchases", "voidedpurchases"),
            query: query.queryItems(pageToken: pageToken), bucket: .voidedPurchases)
    }

    /// Every voided purchase matching `query`, page after page, fetched as the sequence is read.
    public func voidedPurchases(
        packageName: String, _ query: VoidedPurchasesQuery = VoidedPurchasesQuery()
    ) -> Paged<VoidedPurchase> {
        Paged { token in
            let page = try await voidedPurchasesPage(packageName: packageName, query, pageToken: token)
            let next = page.tokenPagination?.nextPageToken.flatMap { $0.isEmpty ? nil : $0 }
            return (page.voidedPurchases ?? [], next)
        }
    }

    /// `orders.get`.
    public func order(packageName: String, orderId: String) async throws -> Order {
        try await send(.GET, try applicationPath(packageName, "orders", orderId), bucket: .orders)
    }

    // MARK: Transport

    /// `/androidpublisher/v3/applications/{packageName}/…`, each segment checked.
    private func applicationPath(_ packageName: String, _ segments: String...) throws -> String {
        try (["androidpublisher", "v3", "applications", packageName] + segments).map {
            try checkedSegment($0)
        }.reduce("") { $0 + "/" + $1 }
    }

    /// A path segment: identifiers are opaque, but none may change the path. Purchase tokens use
    /// letters, digits, `.`, `-` and `_`; order ids `GPA.1234-…..0`.
    private func checkedSegment(_ value: String) throws -> String {
        let allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
        guard !value.isEmpty, value.count <= 4096, value.unicodeScalars.allSatisfy(allowed.contains),
            value != ".", value != ".."
        else {
            throw AndroidPublisherError(.invalidArgument, "\"\(value.prefix(32))…\" is not a valid identifier")
        }
        return value
    }

    private func send<Response: Decodable>(
        _ method: HTTPMethod, _ path: String, query: [URLQueryItem] = [],
        body: (some Encodable & Sendable)? = nil as String?, bucket: QuotaBucket
    ) async throws -> Response {
        let data = try await perform(method, path, query: query, body: body, bucket: bucket)
        do {
            return try JSONDecoder().decode(Response.self, from: data.isEmpty ? Data("{}".utf8) : data)
        } catch {
            throw AndroidPublisherError(
                .unexpectedResponse, "the answer to \(method.rawValue) \(path) is not a valid \(Response.self)",
                httpStatus: 200)
        }
    }

    private func sendWithoutResponse(
        _ method: HTTPMethod, _ path: String, body: (some Encodable & Sendable)?, bucket: QuotaBucket
    ) async throws {
        _ = try await perform(method, path, query: [], body: body, bucket: bucket)
    }

    private func perform(
        _ method: HTTPMethod, _ path: String, query: [URLQueryItem], body: (some Encodable & Sendable)?,
        bucket: QuotaBucket
    ) async throws -> Data {
        guard var components = URLComponents(string: configuration.baseURL + path) else {
            throw AndroidPublisherError(.invalidArgument, "invalid base URL \(configuration.baseURL)")
        }
        if !query.isEmpty { components.queryItems = query }
        guard let url = components.string else {
            throw AndroidPublisherError(.invalidArgument, "invalid request URL")
        }
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Accept", value: "application/json")
        if let userAgent = configuration.userAgent {
            request.headers.add(name: "User-Agent", value: StoreCallOrigin.userAgent(userAgent))
        }
        if let body {
            let bytes = try JSONEncoder().encode(body)
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: bytes))
        } else if method == .POST {
            request.headers.add(name: "Content-Length", value: "0")
        }
        return try await configuration.retryPolicy.run { (attempt) -> Result<Data, AndroidPublisherError> in
            do {
                let quota = configuration.quota
                let response = try await tokens.execute(request, timeout: configuration.requestTimeout) {
                    try await quota?.acquire(bucket)
                }
                let collected = try await response.body.collect(upTo: configuration.maxResponseBytes)
                let data = Data(collected.readableBytesView)
                let status = Int(response.status.code)
                if (200..<300).contains(status) { return .success(data) }
                return .failure(
                    AndroidPublisherError(
                        httpStatus: status, body: data,
                        retryAfter: response.headers.first(name: "Retry-After").flatMap(Double.init), attempts: attempt)
                )
            } catch let error as ServiceAccountTokenError {
                return .failure(
                    AndroidPublisherError(
                        .authenticationFailed, "no access token: \(error.description)", attempts: attempt,
                        isRetryable: error.isRetryable))
            } catch is CancellationError {
                throw CancellationError()
            } catch let error as QuotaExhausted {
                // The quota's own refusal: nothing was sent.
                throw AndroidPublisherError(.quotaExhausted, error.description)
            } catch {
                return .failure(
                    AndroidPublisherError(.transportFailure, "\(method.rawValue) \(path): \(error)", attempts: attempt))
            }
        }
    }
}
