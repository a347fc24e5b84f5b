/// The `status` of a verifyReceipt response: `0` when the receipt is valid, else an error code.
/// Open: any value Apple sends decodes and keeps its raw value.
public struct VerifyReceiptStatus: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The raw status code.
    public let rawValue: Int

    /// Wraps any raw status, including ones this type does not name.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// The receipt is valid.
    public static let valid = Self(rawValue: 0)
    /// The request was not an HTTP POST of JSON the App Store could read.
    public static let unreadableRequest = Self(rawValue: 21000)
    /// No longer sent by Apple.
    public static let unused21001 = Self(rawValue: 21001)
    /// The `receipt-data` is malformed, or the service had a temporary issue.
    public static let malformedReceiptData = Self(rawValue: 21002)
    /// The receipt could not be authenticated.
    public static let notAuthenticated = Self(rawValue: 21003)
    /// The shared secret does not match the one on file for the account.
    public static let sharedSecretMismatch = Self(rawValue: 21004)
    /// The receipt server was temporarily unable to provide the receipt.
    public static let serverUnavailable = Self(rawValue: 21005)
    /// The receipt is valid but the subscription has expired (iOS 6 style transaction receipts only).
    public static let subscriptionExpired = Self(rawValue: 21006)
    /// A sandbox receipt was sent to the production endpoint: send it to the sandbox one.
    public static let sandboxReceiptSentToProduction = Self(rawValue: 21007)
    /// A production receipt was sent to the sandbox endpoint: send it to the production one.
    public static let productionReceiptSentToSandbox = Self(rawValue: 21008)
    /// Internal data access error.
    public static let internalDataAccessError = Self(rawValue: 21009)
    /// The user account cannot be found or has been deleted.
    public static let accountNotFound = Self(rawValue: 21010)

    /// Whether the code is in 21100–21199, Apple's "internal data access errors".
    public var isInternalDataAccessError: Bool { (21100...21199).contains(rawValue) }

    /// Whether Apple documents the status as temporary ("try again"): 21005, 21009 and 21100–21199.
    /// 21002 is not included: it more often means the receipt data itself is malformed.
    public var isTemporary: Bool {
        self == .serverUnavailable || self == .internalDataAccessError || isInternalDataAccessError
    }

    /// The raw value.
    public var description: String { String(rawValue) }
}
