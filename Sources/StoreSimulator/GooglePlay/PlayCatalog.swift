public import Foundation

/// Where an app's real-time developer notifications are pushed: a Pub/Sub push subscription with
/// authentication (an OIDC token for `serviceAccountEmail`, audience `audience`).
public struct PlayPushSubscription: Codable, Sendable, Hashable {
    /// The subscription's full name, `projects/{project}/subscriptions/{subscription}`.
    public var name: String
    /// The push endpoint (the receiver's URL).
    public var endpoint: String
    /// More endpoints of the same receiver (instances behind no load balancer): each push goes to
    /// one of `endpoint` and these, chosen at random (seeded by
    /// ``GooglePlaySimulation/Configuration/deliverySeed``); a redelivery avoids endpoints that did
    /// not answer this message before.
    public var otherEndpoints: [String]
    /// The OIDC token's `aud` (Pub/Sub's default is the endpoint URL).
    public var audience: String
    /// The push service account (`email` of the OIDC token).
    public var serviceAccountEmail: String

    /// Describes a push subscription; the audience defaults to the endpoint.
    public init(
        name: String = "projects/storekeeper-simulator/subscriptions/play-rtdn", endpoint: String,
        audience: String? = nil,
        serviceAccountEmail: String = "pubsub-push@storekeeper-simulator.iam.gserviceaccount.com",
        otherEndpoints: [String] = []
    ) {
        self.name = name
        self.endpoint = endpoint
        self.otherEndpoints = otherEndpoints
        self.audience = audience ?? endpoint
        self.serviceAccountEmail = serviceAccountEmail
    }

    /// Every endpoint a push may go to.
    public var endpoints: [String] { [endpoint] + otherEndpoints }

    /// Decodes a push subscription; only `endpoint` is required.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            name: try container.decodeIfPresent(String.self, forKey: .name)
                ?? "projects/storekeeper-simulator/subscriptions/play-rtdn",
            endpoint: try container.decode(String.self, forKey: .endpoint),
            audience: try container.decodeIfPresent(String.self, forKey: .audience),
            serviceAccountEmail: try container.decodeIfPresent(String.self, forKey: .serviceAccountEmail)
                ?? "pubsub-push@storekeeper-simulator.iam.gserviceaccount.com",
            otherEndpoints: try container.decodeIfPresent([String].self, forKey: .otherEndpoints) ?? [])
    }
}

/// An app on the simulated Google Play.
public struct SimulatedPlayApp: Codable, Sendable, Hashable {
    /// The package name, e.g. `com.example.app`.
    public var packageName: String
    /// Where RTDN go; nil sends none (they are still recorded).
    public var push: PlayPushSubscription?
    /// `regionCode` of purchases (ISO 3166-1 alpha-2).
    public var regionCode: String

    /// Describes an app.
    public init(packageName: String, push: PlayPushSubscription? = nil, regionCode: String = "US") {
        self.packageName = packageName
        self.push = push
        self.regionCode = regionCode
    }

    /// Decodes an app; only `packageName` is required.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            packageName: try container.decode(String.self, forKey: .packageName),
            push: try container.decodeIfPresent(PlayPushSubscription.self, forKey: .push),
            regionCode: try container.decodeIfPresent(String.self, forKey: .regionCode) ?? "US")
    }
}

/// A price: micro-units of a currency (`priceMicros` 4 990 000 is 4.99).
public struct PlayPrice: Codable, Sendable, Hashable {
    /// The amount in millionths of the currency unit.
    public var priceMicros: Int64
    /// ISO 4217 currency code.
    public var currency: String

    /// Describes a price.
    public init(priceMicros: Int64, currency: String = "USD") {
        self.priceMicros = priceMicros
        self.currency = currency
    }
}

