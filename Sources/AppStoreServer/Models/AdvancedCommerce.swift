public import Foundation

/// Transaction details present only for Advanced Commerce API SKUs (`advancedCommerceTransactionInfo`).
public struct AdvancedCommerceTransactionInfo: Codable, Hashable, Sendable {
    /// The display name and description of the purchase.
    public let descriptors: AdvancedCommerceDescriptors?
    /// The estimated tax, in milliunits of the transaction's currency.
    public let estimatedTax: Int64?
    /// The items in the purchase.
    public let items: [AdvancedCommerceTransactionItem]?
    /// The duration of one subscription cycle.
    public let period: AdvancedCommercePeriod?
    /// Your reference identifier for the request that created the transaction.
    public let requestReferenceId: String?
    /// The tax code applied to the purchase.
    public let taxCode: String?
    /// The price before tax, in milliunits.
    public let taxExclusivePrice: Int64?
    /// The tax rate, as a decimal string.
    public let taxRate: String?

    /// Creates a value; every field is optional.
    public init(
        descriptors: AdvancedCommerceDescriptors? = nil,
        estimatedTax: Int64? = nil,
        items: [AdvancedCommerceTransactionItem]? = nil,
        period: AdvancedCommercePeriod? = nil,
        requestReferenceId: String? = nil,
        taxCode: String? = nil,
        taxExclusivePrice: Int64? = nil,
        taxRate: String? = nil
    ) {
        self.descriptors = descriptors
        self.estimatedTax = estimatedTax
        self.items = items
        self.period = period
        self.requestReferenceId = requestReferenceId
        self.taxCode = taxCode
        self.taxExclusivePrice = taxExclusivePrice
        self.taxRate = taxRate
    }
}

/// One item of an Advanced Commerce transaction (`advancedCommerceTransactionItem`).
public struct AdvancedCommerceTransactionItem: Codable, Hashable, Sendable {
    /// The item's SKU (JSON key `SKU`).
    public let sku: String?
    /// The item's description.
    public let description: String?
    /// The item's display name.
    public let displayName: String?
    /// The offer applied to the item.
    public let offer: AdvancedCommerceOffer?
    /// The item's price, in milliunits.
    public let price: Int64?
    /// Refunds issued for the item.
    public let refunds: [AdvancedCommerceRefund]?
    /// When the App Store refunded or revoked the item.
    public let revocationDate: Date?

    enum CodingKeys: String, CodingKey {
        case sku = "SKU"
        case description, displayName, offer, price, refunds, revocationDate
    }

    /// Creates a value; every field is optional.
    public init(
        sku: String? = nil,
        description: String? = nil,
        displayName: String? = nil,
        offer: AdvancedCommerceOffer? = nil,
        price: Int64? = nil,
        refunds: [AdvancedCommerceRefund]? = nil,
        revocationDate: Date? = nil
    ) {
        self.sku = sku
        self.description = description
        self.displayName = displayName
        self.offer = offer
        self.price = price
        self.refunds = refunds
        self.revocationDate = revocationDate
    }
}

/// Renewal details present only for Advanced Commerce API SKUs (`advancedCommerceRenewalInfo`).
public struct AdvancedCommerceRenewalInfo: Codable, Hashable, Sendable {
    /// The token to pass back to the Advanced Commerce API for consistent updates.
    public let consistencyToken: String?
    /// The display name and description of the subscription.
    public let descriptors: AdvancedCommerceDescriptors?
    /// The items that renew.
    public let items: [AdvancedCommerceRenewalItem]?
    /// The duration of one subscription cycle.
    public let period: AdvancedCommercePeriod?
    /// Your reference identifier for the request that last changed the subscription.
    public let requestReferenceId: String?
    /// The tax code applied to the subscription.
    public let taxCode: String?

    /// Creates a value; every field is optional.
    public init(
        consistencyToken: String? = nil,
        descriptors: AdvancedCommerceDescriptors? = nil,
        items: [AdvancedCommerceRenewalItem]? = nil,
        period: AdvancedCommercePeriod? = nil,
        requestReferenceId: String? = nil,
        taxCode: String? = nil
    ) {
        self.consistencyToken = consistencyToken
        self.descriptors = descriptors
        self.items = items
        self.period = period
        self.requestReferenceId = requestReferenceId
        self.taxCode = taxCode
    }
}

