public import Foundation

/// Item-level info of a subscription purchase.
public struct SubscriptionPurchaseLineItem: Codable, Hashable, Sendable {
    /// Purchased product id (for example `monthly001`).
    public var productId: String?
    /// RFC 3339 time the item expired or will expire unless extended.
    public var expiryTime: String?
    /// Set when the item auto-renews.
    public var autoRenewingPlan: AutoRenewingPlan?
    /// Set when the item is prepaid.
    public var prepaidPlan: PrepaidPlan?
    /// Base plan and offer of this item.
    public var offerDetails: OfferDetails?
    /// Set when this item will be replaced at its next renewal.
    public var deferredItemReplacement: DeferredItemReplacement?
    /// Set when this item will be removed at its next renewal.
    public var deferredItemRemoval: DeferredItemRemoval?
    /// The item this one replaced; kept for 60 days after purchase.
    public var itemReplacement: ItemReplacement?
    /// Current offer phase of this item.
    public var offerPhase: OfferPhase?
    /// Promotion applied at signup, if any.
    public var signupPromotion: SignupPromotion?
    /// Order id of the latest successful order for this item.
    public var latestSuccessfulOrderId: String?

    /// Creates a `SubscriptionPurchaseLineItem`; every field defaults to `nil`.
    public init(
        productId: String? = nil,
        expiryTime: String? = nil,
        autoRenewingPlan: AutoRenewingPlan? = nil,
        prepaidPlan: PrepaidPlan? = nil,
        offerDetails: OfferDetails? = nil,
        deferredItemReplacement: DeferredItemReplacement? = nil,
        deferredItemRemoval: DeferredItemRemoval? = nil,
        itemReplacement: ItemReplacement? = nil,
        offerPhase: OfferPhase? = nil,
        signupPromotion: SignupPromotion? = nil,
        latestSuccessfulOrderId: String? = nil
    ) {
        self.productId = productId
        self.expiryTime = expiryTime
        self.autoRenewingPlan = autoRenewingPlan
        self.prepaidPlan = prepaidPlan
        self.offerDetails = offerDetails
        self.deferredItemReplacement = deferredItemReplacement
        self.deferredItemRemoval = deferredItemRemoval
        self.itemReplacement = itemReplacement
        self.offerPhase = offerPhase
        self.signupPromotion = signupPromotion
        self.latestSuccessfulOrderId = latestSuccessfulOrderId
    }

    /// `expiryTime` parsed as an RFC 3339 timestamp; `nil` when absent or malformed.
    public var expiryDate: Date? { expiryTime.flatMap(RFC3339.date(from:)) }
}

/// Information about an auto-renewing plan.
public struct AutoRenewingPlan: Codable, Hashable, Sendable {
    /// Whether the item currently auto-renews (false once canceled).
    public var autoRenewEnabled: Bool?
    /// Current recurring price, excluding discounts and (for tax-exclusive pricing) taxes.
    public var recurringPrice: Money?
    /// The last price change for the item since signup.
    public var priceChangeDetails: SubscriptionItemPriceChangeDetails?
    /// Installment commitment details, for installment plans.
    public var installmentDetails: InstallmentPlan?
    /// The latest price step-up consent.
    public var priceStepUpConsentDetails: PriceStepUpConsentDetails?

    /// Creates a `AutoRenewingPlan`; every field defaults to `nil`.
    public init(
        autoRenewEnabled: Bool? = nil,
        recurringPrice: Money? = nil,
        priceChangeDetails: SubscriptionItemPriceChangeDetails? = nil,
        installmentDetails: InstallmentPlan? = nil,
        priceStepUpConsentDetails: PriceStepUpConsentDetails? = nil
    ) {
        self.autoRenewEnabled = autoRenewEnabled
        self.recurringPrice = recurringPrice
        self.priceChangeDetails = priceChangeDetails
        self.installmentDetails = installmentDetails
        self.priceStepUpConsentDetails = priceStepUpConsentDetails
    }
}

