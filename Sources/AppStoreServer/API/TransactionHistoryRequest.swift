public import Foundation

/// The filters of Get Transaction History (v2).
public struct TransactionHistoryRequest: Sendable, Hashable {
    /// Transactions on or after this date.
    public var startDate: Date?
    /// Transactions before this date.
    public var endDate: Date?
    /// Only these products.
    public var productIds: [String]
    /// Only these product types.
    public var productTypes: [ProductType]
    /// Oldest first (default) or newest first.
    public var sort: SortOrder?
    /// Only these subscription groups.
    public var subscriptionGroupIdentifiers: [String]
    /// Only purchased or only family-shared transactions.
    public var inAppOwnershipType: InAppOwnershipType?
    /// Only revoked (true) or only not revoked (false) transactions.
    public var revoked: Bool?

    public init(
        startDate: Date? = nil, endDate: Date? = nil, productIds: [String] = [], productTypes: [ProductType] = [],
        sort: SortOrder? = nil, subscriptionGroupIdentifiers: [String] = [],
        inAppOwnershipType: InAppOwnershipType? = nil, revoked: Bool? = nil
    ) {
        self.startDate = startDate
        self.endDate = endDate
        self.productIds = productIds
        self.productTypes = productTypes
        self.sort = sort
        self.subscriptionGroupIdentifiers = subscriptionGroupIdentifiers
        self.inAppOwnershipType = inAppOwnershipType
        self.revoked = revoked
    }

    /// The query items, repeated keys for lists as Apple expects.
    func queryItems(revision: String?) -> [URLQueryItem] {
        var items: [URLQueryItem] = []
        if let revision { items.append(URLQueryItem(name: "revision", value: revision)) }
        if let startDate { items.append(URLQueryItem(name: "startDate", value: Self.milliseconds(startDate))) }
        if let endDate { items.append(URLQueryItem(name: "endDate", value: Self.milliseconds(endDate))) }
        items += productIds.map { URLQueryItem(name: "productId", value: $0) }
        items += productTypes.map { URLQueryItem(name: "productType", value: $0.rawValue) }
        if let sort { items.append(URLQueryItem(name: "sort", value: sort.rawValue)) }
        items += subscriptionGroupIdentifiers.map { URLQueryItem(name: "subscriptionGroupIdentifier", value: $0) }
        if let inAppOwnershipType {
            items.append(URLQueryItem(name: "inAppOwnershipType", value: inAppOwnershipType.rawValue))
        }
        if let revoked { items.append(URLQueryItem(name: "revoked", value: revoked ? "true" : "false")) }
        return items
    }

    static func milliseconds(_ date: Date) -> String {
        String(Int64((date.timeIntervalSince1970 * 1000).rounded()))
    }
}
