/// The app's shared secret (the `password` of a verifyReceipt request). Its descriptions and mirror
/// are redacted so that it cannot reach a log or an error message by accident; only the request body
/// carries the value.
public struct VerifyReceiptSharedSecret: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The secret itself. Read it only to send it.
    public let value: String

    /// Wraps the shared secret from App Store Connect.
    public init(_ value: String) { self.value = value }

    /// Always `<redacted>`.
    public var description: String { "<redacted>" }
    /// Always `<redacted>`.
    public var debugDescription: String { "<redacted>" }
    /// A mirror without children, so `dump` shows nothing of the value.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
