import Foundation
import Testing

@testable import AppStoreServer

@Suite struct APIClientUnitTests {
    @Test func historyFiltersBecomeRepeatedQueryItems() {
        let request = TransactionHistoryRequest(
            startDate: Date(timeIntervalSince1970: 1_700_000_000),
            endDate: Date(timeIntervalSince1970: 1_700_086_400.5),
            productIds: ["a", "b"], productTypes: [.autoRenewable, .consumable], sort: .descending,
            subscriptionGroupIdentifiers: ["g1"], inAppOwnershipType: .familyShared, revoked: false)
        let items = request.queryItems(revision: "rev-1").map { "\($0.name)=\($0.value ?? "")" }
        #expect(
            items == [
                "revision=rev-1", "startDate=1700000000000", "endDate=1700086400500", "productId=a", "productId=b",
                "productType=AUTO_RENEWABLE", "productType=CONSUMABLE", "sort=DESCENDING",
                "subscriptionGroupIdentifier=g1", "inAppOwnershipType=FAMILY_SHARED", "revoked=false",
            ])
        #expect(TransactionHistoryRequest().queryItems(revision: nil).isEmpty)
    }

    @Test func backoffIsFullJitterUnderADoublingCapAndHonoursRetryAfter() {
        // `random` returns the top of its range, so the delays are the caps themselves.
        let top = RetryPolicy(
            maxAttempts: 10, initialBackoff: 0.5, maxBackoff: 3, budget: 100, random: { $0.upperBound })
        #expect((1...5).map { top.delay(beforeRetry: $0, retryAfter: nil) } == [0.5, 1, 2, 3, 3])
        #expect(top.delay(beforeRetry: 1, retryAfter: 7) == 7)
        let bottom = RetryPolicy(initialBackoff: 0.5, random: { $0.lowerBound })
        #expect(bottom.delay(beforeRetry: 3, retryAfter: nil) == 0)
        #expect(RetryPolicy.never.maxAttempts == 1)
    }

    @Test func errorsClassifyRetryability() {
        #expect(AppStoreServerAPIError(httpStatus: 429, code: .rateLimitExceeded, message: "").isRetryable)
        #expect(AppStoreServerAPIError(httpStatus: 404, code: .accountNotFoundRetryable, message: "").isRetryable)
        #expect(
            AppStoreServerAPIError(httpStatus: 404, code: .originalTransactionIdNotFoundRetryable, message: "")
                .isRetryable)
        #expect(AppStoreServerAPIError(httpStatus: 500, code: .generalInternalRetryable, message: "").isRetryable)
        #expect(AppStoreServerAPIError(httpStatus: 503, code: nil, message: "").isRetryable)
        #expect(AppStoreServerAPIError(httpStatus: nil, code: nil, message: "timed out").isRetryable)
        #expect(!AppStoreServerAPIError(httpStatus: 404, code: .transactionIdNotFound, message: "").isRetryable)
        #expect(!AppStoreServerAPIError(httpStatus: 400, code: .invalidTransactionId, message: "").isRetryable)
        #expect(!AppStoreServerAPIError(httpStatus: 401, code: nil, message: "").isRetryable)
    }

    @Test func errorPayloadKeepsUnknownCodes() throws {
        let payload = try AppStoreJSON.makeDecoder().decode(
            ErrorPayload.self, from: Data(#"{"errorCode": 4049999, "errorMessage": "new"}"#.utf8))
        #expect(payload.errorCode?.rawValue == 4_049_999)
        #expect(payload.errorCode?.isRetryable == false)
    }

    @Test func pagedFetchesLazilyUntilNoToken() async throws {
        let calls = CallLog()
        let pages = Paged<Int> { token in
            await calls.record(token)
            switch token {
            case nil: return ([1, 2], "p2")
            case "p2": return ([], "p3")  // an empty page in the middle is skipped
            case "p3": return ([3], nil)
            default: throw CancellationError()
            }
        }
        var iterator = pages.makeAsyncIterator()
        #expect(try await iterator.next() == 1)
        #expect(await calls.tokens == [nil])
        var all = [1]
        while let value = try await iterator.next() { all.append(value) }
        #expect(all == [1, 2, 3])
        #expect(await calls.tokens == [nil, "p2", "p3"])
    }

    actor CallLog {
        var tokens: [String?] = []
        func record(_ token: String?) { tokens.append(token) }
    }
}
