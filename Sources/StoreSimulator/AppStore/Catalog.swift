public import AppStoreServer
import Foundation

/// An app the simulated App Store sells for: its identity, where its server notifications go and
/// whether billing grace periods are enabled.
public struct SimulatedApp: Codable, Sendable, Hashable {
    /// The bundle id, e.g. `com.example.app`.
    public var bundleId: String
    /// The app's Apple id (`appAppleId`).
    public var appAppleId: Int64
    /// Sandbox or Production.
    public var environment: Environment
    /// Where App Store Server Notifications V2 are POSTed; nil sends none (they are still kept).
    public var notificationURL: String?
    /// Billing grace period in days (Apple offers 3, 16 or 28); nil disables grace periods.
    public var gracePeriodDays: Int?
    /// The storefront's country code (`storefront`).
    public var storefront: String
    /// The storefront's Apple id (`storefrontId`).
    public var storefrontId: String

    /// Describes an app.
    public init(
        bundleId: String, appAppleId: Int64, environment: Environment = .sandbox, notificationURL: String? = nil,
        gracePeriodDays: Int? = nil, storefront: String = "USA", storefrontId: String = "143441"
    ) {
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
        self.notificationURL = notificationURL
        self.gracePeriodDays = gracePeriodDays
        self.storefront = storefront
        self.storefrontId = storefrontId
    }

    /// Decodes an app; only `bundleId` and `appAppleId` are required.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            bundleId: try container.decode(String.self, forKey: .bundleId),
            appAppleId: try container.decode(Int64.self, forKey: .appAppleId),
            environment: try container.decodeIfPresent(Environment.self, forKey: .environment) ?? .sandbox,
            notificationURL: try container.decodeIfPresent(String.self, forKey: .notificationURL),
            gracePeriodDays: try container.decodeIfPresent(Int.self, forKey: .gracePeriodDays),
            storefront: try container.decodeIfPresent(String.self, forKey: .storefront) ?? "USA",
            storefrontId: try container.decodeIfPresent(String.self, forKey: .storefrontId) ?? "143441")
    }
}

/// A product in the simulated catalog, of one of the four App Store product types.
public struct SimulatedProduct: Codable, Sendable, Hashable {
    /// The App Store product types.
    public enum Kind: String, Codable, Sendable, Hashable {
        /// An auto-renewable subscription (in a group, with a level and a period).
        case autoRenewable
        /// A non-renewing subscription.
        case nonRenewing
        /// A consumable.
        case consumable
        /// A non-consumable.
        case nonConsumable
    }

    /// The product id.
    public var productId: String
    /// The bundle id of the app selling it.
    public var bundleId: String
    /// Its type.
    public var kind: Kind
    /// Price in milliunits of `currency` (9990 is 9.99).
    public var price: Int64
    /// ISO 4217 currency code.
    public var currency: String
    /// The subscription group (auto-renewable only).
    public var subscriptionGroupIdentifier: String?
    /// The level in the group: 1 is the highest tier (auto-renewable only).
    public var groupLevel: Int?
    /// The billing period as an ISO 8601 duration: `P1W`, `P1M`, `P1Y`, … (auto-renewable only).
    public var period: String?

    /// Describes a product; prefer the static constructors.
    public init(
        productId: String, bundleId: String, kind: Kind, price: Int64, currency: String = "USD",
        subscriptionGroupIdentifier: String? = nil, groupLevel: Int? = nil, period: String? = nil
    ) {
        self.productId = productId
        self.bundleId = bundleId
        self.kind = kind
        self.price = price
        self.currency = currency
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.groupLevel = groupLevel
        self.period = period
    }

    /// Decodes a product; `currency` defaults to USD.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            productId: try container.decode(String.self, forKey: .productId),
            bundleId: try container.decode(String.self, forKey: .bundleId),
            kind: try container.decode(Kind.self, forKey: .kind),
            price: try container.decode(Int64.self, forKey: .price),
            currency: try container.decodeIfPresent(String.self, forKey: .currency) ?? "USD",
            subscriptionGroupIdentifier: try container.decodeIfPresent(
                String.self, forKey: .subscriptionGroupIdentifier),
            groupLevel: try container.decodeIfPresent(Int.self, forKey: .groupLevel),
            period: try container.decodeIfPresent(String.self, forKey: .period))
    }

    /// An auto-renewable subscription.
    public static func autoRenewable(
        _ productId: String, bundleId: String, group: String, level: Int, period: String, price: Int64,
        currency: String = "USD"
    ) -> Self {
        Self(
            productId: productId, bundleId: bundleId, kind: .autoRenewable, price: price, currency: currency,
            subscriptionGroupIdentifier: group, groupLevel: level, period: period)
    }

    /// A one-time product: consumable, non-consumable or non-renewing subscription.
    public static func oneTime(
        _ productId: String, bundleId: String, kind: Kind, price: Int64, currency: String = "USD"
    ) -> Self {
        Self(productId: productId, bundleId: bundleId, kind: kind, price: price, currency: currency)
    }

    var transactionType: TransactionType {
        switch kind {
        case .autoRenewable: .autoRenewableSubscription
        case .nonRenewing: .nonRenewingSubscription
        case .consumable: .consumable
        case .nonConsumable: .nonConsumable
        }
    }
}

/// An offer applied to a purchase's first transaction.
public struct SimulatedOffer: Codable, Sendable, Hashable {
    /// Introductory, promotional, offer code or win-back.
    public var type: OfferType
    /// The offer's id (promotional offers and offer codes).
    public var identifier: String?
    /// Free trial, pay as you go, pay up front.
    public var discountType: OfferDiscountType?
    /// The discounted price in milliunits (0 for a free trial); nil keeps the product's price.
    public var price: Int64?
    /// The offer's period (ISO 8601), which replaces the product's for the first transaction.
    public var period: String?

    /// Describes an offer.
    public init(
        type: OfferType, identifier: String? = nil, discountType: OfferDiscountType? = nil, price: Int64? = nil,
        period: String? = nil
    ) {
        self.type = type
        self.identifier = identifier
        self.discountType = discountType
        self.price = price
        self.period = period
    }

    /// A free trial introductory offer lasting `period`.
    public static func freeTrial(_ period: String) -> Self {
        Self(type: .introductory, discountType: .freeTrial, price: 0, period: period)
    }
}
