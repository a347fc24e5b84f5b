/// Google's JSON error response body, `{ "error": { ... } }`.
public struct GoogleAPIErrorBody: Codable, Hashable, Sendable {
    /// The error.
    public var error: GoogleAPIError?

    /// Creates a `GoogleAPIErrorBody`; every field defaults to `nil`.
    public init(
        error: GoogleAPIError? = nil
    ) {
        self.error = error
    }
}

/// The `error` object of a Google API error response.
public struct GoogleAPIError: Codable, Hashable, Sendable {
    /// HTTP status code.
    public var code: Int?
    /// Developer-facing error message.
    public var message: String?
    /// Canonical `google.rpc.Code` name, for example `NOT_FOUND`.
    public var status: String?
    /// Legacy per-error details.
    public var errors: [GoogleAPIErrorItem]?
    /// `google.rpc.Status` details, kept as raw JSON.
    public var details: [JSONValue]?

    /// Creates a `GoogleAPIError`; every field defaults to `nil`.
    public init(
        code: Int? = nil,
        message: String? = nil,
        status: String? = nil,
        errors: [GoogleAPIErrorItem]? = nil,
        details: [JSONValue]? = nil
    ) {
        self.code = code
        self.message = message
        self.status = status
        self.errors = errors
        self.details = details
    }
}

/// A legacy entry of `error.errors`.
public struct GoogleAPIErrorItem: Codable, Hashable, Sendable {
    /// Error domain, for example `androidpublisher`.
    public var domain: String?
    /// Error reason, for example `purchaseTokenDoesNotMatchPackage`.
    public var reason: String?
    /// Error message.
    public var message: String?
    /// Location of the error, if any.
    public var location: String?
    /// Kind of `location`, if any.
    public var locationType: String?

    /// Creates a `GoogleAPIErrorItem`; every field defaults to `nil`.
    public init(
        domain: String? = nil,
        reason: String? = nil,
        message: String? = nil,
        location: String? = nil,
        locationType: String? = nil
    ) {
        self.domain = domain
        self.reason = reason
        self.message = message
        self.location = location
        self.locationType = locationType
    }
}
