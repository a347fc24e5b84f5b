public import AppStoreServer
import Foundation

/// An app the simulated App Store sells for: its identity, where its server notifications go in each
/// environment and whether billing grace periods are enabled. An app is sold in Sandbox and in
/// Production at once; `environment` is only the default of purchases that name none.
public struct SimulatedApp: Codable, Sendable, Hashable {
    /// The bundle id, e.g. `com.example.app`.
    public var bundleId: String
    /// The app's Apple id (`appAppleId`).
    public var appAppleId: Int64
    /// The default environment: of purchases made without one, and of the App Store Server API
    /// served at the simulator's base URL (`sandboxBaseURL` and `productionBaseURL` each serve one).
    public var environment: Environment
    /// Where Production notifications are POSTed (App Store Connect's Production Server URL); nil
    /// sends none (they are still kept).
    public var productionNotificationURL: String?
    /// Where Sandbox notifications are POSTed (App Store Connect's Sandbox Server URL); nil sends
    /// none (they are still kept).
    public var sandboxNotificationURL: String?
    /// Billing grace period in days (Apple offers 3, 16 or 28); nil disables grace periods.
    public var gracePeriodDays: Int?
    /// The storefront's country code (`storefront`).
    public var storefront: String
    /// The storefront's Apple id (`storefrontId`).
    public var storefrontId: String

    /// The notification URL of the default environment; setting it sets both environments' URL.
    public var notificationURL: String? {
        get { notificationURL(for: environment) }
        set {
            productionNotificationURL = newValue
            sandboxNotificationURL = newValue
        }
    }

    /// Describes an app. `notificationURL` is the URL of both environments unless
    /// `productionNotificationURL` or `sandboxNotificationURL` names another.
    public init(
        bundleId: String, appAppleId: Int64, environment: Environment = .sandbox, notificationURL: String? = nil,
        gracePeriodDays: Int? = nil, storefront: String = "USA", storefrontId: String = "143441",
        productionNotificationURL: String? = nil, sandboxNotificationURL: String? = nil
    ) {
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
        self.productionNotificationURL = productionNotificationURL ?? notificationURL
        self.sandboxNotificationURL = sandboxNotificationURL ?? notificationURL
        self.gracePeriodDays = gracePeriodDays
        self.storefront = storefront
        self.storefrontId = storefrontId
    }

    /// Where notifications of `environment` go.
    public func notificationURL(for environment: Environment) -> String? {
        environment == .production ? productionNotificationURL : sandboxNotificationURL
    }

    enum CodingKeys: String, CodingKey {
        case bundleId, appAppleId, environment, notificationURL, productionNotificationURL, sandboxNotificationURL
        case gracePeriodDays, storefront, storefrontId
    }

    /// Decodes an app; only `bundleId` and `appAppleId` are required. `notificationURL` is the URL
    /// of both environments, `productionNotificationURL` / `sandboxNotificationURL` of one.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            bundleId: try container.decode(String.self, forKey: .bundleId),
            appAppleId: try container.decode(Int64.self, forKey: .appAppleId),
            environment: try container.decodeIfPresent(Environment.self, forKey: .environment) ?? .sandbox,
            notificationURL: try container.decodeIfPresent(String.self, forKey: .notificationURL),
            gracePeriodDays: try container.decodeIfPresent(Int.self, forKey: .gracePeriodDays),
            storefront: try container.decodeIfPresent(String.self, forKey: .storefront) ?? "USA",
            storefrontId: try container.decodeIfPresent(String.self, forKey: .storefrontId) ?? "143441",
            productionNotificationURL: try container.decodeIfPresent(String.self, forKey: .productionNotificationURL),
            sandboxNotificationURL: try container.decodeIfPresent(String.self, forKey: .sandboxNotificationURL))
    }

    /// Encodes every stored member (each environment's URL; no `notificationURL`).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(bundleId, forKey: .bundleId)
        try container.encode(appAppleId, forKey: .appAppleId)
        try container.encode(environment, forKey: .environment)
        try container.encodeIfPresent(productionNotificationURL, forKey: .productionNotificationURL)
        try container.encodeIfPresent(sandboxNotificationURL, forKey: .sandboxNotificationURL)
        try container.encodeIfPresent(gracePeriodDays, forKey: .gracePeriodDays)
        try container.encode(storefront, forKey: .storefront)
        try container.encode(storefrontId, forKey: .storefrontId)
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
    /// Its price in other storefronts, by storefront code (`DEU`, `JPN`): what a customer of an
    /// app in that storefront pays, in its currency. Elsewhere `price` in `currency`.
    public var storefrontPrices: [String: StorefrontPrice] = [:]

    /// The price and currency a customer of an app in `storefront` pays.
    public func price(in storefront: String) -> StorefrontPrice {
        storefrontPrices[storefront] ?? StorefrontPrice(price: price, currency: currency)
    }

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
        storefrontPrices =
            try container.decodeIfPresent([String: StorefrontPrice].self, forKey: .storefrontPrices) ?? [:]
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

/// A product's price in one storefront: milliunits of the storefront's currency.
public struct StorefrontPrice: Codable, Sendable, Hashable {
    /// Milliunits of `currency` (1500000 is 1500 JPY).
    public var price: Int64
    /// ISO 4217 currency code.
    public var currency: String

    /// Describes a price.
    public init(price: Int64, currency: String) {
        self.price = price
        self.currency = currency
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
