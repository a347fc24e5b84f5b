public import Foundation

/// The decoded payload of a signed app transaction (`signedAppTransactionInfo`; Apple's
/// `JWSAppTransactionDecodedPayload` and StoreKit's `AppTransaction`).
public struct AppTransaction: Codable, Hashable, Sendable {
    /// The server environment that signed the app transaction.
    public let receiptType: Environment?
    /// The App Store's identifier of the app.
    public let appAppleId: Int64?
    /// The app's bundle identifier.
    public let bundleId: String?
    /// The app version the app transaction applies to.
    public let applicationVersion: String?
    /// The App Store's identifier of the app version.
    public let versionExternalIdentifier: Int64?
    /// When the App Store signed the app transaction.
    public let receiptCreationDate: Date?
    /// When the customer originally purchased the app.
    public let originalPurchaseDate: Date?
    /// The app version the customer originally purchased.
    public let originalApplicationVersion: String?
    /// The Base64 value that verifies the app transaction belongs to the device.
    public let deviceVerification: String?
    /// The UUID string used to compute `deviceVerification`.
    public let deviceVerificationNonce: String?
    /// When the customer pre-ordered the app.
    public let preorderDate: Date?
    /// The unique identifier of the app download transaction.
    public let appTransactionId: String?
    /// The platform on which the customer originally purchased the app.
    public let originalPlatform: PurchasePlatform?

    /// Creates a value; every field is optional.
    public init(
        receiptType: Environment? = nil,
        appAppleId: Int64? = nil,
        bundleId: String? = nil,
        applicationVersion: String? = nil,
        versionExternalIdentifier: Int64? = nil,
        receiptCreationDate: Date? = nil,
        originalPurchaseDate: Date? = nil,
        originalApplicationVersion: String? = nil,
        deviceVerification: String? = nil,
        deviceVerificationNonce: String? = nil,
        preorderDate: Date? = nil,
        appTransactionId: String? = nil,
        originalPlatform: PurchasePlatform? = nil
    ) {
        self.receiptType = receiptType
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.applicationVersion = applicationVersion
        self.versionExternalIdentifier = versionExternalIdentifier
        self.receiptCreationDate = receiptCreationDate
        self.originalPurchaseDate = originalPurchaseDate
        self.originalApplicationVersion = originalApplicationVersion
        self.deviceVerification = deviceVerification
        self.deviceVerificationNonce = deviceVerificationNonce
        self.preorderDate = preorderDate
        self.appTransactionId = appTransactionId
        self.originalPlatform = originalPlatform
    }
}

/// The platform on which a customer originally purchased an app (`originalPlatform`).
public struct PurchasePlatform: RawRepresentable, Hashable, Sendable, Codable,
    CustomStringConvertible
{
    /// The raw string Apple sends.
    public let rawValue: String

    /// Wraps any raw value, including ones this type does not name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// iOS (including iPadOS).
    public static let iOS = Self(rawValue: "iOS")
    /// macOS.
    public static let macOS = Self(rawValue: "macOS")
    /// tvOS.
    public static let tvOS = Self(rawValue: "tvOS")
    /// visionOS.
    public static let visionOS = Self(rawValue: "visionOS")

    /// The raw value.
    public var description: String { rawValue }
}
