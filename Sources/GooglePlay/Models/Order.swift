public import Foundation

/// An order (`orders.get` / `orders.batchget`).
public struct Order: Codable, Hashable, Sendable {
    /// Line items of the order.
    public var lineItems: [OrderLineItem]?
    /// Originating sales channel of the order.
    public var salesChannel: SalesChannel?
    /// The order id.
    public var orderId: String?
    /// Purchase token of the subscription or item.
    public var purchaseToken: String?
    /// State of the order.
    public var state: State?
    /// RFC 3339 time the order was created.
    public var createTime: String?
    /// RFC 3339 time of the last event on the order.
    public var lastEventTime: String?
    /// Buyer address for tax computation.
    public var buyerAddress: BuyerAddress?
    /// Final amount paid, including discounts and taxes.
    public var total: Money?
    /// Total tax paid.
    public var tax: Money?
    /// Details of the order at creation time.
    public var orderDetails: OrderDetails?
    /// Events that modified the order.
    public var orderHistory: OrderHistory?
    /// Developer revenue in the buyer's currency after refunds, taxes and fees.
    public var developerRevenueInBuyerCurrency: Money?
    /// Play Points applied to the order.
    public var pointsDetails: PointsDetails?

    /// Creates a `Order`; every field defaults to `nil`.
    public init(
        lineItems: [OrderLineItem]? = nil,
        salesChannel: SalesChannel? = nil,
        orderId: String? = nil,
        purchaseToken: String? = nil,
        state: State? = nil,
        createTime: String? = nil,
        lastEventTime: String? = nil,
        buyerAddress: BuyerAddress? = nil,
        total: Money? = nil,
        tax: Money? = nil,
        orderDetails: OrderDetails? = nil,
        orderHistory: OrderHistory? = nil,
        developerRevenueInBuyerCurrency: Money? = nil,
        pointsDetails: PointsDetails? = nil
    ) {
        self.lineItems = lineItems
        self.salesChannel = salesChannel
        self.orderId = orderId
        self.purchaseToken = purchaseToken
        self.state = state
        self.createTime = createTime
        self.lastEventTime = lastEventTime
        self.buyerAddress = buyerAddress
        self.total = total
        self.tax = tax
        self.orderDetails = orderDetails
        self.orderHistory = orderHistory
        self.developerRevenueInBuyerCurrency = developerRevenueInBuyerCurrency
        self.pointsDetails = pointsDetails
    }

    /// `createTime` parsed as an RFC 3339 timestamp; `nil` when absent or malformed.
    public var createDate: Date? { createTime.flatMap(RFC3339.date(from:)) }

    /// `lastEventTime` parsed as an RFC 3339 timestamp; `nil` when absent or malformed.
    public var lastEventDate: Date? { lastEventTime.flatMap(RFC3339.date(from:)) }
}

extension Order {
    /// State of an order. Open: unknown values decode and keep their raw value.
    public struct State: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The raw value Google sends.
        public let rawValue: String
        /// Wraps any raw value, including ones this type does not name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Unspecified; not used.
        public static let unspecified = Self(rawValue: "STATE_UNSPECIFIED")
        /// Created and waiting to be processed.
        public static let pending = Self(rawValue: "PENDING")
        /// Processed successfully.
        public static let processed = Self(rawValue: "PROCESSED")
        /// Canceled before being processed.
        public static let canceled = Self(rawValue: "CANCELED")
        /// A requested refund is waiting to be processed.
        public static let pendingRefund = Self(rawValue: "PENDING_REFUND")
        /// Part of the amount was refunded.
        public static let partiallyRefunded = Self(rawValue: "PARTIALLY_REFUNDED")
        /// The full amount was refunded.
        public static let refunded = Self(rawValue: "REFUNDED")
        /// The raw value as text.
        public var description: String { rawValue }
    }
}

