import Foundation
import GooglePlay

/// `purchases.voidedpurchases.list`: filters by when the purchase was voided (`startTime`,
/// `endTime`, milliseconds; default the last 30 days), `type` (0: one-time products only, the
/// default; 1: subscriptions too) and `includeQuantityBasedPartialRefund`, oldest first, pages of
/// `maxResults` (default 1000) linked by `tokenPagination.nextPageToken` (the token carries the
/// query, which is then ignored, as Google documents).
struct VoidedPurchasesQuery: Sendable, Hashable {
    var startTime: Int64
    var endTime: Int64
    var type: Int
    var includePartial: Bool
    var offset: Int

    static let defaultWindow: Int64 = 30 * 86_400_000

    /// Reads the query parameters (either spelling of the page selection).
    static func parse(_ parameters: [String: String], now: Date) throws(PlayAPIFailure) -> (Self, Int) {
        let maxText = parameters["maxResults"] ?? parameters["pageSelection.maxResults"]
        let maxResults = try maxText.map { (text) throws(PlayAPIFailure) -> Int in
            guard let value = Int(text), value > 0 else {
                throw .invalid("invalid", "maxResults must be a positive integer.")
            }
            return value
        }
        if let token = parameters["token"] ?? parameters["pageSelection.token"] {
            guard let query = Self(token: token) else {
                throw .invalid("invalidPageToken", "The page token is invalid.")
            }
            return (query, maxResults ?? 1000)
        }
        let nowMillis = Int64((now.timeIntervalSince1970 * 1000).rounded())
        func millis(_ name: String) throws(PlayAPIFailure) -> Int64? {
            guard let text = parameters[name] else { return nil }
            guard let value = Int64(text) else { throw .invalid("invalid", "\(name) must be milliseconds since 1970.") }
            return value
        }
        let end = try millis("endTime") ?? nowMillis
        let start = try millis("startTime") ?? (end - defaultWindow)
        guard start <= end else { throw .invalid("invalid", "startTime must not be after endTime.") }
        let type = Int(parameters["type"] ?? "0") ?? -1
        guard type == 0 || type == 1 else { throw .invalid("invalid", "type must be 0 or 1.") }
        let partial = parameters["includeQuantityBasedPartialRefund"] == "true"
        return (
            Self(startTime: start, endTime: end, type: type, includePartial: partial, offset: 0), maxResults ?? 1000
        )
    }

    init(startTime: Int64, endTime: Int64, type: Int, includePartial: Bool, offset: Int) {
        self.startTime = startTime
        self.endTime = endTime
        self.type = type
        self.includePartial = includePartial
        self.offset = offset
    }

    /// Decodes a page token made by ``token``.
    init?(token: String) {
        guard let data = Base64URL.decode(token), let text = String(data: data, encoding: .utf8) else { return nil }
        let parts = text.split(separator: "|").map(String.init)
        guard parts.count == 6, parts[0] == "v1", let start = Int64(parts[1]), let end = Int64(parts[2]),
            let type = Int(parts[3]), let offset = Int(parts[5]), offset >= 0
        else { return nil }
        self.init(startTime: start, endTime: end, type: type, includePartial: parts[4] == "1", offset: offset)
    }

    /// The page token resuming this query at `offset`.
    func token(offset: Int) -> String {
        Base64URL.encode(
            Data("v1|\(startTime)|\(endTime)|\(type)|\(includePartial ? 1 : 0)|\(offset)".utf8))
    }

    func matches(_ record: PlayVoidedRecord) -> Bool {
        let voided = Int64((record.voidedTime.timeIntervalSince1970 * 1000).rounded())
        guard voided >= startTime, voided <= endTime else { return false }
        if record.isSubscription, type == 0 { return false }
        if record.voidedQuantity != nil, !includePartial { return false }
        return true
    }
}

extension GooglePlaySimulation {
    func apiVoidedPurchases(packageName: String, parameters: [String: String]) throws(PlayAPIFailure)
        -> VoidedPurchasesListResponse
    {
        let now = clock.now()
        let (query, maxResults) = try VoidedPurchasesQuery.parse(parameters, now: now)
        return try state.withLock { (state) throws(PlayAPIFailure) in
            state.processDue(now: now)
            guard state.apps[packageName] != nil else { throw .applicationNotFound(packageName) }
            let matching = state.voided.filter { record in
                query.matches(record)
                    && (state.subscriptions[record.purchaseToken]?.packageName
                        ?? state.productPurchases[record.purchaseToken]?.packageName) == packageName
            }
            let page = Array(matching.dropFirst(query.offset).prefix(maxResults))
            let nextOffset = query.offset + page.count
            var answer = VoidedPurchasesListResponse()
            answer.pageInfo = PageInfo(
                totalResults: matching.count, resultPerPage: maxResults, startIndex: query.offset)
            if nextOffset < matching.count {
                answer.tokenPagination = TokenPagination(nextPageToken: query.token(offset: nextOffset))
            }
            answer.voidedPurchases = page.isEmpty ? nil : page.map(PlayAnswers.voided)
            return answer
        }
    }
}
