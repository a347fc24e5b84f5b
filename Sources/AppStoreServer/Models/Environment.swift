/// The App Store server environment that produced a payload (`environment`, `receiptType`).
public struct Environment: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The raw string Apple sends.
    public let rawValue: String

    /// Wraps any raw value, including ones this type does not name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The sandbox environment (TestFlight and sandbox testing).
    public static let sandbox = Self(rawValue: "Sandbox")
    /// The production App Store.
    public static let production = Self(rawValue: "Production")
    /// StoreKit testing in Xcode.
    public static let xcode = Self(rawValue: "Xcode")
    /// Local StoreKit testing (the App Store Server Library's test environment).
    public static let localTesting = Self(rawValue: "LocalTesting")

    /// The raw value.
    public var description: String { rawValue }
}
