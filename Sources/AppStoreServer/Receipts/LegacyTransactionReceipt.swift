/// A legacy (iOS 6 style) transaction receipt, `SKPaymentTransaction.transactionReceipt`: base64 of
/// an old-style property list whose `purchase-info` entry is base64 of another one holding the
/// purchase (`transaction-id`, `original-transaction-id`, `product-id`, `bid`, …).
///
/// **Nothing here is verified**: the `signature` entry is not checked. As with ``AppReceipt``, use
/// the transaction id only to ask the App Store Server API, whose answers are signed.
///
/// Parsing is strict (see the syntax accepted in the source of `OldStylePlist`) and bounded: the
/// input size is checked first, and both property lists are read in one forward pass each.
public struct LegacyTransactionReceipt: Hashable, Sendable {
    /// The transaction identifier (`transaction-id`; required, non-empty).
    public var transactionId: String
    /// The original transaction identifier (`original-transaction-id`), when present.
    public var originalTransactionId: String?
    /// The product identifier (`product-id`), when present.
    public var productId: String?
    /// The app's bundle identifier (`bid`), when present.
    public var bundleId: String?
    /// The outer `environment` entry (`Sandbox` in sandbox receipts; absent in production), when present.
    public var environment: String?
    /// Every entry of the decoded `purchase-info` dictionary, as strings.
    public var purchaseInfo: [String: String]

    /// Decodes a base64 transaction receipt (whitespace such as line breaks is ignored).
    public init(base64: String, maximumBytes: Int = AppReceipt.defaultMaximumBytes) throws(ReceiptError) {
        let maxTextBytes = maximumBytes > Int.max / 2 ? Int.max : maximumBytes * 2
        try self.init(bytes: try ReceiptBase64.decode(base64, maxTextBytes: maxTextBytes), maximumBytes: maximumBytes)
    }

    /// Decodes the receipt's bytes (the property list text, already base64-decoded).
    public init(bytes: [UInt8], maximumBytes: Int = AppReceipt.defaultMaximumBytes) throws(ReceiptError) {
        guard bytes.count <= maximumBytes else {
            throw ReceiptError(.tooLarge, "the receipt is \(bytes.count) bytes; the limit is \(maximumBytes) bytes")
        }
        let outer = try Self.dictionary(bytes, what: "the receipt")
        guard let encodedPurchaseInfo = outer["purchase-info"] else {
            throw ReceiptError(.malformedLegacyReceipt, "the receipt has no purchase-info entry")
        }
        let purchaseInfoBytes: [UInt8]
        do {
            purchaseInfoBytes = try ReceiptBase64.decode(encodedPurchaseInfo, maxTextBytes: maximumBytes)
        } catch {
            throw ReceiptError(.malformedLegacyReceipt, "the purchase-info entry is not base64")
        }
        let purchaseInfo = try Self.dictionary(purchaseInfoBytes, what: "the purchase-info")
        guard let transactionId = purchaseInfo["transaction-id"], !transactionId.isEmpty else {
            throw ReceiptError(.malformedLegacyReceipt, "the purchase-info has no transaction-id entry")
        }
        self.transactionId = transactionId
        self.originalTransactionId = purchaseInfo["original-transaction-id"]
        self.productId = purchaseInfo["product-id"]
        self.bundleId = purchaseInfo["bid"]
        self.environment = outer["environment"]
        self.purchaseInfo = purchaseInfo
    }

    private static func dictionary(_ bytes: [UInt8], what: String) throws(ReceiptError) -> [String: String] {
        do {
            return try OldStylePlist.dictionary(bytes)
        } catch {
            throw ReceiptError(.malformedLegacyReceipt, "\(what) is not an old-style property list: \(error)")
        }
    }
}