/// Price change information of a subscription item.
public struct SubscriptionItemPriceChangeDetails: Codable, Hashable, Sendable {
    /// New recurring price of the item.
    public var newPrice: Money?
    /// How the price is changing.
    public var priceChangeMode: PriceChangeMode?
    /// State of the price change.
    public var priceChangeState: PriceChangeState?
    /// RFC 3339 renewal time at which the new price applies; only while pending.
    public var expectedNewPriceChargeTime: String?

    /// Creates a `SubscriptionItemPriceChangeDetails`; every field defaults to `nil`.
    public init(
        newPrice: Money? = nil,
        priceChangeMode: PriceChangeMode? = nil,
        priceChangeState: PriceChangeState? = nil,
        expectedNewPriceChargeTime: String? = nil
    ) {
        self.newPrice = newPrice
        self.priceChangeMode = priceChangeMode
        self.priceChangeState = priceChangeState
        self.expectedNewPriceChargeTime = expectedNewPriceChargeTime
    }

    /// `expectedNewPriceChargeTime` parsed as an RFC 3339 timestamp; `nil` when absent or malformed.
    public var expectedNewPriceChargeDate: Date? { expectedNewPriceChargeTime.flatMap(RFC3339.date(from:)) }
}

extension SubscriptionItemPriceChangeDetails {
    /// How a subscription item price changes. Open: unknown values decode and keep their raw value.
    public struct PriceChangeMode: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The raw value Google sends.
        public let rawValue: String
        /// Wraps any raw value, including ones this type does not name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Unspecified.
        public static let unspecified = Self(rawValue: "PRICE_CHANGE_MODE_UNSPECIFIED")
        /// The price is decreasing.
        public static let priceDecrease = Self(rawValue: "PRICE_DECREASE")
        /// The price is increasing and the user must accept it.
        public static let priceIncrease = Self(rawValue: "PRICE_INCREASE")
        /// The price is increasing in opt-out mode.
        public static let optOutPriceIncrease = Self(rawValue: "OPT_OUT_PRICE_INCREASE")
        /// The raw value as text.
        public var description: String { rawValue }
    }
}

extension SubscriptionItemPriceChangeDetails {
    /// State of a subscription item price change. Open: unknown values decode and keep their raw value.
    public struct PriceChangeState: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The raw value Google sends.
        public let rawValue: String
        /// Wraps any raw value, including ones this type does not name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Unspecified.
        public static let unspecified = Self(rawValue: "PRICE_CHANGE_STATE_UNSPECIFIED")
        /// Waiting for the user to agree.
        public static let outstanding = Self(rawValue: "OUTSTANDING")
        /// Confirmed to happen for the user.
        public static let confirmed = Self(rawValue: "CONFIRMED")
        /// Applied: the user is being charged the new price.
        public static let applied = Self(rawValue: "APPLIED")
        /// The price change was canceled.
        public static let canceled = Self(rawValue: "CANCELED")
        /// The raw value as text.
        public var description: String { rawValue }
    }
}

/// A price step-up that requires user consent.
public struct PriceStepUpConsentDetails: Codable, Hashable, Sendable {
    /// State of the consent.
    public var state: State?
    /// RFC 3339 deadline for consent; without it the subscription is canceled.
    public var consentDeadlineTime: String?
    /// The new price that requires consent.
    public var newPrice: Money?

    /// Creates a `PriceStepUpConsentDetails`; every field defaults to `nil`.
    public init(
        state: State? = nil,
        consentDeadlineTime: String? = nil,
        newPrice: Money? = nil
    ) {
        self.state = state
        self.consentDeadlineTime = consentDeadlineTime
        self.newPrice = newPrice
    }

    /// `consentDeadlineTime` parsed as an RFC 3339 timestamp; `nil` when absent or malformed.
    public var consentDeadlineDate: Date? { consentDeadlineTime.flatMap(RFC3339.date(from:)) }
}

