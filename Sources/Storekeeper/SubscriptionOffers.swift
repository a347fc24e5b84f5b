/// The offers a store reports for a subscription: the one its current period was bought with, and
/// the win-back offers the customer may redeem (App Store renewal info `eligibleWinBackOfferIds`).
public struct SubscriptionOffers: Sendable, Hashable, Codable {
    /// The offer applied to the current period's transaction, if any.
    public var current: AppliedOffer?
    /// Win-back offers the store says the customer is eligible for (an ended subscription).
    public var eligibleWinBackOfferIDs: [String]

    public init(current: AppliedOffer? = nil, eligibleWinBackOfferIDs: [String] = []) {
        self.current = current
        self.eligibleWinBackOfferIDs = eligibleWinBackOfferIDs
    }

    /// Nothing to tell.
    public var isEmpty: Bool { current == nil && eligibleWinBackOfferIDs.isEmpty }
}

/// An offer a transaction was bought with.
public struct AppliedOffer: Sendable, Hashable, Codable {
    public var kind: OfferKind
    /// The offer's id (promotional, offer code, win-back); nil for an introductory offer.
    public var id: String?

    public init(kind: OfferKind, id: String?) {
        self.kind = kind
        self.id = id
    }
}

/// What kind of offer: open, as stores add kinds (an unknown one keeps its raw value).
public struct OfferKind: StringValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let introductory = Self(rawValue: "introductory")
    public static let promotional = Self(rawValue: "promotional")
    public static let offerCode = Self(rawValue: "offer_code")
    public static let winBack = Self(rawValue: "win_back")
}