extension Order {
    /// Originating sales channel of an order. Open: unknown values decode and keep their raw value.
    public struct SalesChannel: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The raw value Google sends.
        public let rawValue: String
        /// Wraps any raw value, including ones this type does not name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Unspecified; not used.
        public static let unspecified = Self(rawValue: "SALES_CHANNEL_UNSPECIFIED")
        /// Initiated in the app.
        public static let inApp = Self(rawValue: "IN_APP")
        /// Initiated from a PC emulator.
        public static let pcEmulator = Self(rawValue: "PC_EMULATOR")
        /// Initiated from a native PC app.
        public static let nativePC = Self(rawValue: "NATIVE_PC")
        /// Initiated from the Google Play store.
        public static let playStore = Self(rawValue: "PLAY_STORE")
        /// Initiated outside the Google Play store.
        public static let outsidePlayStore = Self(rawValue: "OUTSIDE_PLAY_STORE")
        /// The raw value as text.
        public var description: String { rawValue }
    }
}

/// Buyer address used for tax computation.
public struct BuyerAddress: Codable, Hashable, Sendable {
    /// ISO 3166-1 alpha-2 country code.
    public var buyerCountry: String?
    /// Top-level administrative subdivision; omitted when Google is merchant of record.
    public var buyerState: String?
    /// Postal code; omitted when Google is merchant of record.
    public var buyerPostcode: String?

    /// Creates a `BuyerAddress`; every field defaults to `nil`.
    public init(
        buyerCountry: String? = nil,
        buyerState: String? = nil,
        buyerPostcode: String? = nil
    ) {
        self.buyerCountry = buyerCountry
        self.buyerState = buyerState
        self.buyerPostcode = buyerPostcode
    }
}

/// Details of an order at creation time.
public struct OrderDetails: Codable, Hashable, Sendable {
    /// Whether the listed price included tax.
    public var taxInclusive: Bool?

    /// Creates a `OrderDetails`; every field defaults to `nil`.
    public init(
        taxInclusive: Bool? = nil
    ) {
        self.taxInclusive = taxInclusive
    }
}

/// A line item of an order (Google's `LineItem`).
public struct OrderLineItem: Codable, Hashable, Sendable {
    /// Developer-specified product name in the buyer's locale.
    public var productTitle: String?
    /// Product id or SKU.
    public var productId: String?
    /// Listed price, excluding discounts; may or may not include tax.
    public var listingPrice: Money?
    /// Total paid for this item, including discounts and tax.
    public var total: Money?
    /// Tax paid for this item.
    public var tax: Money?
    /// Set for one-time purchases.
    public var oneTimePurchaseDetails: OneTimePurchaseDetails?
    /// Set for subscription purchases.
    public var subscriptionDetails: SubscriptionDetails?
    /// Set for paid app purchases.
    public var paidAppDetails: PaidAppDetails?

    /// Creates a `OrderLineItem`; every field defaults to `nil`.
    public init(
        productTitle: String? = nil,
        productId: String? = nil,
        listingPrice: Money? = nil,
        total: Money? = nil,
        tax: Money? = nil,
        oneTimePurchaseDetails: OneTimePurchaseDetails? = nil,
        subscriptionDetails: SubscriptionDetails? = nil,
        paidAppDetails: PaidAppDetails? = nil
    ) {
        self.productTitle = productTitle
        self.productId = productId
        self.listingPrice = listingPrice
        self.total = total
        self.tax = tax
        self.oneTimePurchaseDetails = oneTimePurchaseDetails
        self.subscriptionDetails = subscriptionDetails
        self.paidAppDetails = paidAppDetails
    }
}

/// One-time purchase details of an order line item.
public struct OneTimePurchaseDetails: Codable, Hashable, Sendable {
    /// Offer id of the one-time purchase offer.
    public var offerId: String?
    /// Purchase option id (also set for variant offers).
    public var purchaseOptionId: String?
    /// Quantity purchased.
    public var quantity: Int?
    /// Set for pre-orders, even after fulfilment.
    public var preorderDetails: PreorderDetails?
    /// Set for rentals.
    public var rentalDetails: RentalDetails?

