/// An amount of money with its currency (`google.type.Money`).
public struct Money: Codable, Hashable, Sendable {
    /// Three-letter ISO 4217 currency code.
    public var currencyCode: String?
    /// Whole units of the amount (int64, sent as a JSON string).
    public var units: Int64String?
    /// Nano (10^-9) units of the amount; same sign as `units`.
    public var nanos: Int?

    /// Creates a `Money`; every field defaults to `nil`.
    public init(
        currencyCode: String? = nil,
        units: Int64String? = nil,
        nanos: Int? = nil
    ) {
        self.currencyCode = currencyCode
        self.units = units
        self.nanos = nanos
    }
}

/// Page information of a list response (deprecated paging style).
public struct PageInfo: Codable, Hashable, Sendable {
    /// Total number of results available on the backend.
    public var totalResults: Int?
    /// Maximum number of results returned in one page.
    public var resultPerPage: Int?
    /// Index of the first result returned in the current page.
    public var startIndex: Int?

    /// Creates a `PageInfo`; every field defaults to `nil`.
    public init(
        totalResults: Int? = nil,
        resultPerPage: Int? = nil,
        startIndex: Int? = nil
    ) {
        self.totalResults = totalResults
        self.resultPerPage = resultPerPage
        self.startIndex = startIndex
    }
}

/// Token pagination information of a list response.
public struct TokenPagination: Codable, Hashable, Sendable {
    /// Token to pass as `token` to fetch the next page; absent on the last page.
    public var nextPageToken: String?
    /// Token of the previous page.
    public var previousPageToken: String?

    /// Creates a `TokenPagination`; every field defaults to `nil`.
    public init(
        nextPageToken: String? = nil,
        previousPageToken: String? = nil
    ) {
        self.nextPageToken = nextPageToken
        self.previousPageToken = previousPageToken
    }
}