/// A length of simulated time: an ISO 8601 period (`P1M`, `P1W`, `P3D`, added on the Gregorian
/// calendar in UTC) or a number of seconds. Encoded as the period string or a JSON number.
public enum PlayPeriod: Codable, Sendable, Hashable {
    /// An ISO 8601 period such as `P1M`.
    case iso8601(String)
    /// A number of simulated seconds.
    case seconds(TimeInterval)

    /// Whether it can be applied (a valid period, or a positive number of seconds).
    public var isValid: Bool {
        switch self {
        case .iso8601(let text): SubscriptionPeriod(text) != nil
        case .seconds(let seconds): seconds > 0 && seconds.isFinite
        }
    }

    /// `date` moved forward by this period.
    public func added(to date: Date) -> Date {
        switch self {
        case .iso8601(let text): SubscriptionPeriod(text)?.added(to: date) ?? date
        case .seconds(let seconds): date.addingTimeInterval(seconds)
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let seconds = try? container.decode(Double.self) {
            self = .seconds(seconds)
        } else {
            self = .iso8601(try container.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .iso8601(let text): try container.encode(text)
        case .seconds(let seconds): try container.encode(seconds)
        }
    }
}

/// A base plan of a subscription product.
public struct SimulatedBasePlan: Codable, Sendable, Hashable {
    /// The base plan id, e.g. `monthly`.
    public var basePlanId: String
    /// The billing period.
    public var billingPeriod: PlayPeriod
    /// Auto-renewing (true) or prepaid (false: it simply ends at expiry).
    public var autoRenewing: Bool
    /// How long the grace period lasts after a failed renewal (0: none).
    public var gracePeriod: TimeInterval
    /// How long account hold lasts after the grace period (0: none; the subscription expires).
    public var accountHold: TimeInterval
    /// The recurring price.
    public var price: PlayPrice

    /// Describes a base plan (defaults: auto-renewing, 3 days of grace, 30 days of account hold).
    public init(
        basePlanId: String, billingPeriod: PlayPeriod = .iso8601("P1M"), autoRenewing: Bool = true,
        gracePeriod: TimeInterval = 3 * 86_400, accountHold: TimeInterval = 30 * 86_400,
        price: PlayPrice = PlayPrice(priceMicros: 4_990_000)
    ) {
        self.basePlanId = basePlanId
        self.billingPeriod = billingPeriod
        self.autoRenewing = autoRenewing
        self.gracePeriod = gracePeriod
        self.accountHold = accountHold
        self.price = price
    }

    /// Decodes a base plan; only `basePlanId` is required.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            basePlanId: try container.decode(String.self, forKey: .basePlanId),
            billingPeriod: try container.decodeIfPresent(PlayPeriod.self, forKey: .billingPeriod) ?? .iso8601("P1M"),
            autoRenewing: try container.decodeIfPresent(Bool.self, forKey: .autoRenewing) ?? true,
            gracePeriod: try container.decodeIfPresent(TimeInterval.self, forKey: .gracePeriod) ?? 3 * 86_400,
            accountHold: try container.decodeIfPresent(TimeInterval.self, forKey: .accountHold) ?? 30 * 86_400,
            price: try container.decodeIfPresent(PlayPrice.self, forKey: .price) ?? PlayPrice(priceMicros: 4_990_000))
    }
}

/// A subscription product with its base plans.
public struct SimulatedPlaySubscription: Codable, Sendable, Hashable {
    /// The app's package name.
    public var packageName: String
    /// The subscription's product id.
    public var productId: String
    /// Its base plans (at least one).
    public var basePlans: [SimulatedBasePlan]

    /// Describes a subscription product.
    public init(packageName: String, productId: String, basePlans: [SimulatedBasePlan]) {
        self.packageName = packageName
        self.productId = productId
        self.basePlans = basePlans
    }

    func basePlan(_ id: String?) -> SimulatedBasePlan? {
        guard let id else { return basePlans.first }
        return basePlans.first { $0.basePlanId == id }
    }
}

