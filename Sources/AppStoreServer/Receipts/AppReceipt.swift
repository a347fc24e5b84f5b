import Foundation

/// A StoreKit 1 app receipt (the base64 file at `Bundle.main.appStoreReceiptURL`), decoded:
/// PKCS#7 `ContentInfo` → `SignedData` → encapsulated content, a SET of receipt attributes
/// `SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`. DER and BER (indefinite
/// lengths, a chunked constructed content OCTET STRING) are both read.
///
/// **Nothing here is verified.** The PKCS#7 signature and its certificate chain are not checked,
/// so every field is only a claim made by whoever sent the receipt. Use it the way Apple's App
/// Store Server Library uses its `ReceiptUtility`: take a transaction id from it and ask the App
/// Store Server API (Get Transaction History / Get Transaction Info), whose answers are signed data
/// that `SignedDataVerifier` verifies. Never grant access from these fields alone.
///
/// Work is bounded: the input is limited to ``defaultMaximumBytes`` before anything is decoded, the
/// ASN.1 is read with SwiftASN1's BER parser (nesting limited to 50 levels), and each level is parsed
/// once. Malformed input throws ``ReceiptError``; it never traps.
public struct AppReceipt: Hashable, Sendable {
    /// The default limit on the receipt's DER/BER size (1 MiB; real receipts are a few KiB to a few
    /// hundred KiB). Base64 text may be up to twice this, leaving room for line breaks.
    public static let defaultMaximumBytes = 1 << 20

    /// The app's bundle identifier (attribute 2). Required: a receipt without one is `malformedPayload`.
    public var bundleId: String
    /// The receipt type (attribute 0, e.g. `Production`, `ProductionSandbox`), when present. Not
    /// documented by Apple in the receipt fields list but read by Apple's library.
    public var receiptType: String?
    /// Every in-app purchase (attribute 17), in the order the receipt lists them. Empty when the
    /// receipt holds none: that is a valid receipt (an app with no purchases yet), not an error.
    public var inAppPurchases: [InAppPurchase]

    /// A receipt with the given fields.
    public init(bundleId: String, receiptType: String? = nil, inAppPurchases: [InAppPurchase] = []) {
        self.bundleId = bundleId
        self.receiptType = receiptType
        self.inAppPurchases = inAppPurchases
    }

    /// Decodes base64 text (standard alphabet; whitespace such as line breaks is ignored).
    public init(base64: String, maximumBytes: Int = defaultMaximumBytes) throws(ReceiptError) {
        let maxTextBytes = maximumBytes > Int.max / 2 ? Int.max : maximumBytes * 2
        let bytes = try ReceiptBase64.decode(base64, maxTextBytes: maxTextBytes)
        try self.init(bytes: bytes, maximumBytes: maximumBytes)
    }

    /// Decodes the receipt's DER or BER bytes.
    public init(bytes: [UInt8], maximumBytes: Int = defaultMaximumBytes) throws(ReceiptError) {
        guard bytes.count <= maximumBytes else {
            throw ReceiptError(.tooLarge, "the receipt is \(bytes.count) bytes; the limit is \(maximumBytes) bytes")
        }
        let payload = try PKCS7Envelope.content(of: bytes)
        var bundleId: String?
        var receiptType: String?
        var purchases: [InAppPurchase] = []
        for attribute in try ReceiptAttributes.parseSet(payload, reason: .malformedPayload, location: .payload) {
            switch attribute.type {
            case AttributeType.bundleId:
                guard bundleId == nil else {
                    throw ReceiptError(.malformedAttribute, "the receipt has two bundle ids (attribute 2)")
                }
                bundleId = try ReceiptAttributes.string(attribute, in: .payload)
            case AttributeType.receiptType:
                guard receiptType == nil else {
                    throw ReceiptError(.malformedAttribute, "the receipt has two receipt types (attribute 0)")
                }
                receiptType = try ReceiptAttributes.string(attribute, in: .payload)
            case AttributeType.inAppPurchase:
                let location = ReceiptLocation(purchase: purchases.count + 1)
                purchases.append(try InAppPurchase(attributeSet: attribute.value, location: location))
            default:
                continue
            }
        }
        guard let bundleId else {
            throw ReceiptError(.malformedPayload, "the receipt has no bundle id (attribute 2)")
        }
        self.init(bundleId: bundleId, receiptType: receiptType, inAppPurchases: purchases)
    }

    enum AttributeType {
        static let receiptType: Int64 = 0
        static let bundleId: Int64 = 2
        static let inAppPurchase: Int64 = 17
    }

    /// A transaction id to look the customer up with in the App Store Server API: the first in-app
    /// purchase, in receipt order, that has a transaction id (or, lacking one, an original transaction
    /// id). `nil` when the receipt holds no purchase. This is the choice of Apple's
    /// `AppReceiptVerifier.verifyAndExtractTransactionId`; any of the customer's transaction ids
    /// serves Get Transaction History, so "first" is enough and needs no dates.
    public var transactionId: String? {
        for purchase in inAppPurchases {
            if let id = purchase.transactionId ?? purchase.originalTransactionId { return id }
        }
        return nil
    }

    /// ``transactionId``, or `noInAppPurchases` when there is none.
    public func requireTransactionId() throws(ReceiptError) -> String {
        guard let transactionId else {
            throw ReceiptError(.noInAppPurchases, "the receipt holds no in-app purchase with a transaction id")
        }
        return transactionId
    }

    /// The in-app purchase with the latest purchase date (the first of equals, in receipt order);
    /// purchases without a date are skipped. `nil` when none has a date.
    public var latestPurchase: InAppPurchase? {
        var latest: InAppPurchase?
        for purchase in inAppPurchases {
            guard let date = purchase.purchaseDate else { continue }
            if let current = latest?.purchaseDate, current >= date { continue }
            latest = purchase
        }
        return latest
    }
}