    /// Creates a `OneTimePurchaseDetails`; every field defaults to `nil`.
    public init(
        offerId: String? = nil,
        purchaseOptionId: String? = nil,
        quantity: Int? = nil,
        preorderDetails: PreorderDetails? = nil,
        rentalDetails: RentalDetails? = nil
    ) {
        self.offerId = offerId
        self.purchaseOptionId = purchaseOptionId
        self.quantity = quantity
        self.preorderDetails = preorderDetails
        self.rentalDetails = rentalDetails
    }
}

/// Pre-order details of an order line item (no fields documented).
public struct PreorderDetails: Codable, Hashable, Sendable {
    /// Creates a `PreorderDetails`; every field defaults to `nil`.
    public init() {}
}

/// Rental details of an order line item (no fields documented).
public struct RentalDetails: Codable, Hashable, Sendable {
    /// Creates a `RentalDetails`; every field defaults to `nil`.
    public init() {}
}

/// Paid app details of an order line item (an empty object).
public struct PaidAppDetails: Codable, Hashable, Sendable {
    /// Creates a `PaidAppDetails`; every field defaults to `nil`.
    public init() {}
}

/// Subscription details of an order line item.
public struct SubscriptionDetails: Codable, Hashable, Sendable {
    /// Base plan id.
    public var basePlanId: String?
    /// Offer id of the current offer.
    public var offerId: String?
    /// Deprecated: use `offerPhaseDetails`. Pricing phase funded by this order.
    public var offerPhase: OfferPhase?
    /// Pricing phase funded by this order.
    public var offerPhaseDetails: OfferPhaseDetails?
    /// RFC 3339 start of the billing period funded by this order.
    public var servicePeriodStartTime: String?
    /// RFC 3339 end of the billing period funded by this order.
    public var servicePeriodEndTime: String?

    /// Creates a `SubscriptionDetails`; every field defaults to `nil`.
    public init(
        basePlanId: String? = nil,
        offerId: String? = nil,
        offerPhase: OfferPhase? = nil,
        offerPhaseDetails: OfferPhaseDetails? = nil,
        servicePeriodStartTime: String? = nil,
        servicePeriodEndTime: String? = nil
    ) {
        self.basePlanId = basePlanId
        self.offerId = offerId
        self.offerPhase = offerPhase
        self.offerPhaseDetails = offerPhaseDetails
        self.servicePeriodStartTime = servicePeriodStartTime
        self.servicePeriodEndTime = servicePeriodEndTime
    }

    /// `servicePeriodStartTime` parsed as an RFC 3339 timestamp; `nil` when absent or malformed.
    public var servicePeriodStartDate: Date? { servicePeriodStartTime.flatMap(RFC3339.date(from:)) }

    /// `servicePeriodEndTime` parsed as an RFC 3339 timestamp; `nil` when absent or malformed.
    public var servicePeriodEndDate: Date? { servicePeriodEndTime.flatMap(RFC3339.date(from:)) }
}

extension SubscriptionDetails {
    /// Pricing phase funded by an order (deprecated field). Open: unknown values decode and keep their raw value.
    public struct OfferPhase: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The raw value Google sends.
        public let rawValue: String
        /// Wraps any raw value, including ones this type does not name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Unspecified; not used.
        public static let unspecified = Self(rawValue: "OFFER_PHASE_UNSPECIFIED")
        /// A base price period.
        public static let base = Self(rawValue: "BASE")
        /// An introductory pricing period.
        public static let introductory = Self(rawValue: "INTRODUCTORY")
        /// A free trial period.
        public static let freeTrial = Self(rawValue: "FREE_TRIAL")
        /// The raw value as text.
        public var description: String { rawValue }
    }
}

/// Pricing phase funded by an order; exactly one field is set.
public struct OfferPhaseDetails: Codable, Hashable, Sendable {
    /// A base price period.
    public var baseDetails: BaseDetails?
    /// A free trial period.
    public var freeTrialDetails: FreeTrialDetails?
    /// An introductory pricing period.
    public var introductoryPriceDetails: IntroductoryPriceDetails?
    /// A proration period.
    public var prorationPeriodDetails: ProrationPeriodDetails?

