public import Hummingbird

/// Every machine-readable error code the server answers with, in `{"error": {"code", "message"}}`,
/// and the HTTP status that goes with it. docs/openapi.yaml documents each one (a test checks).
public enum ErrorCode: String, Sendable, Hashable, CaseIterable {
    // The request itself.
    case malformedBody = "malformed-body"
    case malformedSubmission = "malformed-submission"
    case invalidCustomerID = "invalid-customer-id"
    case invalidAmount = "invalid-amount"
    case invalidIdempotencyKey = "invalid-idempotency-key"
    case invalidQuery = "invalid-query"
    case missingAPIKey = "missing-api-key"
    case invalidAPIKey = "invalid-api-key"
    case readOnlyAPIKey = "read-only-api-key"
    /// The API key's scope does not allow this request (an `app_gateway` key outside its routes).
    case apiKeyScope = "api-key-scope"
    /// A usage report that can't be (a share above 100 %, a share for a consumable or subscription).
    case invalidUsage = "invalid-usage"
    /// An event-type filter names a type this server does not produce.
    case unknownEventType = "unknown-event-type"
    /// An event cursor (`after`) that no event has.
    case unknownCursor = "unknown-cursor"

    // What the request or notification carries.
    /// A signed payload failed verification (forged, wrong chain, wrong app or environment).
    case invalidSignedData = "invalid-signed-data"
    /// A Pub/Sub push's OIDC token failed authentication.
    case invalidPushToken = "invalid-push-token"
    /// The payload verified but lacks what processing needs.
    case malformedPayload = "malformed-payload"
    /// The payload or request names an app this server is not configured for.
    case unknownApp = "unknown-app"
    /// Several apps of the store are configured and the request does not say which it is for.
    case appRequired = "app-required"
    /// The app does not accept payloads of that environment.
    case environmentNotAccepted = "environment-not-accepted"
    /// A sandbox (or Google test) purchase presented to a production deployment whose app does
    /// not let sandbox purchases grant access.
    case sandboxPurchaseInProduction = "sandbox-purchase-in-production"
    /// An upgraded App Store transaction was submitted; the newer one speaks for the purchase.
    case transactionUpgraded = "transaction-upgraded"

    // State.
    /// The catalog has no such product (or not one offers are for).
    case unknownProduct = "unknown-product"
    /// The catalog lists no such promotional offer for the product.
    case unknownOffer = "unknown-offer"
    /// The customer may not have the offer under the configured policy.
    case notEligible = "not-eligible"
    /// A signature must name one of the customer's App Store transactions and they have none.
    case appTransactionRequired = "app-transaction-required"
    case customerNotFound = "customer-not-found"
    /// No webhook endpoint of that name is configured.
    case webhookNotFound = "webhook-not-found"
    case eventNotFound = "event-not-found"
    case purchaseNotFound = "purchase-not-found"
    /// The purchase was stored before apps were recorded and its app is not known yet.
    case purchaseAppUnknown = "purchase-app-unknown"
    case ownershipConflict = "ownership-conflict"
    /// The purchase belongs to another customer than the one named in the path.
    case purchaseNotOwned = "purchase-not-owned"
    case insufficientBalance = "insufficient-balance"
    case idempotencyKeyReused = "idempotency-key-reused"
    /// The server can't do this with its configuration (no API key for the store, …).
    case notConfigured = "not-configured"

    // Webhook endpoints through the API, and pruning (docs/events.md).
    /// An endpoint name that is not 1–64 letters, digits, `-`, `_` or `.`.
    case invalidWebhookName = "invalid-webhook-name"
    /// A webhook URL that is not http or https with a host.
    case invalidWebhookURL = "invalid-webhook-url"
    /// An environment filter names neither `production` nor `sandbox`.
    case unknownEnvironment = "unknown-environment"
    /// A webhook secret that is empty or shorter than 16 characters, or sent where it can't be set.
    case invalidWebhookSecret = "invalid-webhook-secret"
    /// Another endpoint, configured or created through the API, has the name.
    case webhookNameTaken = "webhook-name-taken"
    /// The endpoint is in the configuration file: the API can't change it.
    case webhookConfigured = "webhook-configured"
    /// The endpoint has two secrets already: retire one before adding another.
    case webhookSecretLimit = "webhook-secret-limit"
    /// Retiring the endpoint's only secret.
    case webhookSecretRequired = "webhook-secret-required"
    case webhookSecretNotFound = "webhook-secret-not-found"
    /// An event cursor older than the events kept: they were pruned (retention).
    case cursorExpired = "cursor-expired"

    // Outages.
    /// The store's API failed in a way that may pass (5xx, 429, network); retried.
    case storeUnavailable = "store-unavailable"
    /// The store's API refused the call (its credentials, or a request it calls invalid).
    case storeRefused = "store-refused"
    /// Google's push keys could not be fetched; Pub/Sub retries on the 5xx.
    case pushKeysUnavailable = "push-keys-unavailable"
    case storageUnavailable = "storage-unavailable"
    case `internal` = "internal"

    /// The HTTP status answered with this code.
    public var status: HTTPResponse.Status {
        switch self {
        case .malformedBody, .malformedSubmission, .invalidCustomerID, .invalidAmount, .invalidIdempotencyKey,
            .invalidQuery, .invalidSignedData, .malformedPayload, .invalidUsage, .unknownEventType, .unknownCursor:
            .badRequest
        case .missingAPIKey, .invalidAPIKey, .invalidPushToken: .unauthorized
        case .readOnlyAPIKey, .apiKeyScope: .forbidden
        case .customerNotFound, .purchaseNotFound, .unknownProduct, .unknownOffer, .webhookNotFound, .eventNotFound:
            .notFound
        case .ownershipConflict, .insufficientBalance, .idempotencyKeyReused, .purchaseNotOwned, .notEligible,
            .appTransactionRequired:
            .conflict
        case .unknownApp, .appRequired, .environmentNotAccepted, .sandboxPurchaseInProduction, .transactionUpgraded,
            .purchaseAppUnknown, .notConfigured:
            .unprocessableContent
        case .storeUnavailable, .storeRefused: .badGateway
        case .pushKeysUnavailable, .storageUnavailable: .serviceUnavailable
        case .internal: .internalServerError
        case .invalidWebhookName, .invalidWebhookURL, .unknownEnvironment, .invalidWebhookSecret: .badRequest
        case .webhookNameTaken, .webhookConfigured, .webhookSecretLimit, .webhookSecretRequired: .conflict
        case .webhookSecretNotFound: .notFound
        case .cursorExpired: .gone
        }
    }

    /// Whether trying the same thing again later can succeed (processing retries these).
    public var isRetryable: Bool {
        switch self {
        case .storeUnavailable, .pushKeysUnavailable, .storageUnavailable: true
        default: false
        }
    }
}
