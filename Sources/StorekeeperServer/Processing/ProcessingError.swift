/// Why a notification or submission could not be processed.
public struct ProcessingError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Reason: String, Sendable, Hashable {
        /// The payload verified but lacks what processing needs.
        case malformedPayload = "malformed-payload"
        /// The payload names an app this server isn't configured for.
        case unknownApp = "unknown-app"
        /// The environment isn't accepted for the app.
        case environmentNotAccepted = "environment-not-accepted"
        /// The store's API failed; processing is retried.
        case storeUnavailable = "store-unavailable"
        /// The store says the purchase does not exist.
        case purchaseNotFound = "purchase-not-found"
        /// The purchase belongs to another customer and the policy keeps it there.
        case ownershipConflict = "ownership-conflict"
        /// The server can't do this with its configuration (no API key, …).
        case notConfigured = "not-configured"
    }

    public var reason: Reason
    public var detail: String

    public init(_ reason: Reason, _ detail: String) {
        self.reason = reason
        self.detail = detail
    }

    public var description: String { "\(reason.rawValue): \(detail)" }

    /// Whether trying again later can succeed.
    public var isRetryable: Bool { reason == .storeUnavailable }
}
