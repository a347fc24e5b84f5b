/// Get Transaction Info: one signed transaction.
public struct TransactionInfoResponse: Codable, Hashable, Sendable {
    /// The transaction, signed by the App Store.
    public var signedTransactionInfo: String?

    public init(signedTransactionInfo: String? = nil) {
        self.signedTransactionInfo = signedTransactionInfo
    }
}

/// Get Transaction History (v2): a page of signed transactions.
public struct HistoryResponse: Codable, Hashable, Sendable {
    /// The token to request the next page with.
    public var revision: String?
    /// The app's bundle id.
    public var bundleId: String?
    /// The app's Apple id.
    public var appAppleId: Int64?
    /// The environment of the data.
    public var environment: Environment?
    /// Whether more pages follow.
    public var hasMore: Bool?
    /// The transactions, each signed by the App Store.
    public var signedTransactions: [String]?

    public init(
        revision: String? = nil, bundleId: String? = nil, appAppleId: Int64? = nil, environment: Environment? = nil,
        hasMore: Bool? = nil, signedTransactions: [String]? = nil
    ) {
        self.revision = revision
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
        self.hasMore = hasMore
        self.signedTransactions = signedTransactions
    }
}

/// Get Refund History (v2): a page of refunded transactions.
public struct RefundHistoryResponse: Codable, Hashable, Sendable {
    /// The refunded transactions, each signed by the App Store.
    public var signedTransactions: [String]?
    /// The token to request the next page with.
    public var revision: String?
    /// Whether more pages follow.
    public var hasMore: Bool?

    public init(signedTransactions: [String]? = nil, revision: String? = nil, hasMore: Bool? = nil) {
        self.signedTransactions = signedTransactions
        self.revision = revision
        self.hasMore = hasMore
    }
}

/// Get App Transaction Info.
public struct AppTransactionInfoResponse: Codable, Hashable, Sendable {
    /// The app transaction, signed by the App Store.
    public var signedAppTransactionInfo: String?

    public init(signedAppTransactionInfo: String? = nil) {
        self.signedAppTransactionInfo = signedAppTransactionInfo
    }
}

/// Look Up Order ID.
public struct OrderLookupResponse: Codable, Hashable, Sendable {
    /// Whether the order id is valid.
    public var status: OrderLookupStatus?
    /// The order's transactions, each signed by the App Store.
    public var signedTransactions: [String]?

    public init(status: OrderLookupStatus? = nil, signedTransactions: [String]? = nil) {
        self.status = status
        self.signedTransactions = signedTransactions
    }
}

/// Get All Subscription Statuses.
public struct StatusResponse: Codable, Hashable, Sendable {
    /// The environment of the data.
    public var environment: Environment?
    /// The app's bundle id.
    public var bundleId: String?
    /// The app's Apple id.
    public var appAppleId: Int64?
    /// One entry per subscription group.
    public var data: [SubscriptionGroupIdentifierItem]?

    public init(
        environment: Environment? = nil, bundleId: String? = nil, appAppleId: Int64? = nil,
        data: [SubscriptionGroupIdentifierItem]? = nil
    ) {
        self.environment = environment
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.data = data
    }
}

/// The subscriptions of one subscription group.
public struct SubscriptionGroupIdentifierItem: Codable, Hashable, Sendable {
    /// The subscription group.
    public var subscriptionGroupIdentifier: String?
    /// The latest transaction of each subscription in the group.
    public var lastTransactions: [LastTransactionsItem]?

    public init(subscriptionGroupIdentifier: String? = nil, lastTransactions: [LastTransactionsItem]? = nil) {
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.lastTransactions = lastTransactions
    }
}

/// A subscription's status with its latest transaction and renewal info.
public struct LastTransactionsItem: Codable, Hashable, Sendable {
    /// The subscription's status (1 active … 5 revoked).
    public var status: SubscriptionStatus?
    /// The subscription's original transaction id.
    public var originalTransactionId: String?
    /// The latest transaction, signed by the App Store.
    public var signedTransactionInfo: String?
    /// The renewal info, signed by the App Store.
    public var signedRenewalInfo: String?

    public init(
        status: SubscriptionStatus? = nil, originalTransactionId: String? = nil, signedTransactionInfo: String? = nil,
        signedRenewalInfo: String? = nil
    ) {
        self.status = status
        self.originalTransactionId = originalTransactionId
        self.signedTransactionInfo = signedTransactionInfo
        self.signedRenewalInfo = signedRenewalInfo
    }
}
