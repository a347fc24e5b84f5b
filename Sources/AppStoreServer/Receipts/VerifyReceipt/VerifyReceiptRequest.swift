/// The JSON body of a verifyReceipt request: `{"receipt-data", "password", "exclude-old-transactions"}`.
/// Its description is redacted like the secret it carries.
public struct VerifyReceiptRequest: Encodable, Hashable, Sendable, CustomStringConvertible {
    /// The base64-encoded receipt, as the app sent it.
    public var receiptData: String
    /// The app's shared secret; required for receipts with auto-renewable subscriptions.
    public var password: VerifyReceiptSharedSecret?
    /// Whether the response's `latest_receipt_info` holds only the latest renewal of each subscription.
    public var excludeOldTransactions: Bool?

    /// A request body.
    public init(receiptData: String, password: VerifyReceiptSharedSecret? = nil, excludeOldTransactions: Bool? = nil) {
        self.receiptData = receiptData
        self.password = password
        self.excludeOldTransactions = excludeOldTransactions
    }

    enum CodingKeys: String, CodingKey {
        case receiptData = "receipt-data"
        case password
        case excludeOldTransactions = "exclude-old-transactions"
    }

    /// Writes the documented keys; absent optional members are left out.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(receiptData, forKey: .receiptData)
        try container.encodeIfPresent(password?.value, forKey: .password)
        try container.encodeIfPresent(excludeOldTransactions, forKey: .excludeOldTransactions)
    }

    /// A summary without the receipt or the secret.
    public var description: String {
        "VerifyReceiptRequest(receipt-data: \(receiptData.utf8.count) bytes, password: "
            + (password == nil ? "none" : "<redacted>")
            + ", exclude-old-transactions: \(excludeOldTransactions.map(String.init) ?? "unset"))"
    }
}