extension PriceStepUpConsentDetails {
    /// State of a price step-up consent (values not listed in the references consulted). Open: unknown values decode and keep their raw value.
    public struct State: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The raw value Google sends.
        public let rawValue: String
        /// Wraps any raw value, including ones this type does not name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The raw value as text.
        public var description: String { rawValue }
    }
}

/// Commitment and state of an installment plan.
public struct InstallmentPlan: Codable, Hashable, Sendable {
    /// Total payments the user initially committed to.
    public var initialCommittedPaymentsCount: Int?
    /// Payments committed to after each commitment period; absent means plain auto-renewal afterwards.
    public var subsequentCommittedPaymentsCount: Int?
    /// Committed payments remaining in this renewal cycle.
    public var remainingCommittedPaymentsCount: Int?
    /// Present when the plan will be canceled after the committed payments.
    public var pendingCancellation: PendingCancellation?

    /// Creates a `InstallmentPlan`; every field defaults to `nil`.
    public init(
        initialCommittedPaymentsCount: Int? = nil,
        subsequentCommittedPaymentsCount: Int? = nil,
        remainingCommittedPaymentsCount: Int? = nil,
        pendingCancellation: PendingCancellation? = nil
    ) {
        self.initialCommittedPaymentsCount = initialCommittedPaymentsCount
        self.subsequentCommittedPaymentsCount = subsequentCommittedPaymentsCount
        self.remainingCommittedPaymentsCount = remainingCommittedPaymentsCount
        self.pendingCancellation = pendingCancellation
    }
}

/// Marks an installment plan as pending cancellation (an empty object).
public struct PendingCancellation: Codable, Hashable, Sendable {
    /// Creates a `PendingCancellation`; every field defaults to `nil`.
    public init() {}
}

/// Information about a prepaid plan.
public struct PrepaidPlan: Codable, Hashable, Sendable {
    /// RFC 3339 time after which top-ups are allowed; absent for expired plans.
    public var allowExtendAfterTime: String?

    /// Creates a `PrepaidPlan`; every field defaults to `nil`.
    public init(
        allowExtendAfterTime: String? = nil
    ) {
        self.allowExtendAfterTime = allowExtendAfterTime
    }

    /// `allowExtendAfterTime` parsed as an RFC 3339 timestamp; `nil` when absent or malformed.
    public var allowExtendAfterDate: Date? { allowExtendAfterTime.flatMap(RFC3339.date(from:)) }
}

/// Base plan and offer of a subscription line item.
public struct OfferDetails: Codable, Hashable, Sendable {
    /// Base plan id; present for all base plans and offers.
    public var basePlanId: String?
    /// Offer id; only present for discounted offers.
    public var offerId: String?
    /// Latest offer tags, including tags inherited from the base plan.
    public var offerTags: [String]?

    /// Creates a `OfferDetails`; every field defaults to `nil`.
    public init(
        basePlanId: String? = nil,
        offerId: String? = nil,
        offerTags: [String]? = nil
    ) {
        self.basePlanId = basePlanId
        self.offerId = offerId
        self.offerTags = offerTags
    }
}

/// A deferred replacement of a line item.
public struct DeferredItemReplacement: Codable, Hashable, Sendable {
    /// The product id that will replace the existing one.
    public var productId: String?

    /// Creates a `DeferredItemReplacement`; every field defaults to `nil`.
    public init(
        productId: String? = nil
    ) {
        self.productId = productId
    }
}

/// A deferred removal of a line item (an empty object).
public struct DeferredItemRemoval: Codable, Hashable, Sendable {
    /// Creates a `DeferredItemRemoval`; every field defaults to `nil`.
    public init() {}
}

/// The line item that this item replaced.
public struct ItemReplacement: Codable, Hashable, Sendable {
    /// Product id of the replaced item.
    public var productId: String?
    /// Base plan id of the replaced item.
    public var basePlanId: String?
    /// Offer id of the replaced item, if any.
    public var offerId: String?
    /// Replacement mode applied during the purchase.
    public var replacementMode: ReplacementMode?

