import Foundation

/// The one error shape of the server: a code (which decides the HTTP status), a sentence for
/// people, and the error it stands for when it translates one (a store client's, a verifier's),
/// kept for logs and for code that needs the store's own detail. The store adapters translate
/// their stores' errors into this; nothing above them sees a store's error type.
public struct ServerError: Error, Sendable, CustomStringConvertible {
    public var code: ErrorCode
    public var message: String
    /// What this error translates (e.g. an `AppStoreServerAPIError` with Apple's error code).
    public var underlying: (any Error & Sendable)?
    /// The store's own error code, when its answer carried one (Apple's `errorCode`).
    public var storeErrorCode: Int?

    public init(
        _ code: ErrorCode, _ message: String, underlying: (any Error & Sendable)? = nil, storeErrorCode: Int? = nil
    ) {
        self.code = code
        self.message = message
        self.underlying = underlying
        self.storeErrorCode = storeErrorCode
    }

    public var description: String { "\(code.rawValue): \(message)" }

    /// Whether trying again later can succeed.
    public var isRetryable: Bool { code.isRetryable }

    public static func customerNotFound(_ id: some CustomStringConvertible) -> ServerError {
        ServerError(.customerNotFound, "no customer \(id); create it with PUT first")
    }
}
