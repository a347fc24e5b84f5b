/// Why a request signature or API token could not be produced.
public typealias RequestSigningError = CheckFailure<RequestSigningErrorReason>

/// What went wrong.
public enum RequestSigningErrorReason: String, FailureReason, CaseIterable {
    /// An input is empty, contains the U+2063 separator, or is not the JSON expected.
    case invalidInput = "invalid-input"
    /// A configuration value is out of range (an API token lifetime over 60 minutes, an empty issuer id).
    case invalidConfiguration = "invalid-configuration"
    /// The cryptographic library or the JSON encoder failed (not expected with a loaded key).
    case signingFailed = "signing-failed"
}

extension CheckFailure where R == RequestSigningErrorReason {
    /// Refuses an empty value for `name`.
    static func requireNonEmpty(_ value: String, _ name: String) throws(RequestSigningError) {
        guard !value.isEmpty else { throw RequestSigningError(.invalidInput, "\(name) is empty") }
    }
}
