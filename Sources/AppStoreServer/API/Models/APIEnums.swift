/// The kind of in-app product, as the history endpoint filters it.
public struct ProductType: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// An auto-renewable subscription.
    public static let autoRenewable = Self(rawValue: "AUTO_RENEWABLE")
    /// A non-renewing subscription.
    public static let nonRenewable = Self(rawValue: "NON_RENEWABLE")
    /// A consumable.
    public static let consumable = Self(rawValue: "CONSUMABLE")
    /// A non-consumable.
    public static let nonConsumable = Self(rawValue: "NON_CONSUMABLE")
    public var description: String { rawValue }
}

/// The order of a transaction history.
public struct SortOrder: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Oldest first.
    public static let ascending = Self(rawValue: "ASCENDING")
    /// Newest first.
    public static let descending = Self(rawValue: "DESCENDING")
    public var description: String { rawValue }
}

/// Whether an order id was found.
public struct OrderLookupStatus: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }
    /// The order id is valid and has transactions.
    public static let valid = Self(rawValue: 0)
    /// The order id is not valid.
    public static let invalid = Self(rawValue: 1)
    public var description: String { String(rawValue) }
}

/// What happened when the App Store tried to deliver a notification.
public struct SendAttemptResult: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Delivered: the server answered with a 2xx.
    public static let success = Self(rawValue: "SUCCESS")
    /// The server did not answer in time.
    public static let timedOut = Self(rawValue: "TIMED_OUT")
    /// TLS failed.
    public static let tlsIssue = Self(rawValue: "TLS_ISSUE")
    /// The server redirected in a loop.
    public static let circularRedirect = Self(rawValue: "CIRCULAR_REDIRECT")
    /// No response.
    public static let noResponse = Self(rawValue: "NO_RESPONSE")
    /// A socket error.
    public static let socketIssue = Self(rawValue: "SOCKET_ISSUE")
    /// The response used an unsupported charset.
    public static let unsupportedCharset = Self(rawValue: "UNSUPPORTED_CHARSET")
    /// The response was not valid.
    public static let invalidResponse = Self(rawValue: "INVALID_RESPONSE")
    /// The connection closed early.
    public static let prematureClose = Self(rawValue: "PREMATURE_CLOSE")
    /// The server answered with a status other than 2xx.
    public static let unsuccessfulHTTPResponseCode = Self(rawValue: "UNSUCCESSFUL_HTTP_RESPONSE_CODE")
    /// Another failure.
    public static let other = Self(rawValue: "OTHER")
    public var description: String { rawValue }
}

/// Why a subscription renewal date is extended.
public struct ExtendReasonCode: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }
    /// Undeclared.
    public static let undeclared = Self(rawValue: 0)
    /// Customer satisfaction.
    public static let customerSatisfaction = Self(rawValue: 1)
    /// Another reason.
    public static let other = Self(rawValue: 2)
    /// A service issue or outage.
    public static let serviceIssueOrOutage = Self(rawValue: 3)
    public var description: String { String(rawValue) }
}

/// Whether the app delivered a purchase that works (Send Consumption Information).
public struct DeliveryStatus: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Delivered and working.
    public static let delivered = Self(rawValue: "DELIVERED")
    /// Not delivered: a quality issue.
    public static let undeliveredQualityIssue = Self(rawValue: "UNDELIVERED_QUALITY_ISSUE")
    /// Not delivered: the wrong item.
    public static let undeliveredWrongItem = Self(rawValue: "UNDELIVERED_WRONG_ITEM")
    /// Not delivered: a server outage.
    public static let undeliveredServerOutage = Self(rawValue: "UNDELIVERED_SERVER_OUTAGE")
    /// Not delivered for another reason.
    public static let undeliveredOther = Self(rawValue: "UNDELIVERED_OTHER")
    public var description: String { rawValue }
}

/// The refund outcome the developer prefers (Send Consumption Information).
public struct RefundPreference: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Grant a full refund.
    public static let grantFull = Self(rawValue: "GRANT_FULL")
    /// Grant a prorated refund (with a consumption percentage above 0).
    public static let grantProrated = Self(rawValue: "GRANT_PRORATED")
    /// Decline the refund.
    public static let decline = Self(rawValue: "DECLINE")
    public var description: String { rawValue }
}