    /// Creates a `OfferPhaseDetails`; every field defaults to `nil`.
    public init(
        baseDetails: BaseDetails? = nil,
        freeTrialDetails: FreeTrialDetails? = nil,
        introductoryPriceDetails: IntroductoryPriceDetails? = nil,
        prorationPeriodDetails: ProrationPeriodDetails? = nil
    ) {
        self.baseDetails = baseDetails
        self.freeTrialDetails = freeTrialDetails
        self.introductoryPriceDetails = introductoryPriceDetails
        self.prorationPeriodDetails = prorationPeriodDetails
    }
}

/// A base price period (an empty object).
public struct BaseDetails: Codable, Hashable, Sendable {
    /// Creates a `BaseDetails`; every field defaults to `nil`.
    public init() {}
}

/// A free trial period (an empty object).
public struct FreeTrialDetails: Codable, Hashable, Sendable {
    /// Creates a `FreeTrialDetails`; every field defaults to `nil`.
    public init() {}
}

/// An introductory pricing period (an empty object).
public struct IntroductoryPriceDetails: Codable, Hashable, Sendable {
    /// Creates a `IntroductoryPriceDetails`; every field defaults to `nil`.
    public init() {}
}

/// A proration period.
public struct ProrationPeriodDetails: Codable, Hashable, Sendable {
    /// Original offer phase merged into the proration period, if any.
    public var originalOfferPhase: String?

    /// Creates a `ProrationPeriodDetails`; every field defaults to `nil`.
    public init(
        originalOfferPhase: String? = nil
    ) {
        self.originalOfferPhase = originalOfferPhase
    }
}

/// Events that modified an order.
public struct OrderHistory: Codable, Hashable, Sendable {
    /// When the order was processed.
    public var processedEvent: ProcessedEvent?
    /// When the order was canceled.
    public var cancellationEvent: CancellationEvent?
    /// Partial refunds of the order.
    public var partialRefundEvents: [PartialRefundEvent]?
    /// When the order was fully refunded.
    public var refundEvent: RefundEvent?

    /// Creates a `OrderHistory`; every field defaults to `nil`.
    public init(
        processedEvent: ProcessedEvent? = nil,
        cancellationEvent: CancellationEvent? = nil,
        partialRefundEvents: [PartialRefundEvent]? = nil,
        refundEvent: RefundEvent? = nil
    ) {
        self.processedEvent = processedEvent
        self.cancellationEvent = cancellationEvent
        self.partialRefundEvents = partialRefundEvents
        self.refundEvent = refundEvent
    }
}

/// When an order was processed.
public struct ProcessedEvent: Codable, Hashable, Sendable {
    /// RFC 3339 time the order was processed.
    public var eventTime: String?

    /// Creates a `ProcessedEvent`; every field defaults to `nil`.
    public init(
        eventTime: String? = nil
    ) {
        self.eventTime = eventTime
    }

    /// `eventTime` parsed as an RFC 3339 timestamp; `nil` when absent or malformed.
    public var eventDate: Date? { eventTime.flatMap(RFC3339.date(from:)) }
}

/// When an order was canceled.
public struct CancellationEvent: Codable, Hashable, Sendable {
    /// RFC 3339 time the order was canceled.
    public var eventTime: String?

    /// Creates a `CancellationEvent`; every field defaults to `nil`.
    public init(
        eventTime: String? = nil
    ) {
        self.eventTime = eventTime
    }

    /// `eventTime` parsed as an RFC 3339 timestamp; `nil` when absent or malformed.
    public var eventDate: Date? { eventTime.flatMap(RFC3339.date(from:)) }
}

/// A partial refund of an order.
public struct PartialRefundEvent: Codable, Hashable, Sendable {
    /// RFC 3339 time the partial refund was created.
    public var createTime: String?
    /// RFC 3339 time the partial refund was processed.
    public var processTime: String?
    /// State of the partial refund.
    public var state: State?
    /// Amounts of the partial refund.
    public var refundDetails: RefundDetails?

