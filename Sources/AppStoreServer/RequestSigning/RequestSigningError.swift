/// Why a request signature or API token could not be produced.
public struct RequestSigningError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Reason: String, Hashable, Sendable, CaseIterable {
        /// An input is empty, contains the U+2063 separator, or is not the JSON expected.
        case invalidInput = "invalid-input"
        /// A configuration value is out of range (an API token lifetime over 60 minutes, an empty issuer id).
        case invalidConfiguration = "invalid-configuration"
        /// The cryptographic library or the JSON encoder failed (not expected with a loaded key).
        case signingFailed = "signing-failed"
    }

    /// What went wrong.
    public var reason: Reason
    /// A one-line explanation (never key material).
    public var detail: String

    /// Creates an error.
    public init(_ reason: Reason, _ detail: String) {
        self.reason = reason
        self.detail = detail
    }

    /// `reason: detail`.
    public var description: String { "\(reason.rawValue): \(detail)" }

    /// Refuses an empty value for `name`.
    static func requireNonEmpty(_ value: String, _ name: String) throws(RequestSigningError) {
        guard !value.isEmpty else { throw RequestSigningError(.invalidInput, "\(name) is empty") }
    }
}
