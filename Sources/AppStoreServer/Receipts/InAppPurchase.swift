public import Foundation

/// One in-app purchase of an app receipt (attribute type 17). Every field is optional, as in Apple's
/// own model: a field is `nil` when its attribute is absent (or, for a date, empty).
public struct InAppPurchase: Hashable, Sendable {
    /// The product identifier (attribute 1702).
    public var productId: String?
    /// The transaction identifier (attribute 1703).
    public var transactionId: String?
    /// The identifier of the original purchase; equals `transactionId` for a first purchase (attribute 1705).
    public var originalTransactionId: String?
    /// When the purchase was made (attribute 1704, an RFC 3339 string).
    public var purchaseDate: Date?
    /// When the original purchase was made (attribute 1706).
    public var originalPurchaseDate: Date?
    /// When an auto-renewable subscription expires (attribute 1708).
    public var expiresDate: Date?
    /// The number of items purchased (attribute 1701).
    public var quantity: Int?

    /// A purchase with the given fields.
    public init(
        productId: String? = nil, transactionId: String? = nil, originalTransactionId: String? = nil,
        purchaseDate: Date? = nil, originalPurchaseDate: Date? = nil, expiresDate: Date? = nil, quantity: Int? = nil
    ) {
        self.productId = productId
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expiresDate = expiresDate
        self.quantity = quantity
    }
}

extension InAppPurchase {
    enum AttributeType {
        static let quantity: Int64 = 1701
        static let productId: Int64 = 1702
        static let transactionId: Int64 = 1703
        static let purchaseDate: Int64 = 1704
        static let originalTransactionId: Int64 = 1705
        static let originalPurchaseDate: Int64 = 1706
        static let expiresDate: Int64 = 1708
    }

    /// Decodes one in-app purchase set. Unknown attribute types are skipped; a known one that appears
    /// twice, or whose value is not of its documented type, is `malformedAttribute`.
    init(attributeSet bytes: ArraySlice<UInt8>, location: ReceiptLocation) throws(ReceiptError) {
        self.init()
        var seen: Set<Int64> = []
        for attribute in try ReceiptAttributes.parseSet(bytes, reason: .malformedAttribute, location: location) {
            switch attribute.type {
            case AttributeType.quantity, AttributeType.productId, AttributeType.transactionId,
                AttributeType.purchaseDate, AttributeType.originalTransactionId, AttributeType.originalPurchaseDate,
                AttributeType.expiresDate:
                guard seen.insert(attribute.type).inserted else {
                    throw ReceiptError(.malformedAttribute, "\(location) has attribute type \(attribute.type) twice")
                }
            default:
                continue
            }
            switch attribute.type {
            case AttributeType.quantity:
                let value = try ReceiptAttributes.integer(attribute, in: location)
                guard let quantity = Int(exactly: value) else {
                    throw ReceiptError(.malformedAttribute, "\(location) has a quantity that does not fit in Int")
                }
                self.quantity = quantity
            case AttributeType.productId: productId = try ReceiptAttributes.string(attribute, in: location)
            case AttributeType.transactionId: transactionId = try ReceiptAttributes.string(attribute, in: location)
            case AttributeType.originalTransactionId:
                originalTransactionId = try ReceiptAttributes.string(attribute, in: location)
            case AttributeType.purchaseDate: purchaseDate = try ReceiptAttributes.date(attribute, in: location)
            case AttributeType.originalPurchaseDate:
                originalPurchaseDate = try ReceiptAttributes.date(attribute, in: location)
            default: expiresDate = try ReceiptAttributes.date(attribute, in: location)
            }
        }
    }
}
