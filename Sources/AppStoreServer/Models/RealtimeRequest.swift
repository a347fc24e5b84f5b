public import Foundation

/// The decoded body of a real-time retention messaging request the App Store sends to your
/// Get Retention Message endpoint (Apple's `DecodedRealtimeRequestBody`).
public struct RealtimeRequest: Codable, Hashable, Sendable {
    /// The original transaction identifier of the customer's subscription.
    public let originalTransactionId: String?
    /// The App Store's identifier of the app; check it matches yours before responding.
    public let appAppleId: Int64?
    /// The product identifier of the auto-renewable subscription.
    public let productId: String?
    /// The device's locale, such as `en-US`.
    public let userLocale: String?
    /// The UUID string the App Store created to identify this request.
    public let requestIdentifier: String?
    /// When the App Store signed the request.
    public let signedDate: Date?
    /// The server environment of the request.
    public let environment: Environment?

    /// Creates a value; every field is optional.
    public init(
        originalTransactionId: String? = nil,
        appAppleId: Int64? = nil,
        productId: String? = nil,
        userLocale: String? = nil,
        requestIdentifier: String? = nil,
        signedDate: Date? = nil,
        environment: Environment? = nil
    ) {
        self.originalTransactionId = originalTransactionId
        self.appAppleId = appAppleId
        self.productId = productId
        self.userLocale = userLocale
        self.requestIdentifier = requestIdentifier
        self.signedDate = signedDate
        self.environment = environment
    }
}
