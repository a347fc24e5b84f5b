/// Either kind of StoreKit 1 receipt an app (or its backend) may send, told apart by content: a
/// legacy transaction receipt is property list text (its first non-whitespace byte is `{`); anything
/// else is read as an app receipt. Like its two cases, nothing here is verified.
public enum StoreKitReceipt: Hashable, Sendable {
    /// An app receipt (PKCS#7).
    case app(AppReceipt)
    /// A legacy transaction receipt (old-style property list).
    case transaction(LegacyTransactionReceipt)

    /// Decodes base64 text of either kind (whitespace such as line breaks is ignored).
    public init(base64: String, maximumBytes: Int = AppReceipt.defaultMaximumBytes) throws(ReceiptError) {
        let maxTextBytes = maximumBytes > Int.max / 2 ? Int.max : maximumBytes * 2
        try self.init(bytes: try ReceiptBase64.decode(base64, maxTextBytes: maxTextBytes), maximumBytes: maximumBytes)
    }

    /// Decodes the bytes of either kind.
    public init(bytes: [UInt8], maximumBytes: Int = AppReceipt.defaultMaximumBytes) throws(ReceiptError) {
        guard bytes.count <= maximumBytes else {
            throw ReceiptError(.tooLarge, "the receipt is \(bytes.count) bytes; the limit is \(maximumBytes) bytes")
        }
        let first = bytes.first { !($0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D) }
        if first == UInt8(ascii: "{") {
            self = .transaction(try LegacyTransactionReceipt(bytes: bytes, maximumBytes: maximumBytes))
        } else {
            self = .app(try AppReceipt(bytes: bytes, maximumBytes: maximumBytes))
        }
    }

    /// A transaction id to ask the App Store Server API about: the legacy receipt's `transaction-id`,
    /// or ``AppReceipt/transactionId`` (`noInAppPurchases` when the app receipt holds none).
    public func requireTransactionId() throws(ReceiptError) -> String {
        switch self {
        case .app(let receipt): return try receipt.requireTransactionId()
        case .transaction(let receipt): return receipt.transactionId
        }
    }
}
