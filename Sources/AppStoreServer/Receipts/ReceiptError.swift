/// Why a StoreKit 1 receipt (an app receipt or a legacy transaction receipt) could not be read.
/// Each reason names the one step that failed, in the order the parsers run them. The detail never
/// echoes the receipt itself.
public typealias ReceiptError = CheckFailure<ReceiptErrorReason>

/// The step that failed.
public enum ReceiptErrorReason: String, FailureReason, CaseIterable {
    /// The input is larger than the limit; nothing else was read.
    case tooLarge = "too-large"
    /// The text is not standard base64 (ASCII whitespace such as line breaks is ignored).
    case notBase64 = "not-base64"
    /// The bytes are not a BER-encoded PKCS#7 `ContentInfo` holding `SignedData`.
    case notPKCS7 = "not-pkcs7"
    /// The `SignedData` carries no encapsulated content (a detached signature), or it is not an
    /// OCTET STRING.
    case noContent = "no-content"
    /// The encapsulated content is not a SET of receipt attributes.
    case malformedPayload = "malformed-payload"
    /// A receipt attribute is not `SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`,
    /// a known attribute's value is not of its documented type, or it appears twice.
    case malformedAttribute = "malformed-attribute"
    /// The receipt holds no in-app purchase, where one was required.
    case noInAppPurchases = "no-in-app-purchases"
    /// A legacy transaction receipt is not the expected old-style property list, or lacks the
    /// `purchase-info` or `transaction-id` entry.
    case malformedLegacyReceipt = "malformed-legacy-receipt"
}