    /// Creates a `PartialRefundEvent`; every field defaults to `nil`.
    public init(
        createTime: String? = nil,
        processTime: String? = nil,
        state: State? = nil,
        refundDetails: RefundDetails? = nil
    ) {
        self.createTime = createTime
        self.processTime = processTime
        self.state = state
        self.refundDetails = refundDetails
    }

    /// `createTime` parsed as an RFC 3339 timestamp; `nil` when absent or malformed.
    public var createDate: Date? { createTime.flatMap(RFC3339.date(from:)) }

    /// `processTime` parsed as an RFC 3339 timestamp; `nil` when absent or malformed.
    public var processDate: Date? { processTime.flatMap(RFC3339.date(from:)) }
}

extension PartialRefundEvent {
    /// State of a partial refund. Open: unknown values decode and keep their raw value.
    public struct State: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The raw value Google sends.
        public let rawValue: String
        /// Wraps any raw value, including ones this type does not name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Unspecified; not used.
        public static let unspecified = Self(rawValue: "STATE_UNSPECIFIED")
        /// Created but not yet processed.
        public static let pending = Self(rawValue: "PENDING")
        /// Processed successfully.
        public static let processedSuccessfully = Self(rawValue: "PROCESSED_SUCCESSFULLY")
        /// The raw value as text.
        public var description: String { rawValue }
    }
}

/// A full refund of an order.
public struct RefundEvent: Codable, Hashable, Sendable {
    /// RFC 3339 time the order was fully refunded.
    public var eventTime: String?
    /// Amounts of the refund.
    public var refundDetails: RefundDetails?
    /// Why the order was refunded.
    public var refundReason: RefundReason?

    /// Creates a `RefundEvent`; every field defaults to `nil`.
    public init(
        eventTime: String? = nil,
        refundDetails: RefundDetails? = nil,
        refundReason: RefundReason? = nil
    ) {
        self.eventTime = eventTime
        self.refundDetails = refundDetails
        self.refundReason = refundReason
    }

    /// `eventTime` parsed as an RFC 3339 timestamp; `nil` when absent or malformed.
    public var eventDate: Date? { eventTime.flatMap(RFC3339.date(from:)) }
}

extension RefundEvent {
    /// Why an order was refunded. Open: unknown values decode and keep their raw value.
    public struct RefundReason: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The raw value Google sends.
        public let rawValue: String
        /// Wraps any raw value, including ones this type does not name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Unspecified; not used.
        public static let unspecified = Self(rawValue: "REFUND_REASON_UNSPECIFIED")
        /// Another reason.
        public static let other = Self(rawValue: "OTHER")
        /// The order was charged back.
        public static let chargeback = Self(rawValue: "CHARGEBACK")
        /// The raw value as text.
        public var description: String { rawValue }
    }
}

/// Amounts of a partial or full refund.
public struct RefundDetails: Codable, Hashable, Sendable {
    /// Total refunded, including tax.
    public var total: Money?
    /// Tax refunded.
    public var tax: Money?

    /// Creates a `RefundDetails`; every field defaults to `nil`.
    public init(
        total: Money? = nil,
        tax: Money? = nil
    ) {
        self.total = total
        self.tax = tax
    }
}

/// Play Points applied to an order.
public struct PointsDetails: Codable, Hashable, Sendable {
    /// Id of the Play Points offer.
    public var pointsOfferId: String?
    /// Monetary value of the Play Points coupon.
    public var pointsCouponValue: Money?
    /// Discount rate in micros (0 to 1,000,000).
    public var pointsDiscountRateMicros: Int64String?
    /// Number of Play Points spent.
    public var pointsSpent: Int64String?

    /// Creates a `PointsDetails`; every field defaults to `nil`.
    public init(
        pointsOfferId: String? = nil,
        pointsCouponValue: Money? = nil,
        pointsDiscountRateMicros: Int64String? = nil,
        pointsSpent: Int64String? = nil
    ) {
        self.pointsOfferId = pointsOfferId
        self.pointsCouponValue = pointsCouponValue
        self.pointsDiscountRateMicros = pointsDiscountRateMicros
        self.pointsSpent = pointsSpent
    }
}
