/// The buckets of the Google Play Developer API: each has its own limits ("Quotas" in the Android
/// Publisher documentation). Google counts them per Google Cloud project.
extension QuotaBucket {
    /// `purchases.subscriptions` and `purchases.subscriptionsv2` reads and acknowledgements.
    public static let subscriptions = Self(rawValue: "subscriptions")
    /// Cancel, defer, refund and revoke of subscriptions.
    public static let subscriptionUpdates = Self(rawValue: "subscription-updates")
    /// `purchases.products` and `purchases.productsv2`.
    public static let oneTimePurchases = Self(rawValue: "one-time-purchases")
    /// `orders`.
    public static let orders = Self(rawValue: "orders")
    /// `purchases.voidedpurchases`, which has its own, much smaller limits.
    public static let voidedPurchases = Self(rawValue: "voided-purchases")
}

extension QuotaLimits {
    private static let day = Duration.seconds(86_400)

    /// Google's default quotas: 3,000 queries a minute per bucket and 200,000 a day in all; voided
    /// purchases 30 per 30 seconds and 6,000 a day.
    public static let googleDefaults = QuotaLimits(
        buckets: [
            .subscriptions: [QuotaLimit(requests: 3000, per: .seconds(60))],
            .subscriptionUpdates: [QuotaLimit(requests: 3000, per: .seconds(60))],
            .oneTimePurchases: [QuotaLimit(requests: 3000, per: .seconds(60))],
            .orders: [QuotaLimit(requests: 3000, per: .seconds(60))],
            .voidedPurchases: [QuotaLimit(requests: 30, per: .seconds(30)), QuotaLimit(requests: 6000, per: day)],
        ],
        overall: [QuotaLimit(requests: 200_000, per: day)]
    )
}