/// A one-time product.
public struct SimulatedPlayProduct: Codable, Sendable, Hashable {
    /// The app's package name.
    public var packageName: String
    /// The product id (`sku`).
    public var productId: String
    /// Consumable (bought again after consumption) or not.
    public var consumable: Bool
    /// The unit price.
    public var price: PlayPrice
    /// The largest quantity one purchase may have (multi-quantity purchases when > 1).
    public var maxQuantity: Int

    /// Describes a one-time product.
    public init(
        packageName: String, productId: String, consumable: Bool = true,
        price: PlayPrice = PlayPrice(priceMicros: 990_000), maxQuantity: Int = 1
    ) {
        self.packageName = packageName
        self.productId = productId
        self.consumable = consumable
        self.price = price
        self.maxQuantity = maxQuantity
    }

    /// Decodes a product; only `packageName` and `productId` are required.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            packageName: try container.decode(String.self, forKey: .packageName),
            productId: try container.decode(String.self, forKey: .productId),
            consumable: try container.decodeIfPresent(Bool.self, forKey: .consumable) ?? true,
            price: try container.decodeIfPresent(PlayPrice.self, forKey: .price) ?? PlayPrice(priceMicros: 990_000),
            maxQuantity: try container.decodeIfPresent(Int.self, forKey: .maxQuantity) ?? 1)
    }
}

/// How a purchase is made.
public struct PlayPurchaseOptions: Codable, Sendable, Hashable {
    /// `obfuscatedExternalAccountId` (Storekeeper passes the customer's account token).
    public var obfuscatedExternalAccountId: String?
    /// `obfuscatedExternalProfileId`.
    public var obfuscatedExternalProfileId: String?
    /// The purchase waits for payment (a pending transaction) until completed or canceled.
    public var pending: Bool
    /// A license tester's purchase (`testPurchase`, `purchaseType` 0).
    public var testPurchase: Bool
    /// The offer the purchase used, if any (`offerDetails.offerId`).
    public var offerId: String?

    /// Describes a purchase.
    public init(
        obfuscatedExternalAccountId: String? = nil, obfuscatedExternalProfileId: String? = nil, pending: Bool = false,
        testPurchase: Bool = false, offerId: String? = nil
    ) {
        self.obfuscatedExternalAccountId = obfuscatedExternalAccountId
        self.obfuscatedExternalProfileId = obfuscatedExternalProfileId
        self.pending = pending
        self.testPurchase = testPurchase
        self.offerId = offerId
    }

    /// Decodes options; every member is optional.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            obfuscatedExternalAccountId: try container.decodeIfPresent(
                String.self, forKey: .obfuscatedExternalAccountId),
            obfuscatedExternalProfileId: try container.decodeIfPresent(
                String.self, forKey: .obfuscatedExternalProfileId),
            pending: try container.decodeIfPresent(Bool.self, forKey: .pending) ?? false,
            testPurchase: try container.decodeIfPresent(Bool.self, forKey: .testPurchase) ?? false,
            offerId: try container.decodeIfPresent(String.self, forKey: .offerId))
    }
}

/// What a purchase (or a subscription change) created.
public struct PlayPurchaseResult: Codable, Sendable, Hashable {
    /// The purchase token.
    public var purchaseToken: String
    /// The order id; nil while the purchase is pending.
    public var orderId: String?
}

/// How a subscription change is prorated (Play Billing's replacement modes).
public enum PlayReplacementMode: String, Codable, Sendable, Hashable {
    /// The new plan starts now; remaining time is credited to it.
    case withTimeProration = "WITH_TIME_PRORATION"
    /// The new plan starts now and is charged now.
    case chargeFullPrice = "CHARGE_FULL_PRICE"
    /// The new plan starts now, charged the prorated difference.
    case chargeProratedPrice = "CHARGE_PRORATED_PRICE"
    /// The new plan starts now without proration; billing continues on the old date.
    case withoutProration = "WITHOUT_PRORATION"
    /// The new plan starts when the old one expires.
    case deferred = "DEFERRED"
}