/// One item of an Advanced Commerce renewal (`advancedCommerceRenewalItem`).
public struct AdvancedCommerceRenewalItem: Codable, Hashable, Sendable {
    /// The item's SKU (JSON key `SKU`).
    public let sku: String?
    /// The item's description.
    public let description: String?
    /// The item's display name.
    public let displayName: String?
    /// The offer that applies at renewal.
    public let offer: AdvancedCommerceOffer?
    /// The renewal price, in milliunits.
    public let price: Int64?
    /// A pending or scheduled price increase for the item.
    public let priceIncreaseInfo: AdvancedCommercePriceIncreaseInfo?

    enum CodingKeys: String, CodingKey {
        case sku = "SKU"
        case description, displayName, offer, price, priceIncreaseInfo
    }

    /// Creates a value; every field is optional.
    public init(
        sku: String? = nil,
        description: String? = nil,
        displayName: String? = nil,
        offer: AdvancedCommerceOffer? = nil,
        price: Int64? = nil,
        priceIncreaseInfo: AdvancedCommercePriceIncreaseInfo? = nil
    ) {
        self.sku = sku
        self.description = description
        self.displayName = displayName
        self.offer = offer
        self.price = price
        self.priceIncreaseInfo = priceIncreaseInfo
    }
}

/// The display name and description of an Advanced Commerce purchase (`advancedCommerceDescriptors`).
public struct AdvancedCommerceDescriptors: Codable, Hashable, Sendable {
    /// A description of the purchase.
    public let description: String?
    /// A name suitable for display to customers.
    public let displayName: String?

    /// Creates a value; every field is optional.
    public init(description: String? = nil, displayName: String? = nil) {
        self.description = description
        self.displayName = displayName
    }
}

/// A discount offer on an Advanced Commerce item (`advancedCommerceOffer`).
public struct AdvancedCommerceOffer: Codable, Hashable, Sendable {
    /// The duration of one offer period.
    public let period: AdvancedCommerceOfferPeriod?
    /// The number of periods the offer applies (1–12).
    public let periodCount: Int32?
    /// The offer price, in milliunits.
    public let price: Int64?
    /// Why the offer applies.
    public let reason: AdvancedCommerceOfferReason?

    /// Creates a value; every field is optional.
    public init(
        period: AdvancedCommerceOfferPeriod? = nil,
        periodCount: Int32? = nil,
        price: Int64? = nil,
        reason: AdvancedCommerceOfferReason? = nil
    ) {
        self.period = period
        self.periodCount = periodCount
        self.price = price
        self.reason = reason
    }
}

/// A refund issued for an Advanced Commerce item (`advancedCommerceRefund`).
public struct AdvancedCommerceRefund: Codable, Hashable, Sendable {
    /// The refunded amount, in milliunits.
    public let refundAmount: Int64?
    /// When the refund was issued.
    public let refundDate: Date?
    /// Why the item was refunded.
    public let refundReason: AdvancedCommerceRefundReason?
    /// Whether the refund was full, prorated or custom.
    public let refundType: AdvancedCommerceRefundType?

    /// Creates a value; every field is optional.
    public init(
        refundAmount: Int64? = nil,
        refundDate: Date? = nil,
        refundReason: AdvancedCommerceRefundReason? = nil,
        refundType: AdvancedCommerceRefundType? = nil
    ) {
        self.refundAmount = refundAmount
        self.refundDate = refundDate
        self.refundReason = refundReason
        self.refundType = refundType
    }
}

/// A price increase on an Advanced Commerce renewal item (`advancedCommercePriceIncreaseInfo`).
public struct AdvancedCommercePriceIncreaseInfo: Codable, Hashable, Sendable {
    /// The SKUs whose prices change along with this item (JSON key `dependentSKUs`).
    public let dependentSKUs: [String]?
    /// The new price, in milliunits.
    public let price: Int64?
    /// Whether the increase is scheduled, pending or accepted.
    public let status: AdvancedCommercePriceIncreaseStatus?

    /// Creates a value; every field is optional.
    public init(
        dependentSKUs: [String]? = nil,
        price: Int64? = nil,
        status: AdvancedCommercePriceIncreaseStatus? = nil
    ) {
        self.dependentSKUs = dependentSKUs
        self.price = price
        self.status = status
    }
}