    /// Creates a `ItemReplacement`; every field defaults to `nil`.
    public init(
        productId: String? = nil,
        basePlanId: String? = nil,
        offerId: String? = nil,
        replacementMode: ReplacementMode? = nil
    ) {
        self.productId = productId
        self.basePlanId = basePlanId
        self.offerId = offerId
        self.replacementMode = replacementMode
    }
}

extension ItemReplacement {
    /// Replacement mode of an item replacement (values not listed in the references consulted). Open: unknown values decode and keep their raw value.
    public struct ReplacementMode: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The raw value Google sends.
        public let rawValue: String
        /// Wraps any raw value, including ones this type does not name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The raw value as text.
        public var description: String { rawValue }
    }
}

/// Current offer phase of a line item; exactly one field is set.
public struct OfferPhase: Codable, Hashable, Sendable {
    /// Set in a base-plan pricing phase.
    public var basePrice: BasePriceOfferPhase?
    /// Set in a free trial.
    public var freeTrial: FreeTrialOfferPhase?
    /// Set in an introductory price phase.
    public var introductoryPrice: IntroductoryPriceOfferPhase?
    /// Set in a proration period.
    public var prorationPeriod: ProrationPeriodOfferPhase?

    /// Creates a `OfferPhase`; every field defaults to `nil`.
    public init(
        basePrice: BasePriceOfferPhase? = nil,
        freeTrial: FreeTrialOfferPhase? = nil,
        introductoryPrice: IntroductoryPriceOfferPhase? = nil,
        prorationPeriod: ProrationPeriodOfferPhase? = nil
    ) {
        self.basePrice = basePrice
        self.freeTrial = freeTrial
        self.introductoryPrice = introductoryPrice
        self.prorationPeriod = prorationPeriod
    }
}

/// A base-plan pricing phase (an empty object).
public struct BasePriceOfferPhase: Codable, Hashable, Sendable {
    /// Creates a `BasePriceOfferPhase`; every field defaults to `nil`.
    public init() {}
}

/// A free-trial phase (an empty object).
public struct FreeTrialOfferPhase: Codable, Hashable, Sendable {
    /// Creates a `FreeTrialOfferPhase`; every field defaults to `nil`.
    public init() {}
}

/// An introductory price phase (an empty object).
public struct IntroductoryPriceOfferPhase: Codable, Hashable, Sendable {
    /// Creates a `IntroductoryPriceOfferPhase`; every field defaults to `nil`.
    public init() {}
}

/// A proration period phase.
public struct ProrationPeriodOfferPhase: Codable, Hashable, Sendable {
    /// Offer phase type before the proration period, when updated from one.
    public var originalOfferPhaseType: String?

    /// Creates a `ProrationPeriodOfferPhase`; every field defaults to `nil`.
    public init(
        originalOfferPhaseType: String? = nil
    ) {
        self.originalOfferPhaseType = originalOfferPhaseType
    }
}

/// Promotion applied to a line item at signup.
public struct SignupPromotion: Codable, Hashable, Sendable {
    /// Set when a one-time code was applied.
    public var oneTimeCode: OneTimeCode?
    /// Set when a vanity code was applied.
    public var vanityCode: VanityCode?

    /// Creates a `SignupPromotion`; every field defaults to `nil`.
    public init(
        oneTimeCode: OneTimeCode? = nil,
        vanityCode: VanityCode? = nil
    ) {
        self.oneTimeCode = oneTimeCode
        self.vanityCode = vanityCode
    }
}

/// A single-use promotion code (an empty object).
public struct OneTimeCode: Codable, Hashable, Sendable {
    /// Creates a `OneTimeCode`; every field defaults to `nil`.
    public init() {}
}

/// A multiple-use, predefined promotion code.
public struct VanityCode: Codable, Hashable, Sendable {
    /// The promotion code.
    public var promotionCode: String?

    /// Creates a `VanityCode`; every field defaults to `nil`.
    public init(
        promotionCode: String? = nil
    ) {
        self.promotionCode = promotionCode
    }
}
