public import Foundation

/// The parameters of `purchases.voidedpurchases.list`.
public struct VoidedPurchasesQuery: Hashable, Sendable {
    /// Which purchases to list (`type`).
    public struct PurchaseType: RawRepresentable, Hashable, Sendable {
        public var rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// `0`: voided in-app product purchases only (Google's default).
        public static let oneTimeProducts = Self(rawValue: 0)
        /// `1`: voided in-app product and subscription purchases.
        public static let productsAndSubscriptions = Self(rawValue: 1)
    }

    /// The oldest voided time to include (`startTime`); Google looks back at most 30 days.
    public var startTime: Date?
    /// The newest voided time to include (`endTime`); Google's default is now.
    public var endTime: Date?
    /// Results per page (`maxResults`); Google's default and maximum is 1000.
    public var maxResults: Int?
    /// `type`.
    public var type: PurchaseType?
    /// `includeQuantityBasedPartialRefund`: also list partial refunds of multi-quantity purchases
    /// (only with ``PurchaseType/oneTimeProducts``).
    public var includeQuantityBasedPartialRefund: Bool?

    public init(
        startTime: Date? = nil, endTime: Date? = nil, maxResults: Int? = nil, type: PurchaseType? = nil,
        includeQuantityBasedPartialRefund: Bool? = nil
    ) {
        self.startTime = startTime
        self.endTime = endTime
        self.maxResults = maxResults
        self.type = type
        self.includeQuantityBasedPartialRefund = includeQuantityBasedPartialRefund
    }

    /// The query items, with the page `token` if given. Times are milliseconds since the epoch.
    func queryItems(pageToken: String?) -> [URLQueryItem] {
        var items: [URLQueryItem] = []
        func milliseconds(_ date: Date) -> String { String(Int64((date.timeIntervalSince1970 * 1000).rounded(.down))) }
        if let startTime { items.append(URLQueryItem(name: "startTime", value: milliseconds(startTime))) }
        if let endTime { items.append(URLQueryItem(name: "endTime", value: milliseconds(endTime))) }
        if let maxResults { items.append(URLQueryItem(name: "maxResults", value: String(maxResults))) }
        if let type { items.append(URLQueryItem(name: "type", value: String(type.rawValue))) }
        if let includeQuantityBasedPartialRefund {
            items.append(
                URLQueryItem(
                    name: "includeQuantityBasedPartialRefund", value: String(includeQuantityBasedPartialRefund)))
        }
        if let pageToken { items.append(URLQueryItem(name: "token", value: pageToken)) }
        return items
    }
}
