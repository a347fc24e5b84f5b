import Foundation
import Testing

@testable import GooglePlay

// MARK: - Helpers

private func decode<T: Decodable>(_ type: T.Type, _ json: String) throws -> T {
    try JSONDecoder().decode(type, from: Data(json.utf8))
}

private func roundTrip<T: Codable & Equatable>(_ value: T) throws -> T {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    return try JSONDecoder().decode(T.self, from: encoder.encode(value))
}

private func jsonObject(_ value: some Encodable) throws -> [String: Any] {
    let data = try JSONEncoder().encode(value)
    return try #require(JSONSerialization.jsonObject(with: data) as? [String: Any])
}

private func utc(
    _ year: Int, _ month: Int, _ day: Int, _ hour: Int = 0, _ minute: Int = 0, _ second: Int = 0
) -> Date {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "UTC")!
    return calendar.date(
        from: DateComponents(
            year: year, month: month, day: day, hour: hour, minute: minute, second: second))!
}

/// Dates built from decimal fractions can differ in the last bit; compare to the microsecond.
private func approx(_ lhs: Date?, _ rhs: Date) -> Bool {
    guard let lhs else { return false }
    return abs(lhs.timeIntervalSince(rhs)) < 0.000_001
}

// MARK: - Fixtures

private let subscriptionPurchaseV2JSON = """
    {
      "kind": "androidpublisher#subscriptionPurchaseV2",
      "regionCode": "US",
      "lineItems": [
        {
          "productId": "premium_monthly",
          "expiryTime": "2024-02-01T00:00:00.123Z",
          "autoRenewingPlan": {
            "autoRenewEnabled": true,
            "recurringPrice": { "currencyCode": "USD", "units": "9", "nanos": 990000000 },
            "priceChangeDetails": {
              "newPrice": { "currencyCode": "USD", "units": "12", "nanos": 490000000 },
              "priceChangeMode": "PRICE_INCREASE",
              "priceChangeState": "OUTSTANDING",
              "expectedNewPriceChargeTime": "2024-03-01T00:00:00Z"
            },
            "installmentDetails": {
              "initialCommittedPaymentsCount": 12,
              "subsequentCommittedPaymentsCount": 12,
              "remainingCommittedPaymentsCount": 11,
              "pendingCancellation": {}
            },
            "priceStepUpConsentDetails": {
              "state": "CONSENT_STATE_PENDING",
              "consentDeadlineTime": "2024-02-15T12:00:00Z",
              "newPrice": { "currencyCode": "USD", "units": "11" }
            }
          },
          "offerDetails": {
            "basePlanId": "monthly",
            "offerId": "intro-offer",
            "offerTags": ["intro", "promo"]
          },
          "deferredItemReplacement": { "productId": "premium_yearly" },
          "deferredItemRemoval": {},
          "itemReplacement": {
            "productId": "basic_monthly",
            "basePlanId": "basic",
            "offerId": "basic-offer",
            "replacementMode": "WITH_TIME_PRORATION"
          },
          "offerPhase": { "introductoryPrice": {} },
          "signupPromotion": { "vanityCode": { "promotionCode": "SPRING24" } },
          "latestSuccessfulOrderId": "GPA.1234-5678-9012-34567..0"
        },
        {
          "productId": "addon_storage",
          "expiryTime": "2024-02-01T00:00:00Z",
          "prepaidPlan": { "allowExtendAfterTime": "2024-01-25T00:00:00Z" },
          "offerDetails": { "basePlanId": "prepaid" },
          "offerPhase": { "prorationPeriod": { "originalOfferPhaseType": "FREE_TRIAL" } },
          "signupPromotion": { "oneTimeCode": {} }
        }
      ],
      "startTime": "2024-01-01T00:00:00Z",
      "subscriptionState": "SUBSCRIPTION_STATE_CANCELED",
      "latestOrderId": "GPA.1234-5678-9012-34567..0",
      "linkedPurchaseToken": "old-token",
      "pausedStateContext": { "autoResumeTime": "2024-04-01T00:00:00Z" },
      "canceledStateContext": {
        "userInitiatedCancellation": {
          "cancelSurveyResult": {
            "reason": "CANCEL_SURVEY_REASON_OTHERS",
            "reasonUserInput": "Too many emails"
          },
          "cancelTime": "2024-01-20T08:30:00.5Z"
        }
      },
      "inGracePeriodStateContext": { "renewalDeclined": { "pendingOrderId": "GPA.1111-2222-3333-44444..1" } },
      "onHoldStateContext": { "renewalDeclined": { "pendingOrderId": "GPA.1111-2222-3333-44444..2" } },
      "testPurchase": {},
      "acknowledgementState": "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED",
      "externalAccountIdentifiers": {
        "externalAccountId": "ext-1",
        "obfuscatedExternalAccountId": "obf-account",
        "obfuscatedExternalProfileId": "obf-profile"
      },
      "subscribeWithGoogleInfo": {
        "profileId": "profile-1",
        "profileName": "Jo",
        "emailAddress": "jo@example.com",
        "givenName": "Jo",
        "familyName": "Doe"
      },
      "outOfAppPurchaseContext": {
        "expiredExternalAccountIdentifiers": { "obfuscatedExternalAccountId": "old-obf" },
        "expiredPurchaseToken": "expired-token"
      },
      "etag": "etag-123"
    }
    """

private let productPurchaseJSON = """
    {
      "kind": "androidpublisher#productPurchase",
      "purchaseTimeMillis": "1704067200123",
      "purchaseState": 0,
      "consumptionState": 1,
      "developerPayload": "payload",
      "orderId": "GPA.3333-4444-5555-66666",
      "purchaseType": 0,
      "acknowledgementState": 1,
      "purchaseToken": "product-token",
      "productId": "coins_100",
      "quantity": 3,
      "obfuscatedExternalAccountId": "obf-account",
      "obfuscatedExternalProfileId": "obf-profile",
      "regionCode": "DE",
      "refundableQuantity": 2
    }
    """

private let productPurchaseV2JSON = """
    {
      "productLineItem": [
        {
          "productId": "coins_100",
          "productOfferDetails": {
            "offerTags": ["sale"],
            "offerId": "summer-sale",
            "purchaseOptionId": "buy",
            "rentOfferDetails": {},
            "preorderOfferDetails": { "preorderReleaseTime": "2024-06-01T00:00:00Z" },
            "offerToken": "offer-token",
            "quantity": 3,
            "refundableQuantity": 2,
            "consumptionState": "CONSUMPTION_STATE_YET_TO_BE_CONSUMED"
          }
        }
      ],
      "kind": "androidpublisher#productPurchaseV2",
      "purchaseStateContext": { "purchaseState": "PURCHASED" },
      "testPurchaseContext": { "fopType": "TEST" },
      "orderId": "GPA.3333-4444-5555-66666",
      "obfuscatedExternalAccountId": "obf-account",
      "obfuscatedExternalProfileId": "obf-profile",
      "regionCode": "FR",
      "purchaseCompletionTime": "2024-05-01T10:00:00.000001Z",
      "acknowledgementState": "ACKNOWLEDGEMENT_STATE_PENDING"
    }
    """

private let voidedPurchasesJSON = """
    {
      "pageInfo": { "totalResults": 2, "resultPerPage": 1000, "startIndex": 0 },
      "tokenPagination": { "nextPageToken": "next", "previousPageToken": "prev" },
      "voidedPurchases": [
        {
          "kind": "androidpublisher#voidedPurchase",
          "purchaseToken": "voided-token",
          "purchaseTimeMillis": "1704067200000",
          "voidedTimeMillis": "1704153600000",
          "orderId": "GPA.7777-8888-9999-00000",
          "voidedSource": 2,
          "voidedReason": 7,
          "voidedQuantity": 1
        },
        {
          "purchaseToken": "voided-token-2",
          "purchaseTimeMillis": 1704067200000,
          "voidedTimeMillis": 1704153600000,
          "voidedSource": 9,
          "voidedReason": 42
        }
      ]
    }
    """

private let orderJSON = """
    {
      "lineItems": [
        {
          "productTitle": "Premium (Monthly)",
          "productId": "premium_monthly",
          "listingPrice": { "currencyCode": "USD", "units": "9", "nanos": 990000000 },
          "total": { "currencyCode": "USD", "units": "10", "nanos": 790000000 },
          "tax": { "currencyCode": "USD", "nanos": 800000000 },
          "subscriptionDetails": {
            "basePlanId": "monthly",
            "offerId": "intro-offer",
            "offerPhase": "INTRODUCTORY",
            "offerPhaseDetails": { "prorationPeriodDetails": { "originalOfferPhase": "FREE_TRIAL" } },
            "servicePeriodStartTime": "2024-01-01T00:00:00Z",
            "servicePeriodEndTime": "2024-02-01T00:00:00Z"
          }
        },
        {
          "productId": "coins_100",
          "oneTimePurchaseDetails": {
            "offerId": "summer-sale",
            "purchaseOptionId": "buy",
            "quantity": 3,
            "preorderDetails": {},
            "rentalDetails": {}
          },
          "paidAppDetails": {}
        }
      ],
      "salesChannel": "IN_APP",
      "orderId": "GPA.1234-5678-9012-34567",
      "purchaseToken": "order-token",
      "state": "PARTIALLY_REFUNDED",
      "createTime": "2024-01-01T00:00:00.123456Z",
      "lastEventTime": "2024-01-05T00:00:00Z",
      "buyerAddress": { "buyerCountry": "US", "buyerState": "CA", "buyerPostcode": "94043" },
      "total": { "currencyCode": "USD", "units": "10", "nanos": 790000000 },
      "tax": { "currencyCode": "USD", "nanos": 800000000 },
      "orderDetails": { "taxInclusive": false },
      "orderHistory": {
        "processedEvent": { "eventTime": "2024-01-01T00:00:05Z" },
        "cancellationEvent": { "eventTime": "2024-01-06T00:00:00Z" },
        "partialRefundEvents": [
          {
            "createTime": "2024-01-04T00:00:00Z",
            "processTime": "2024-01-05T00:00:00Z",
            "state": "PROCESSED_SUCCESSFULLY",
            "refundDetails": {
              "total": { "currencyCode": "USD", "units": "5" },
              "tax": { "currencyCode": "USD", "nanos": 400000000 }
            }
          }
        ],
        "refundEvent": {
          "eventTime": "2024-01-07T00:00:00Z",
          "refundDetails": { "total": { "currencyCode": "USD", "units": "10", "nanos": 790000000 } },
          "refundReason": "CHARGEBACK"
        }
      },
      "developerRevenueInBuyerCurrency": { "currencyCode": "USD", "units": "8", "nanos": 490000000 },
      "pointsDetails": {
        "pointsOfferId": "points-offer",
        "pointsCouponValue": { "currencyCode": "USD", "units": "2" },
        "pointsDiscountRateMicros": "500000",
        "pointsSpent": "100"
      }
    }
    """

private let errorJSON = """
    {
      "error": {
        "code": 400,
        "message": "The purchase token does not match the package name.",
        "status": "INVALID_ARGUMENT",
        "errors": [
          {
            "domain": "androidpublisher",
            "reason": "purchaseTokenDoesNotMatchPackage",
            "message": "The purchase token does not match the package name.",
            "location": "token",
            "locationType": "parameter"
          }
        ],
        "details": [
          {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "PURCHASE_TOKEN_MISMATCH",
            "metadata": { "retryable": false, "attempt": 1, "ratio": 0.5 },
            "links": [null, "x"]
          }
        ]
      }
    }
    """

// MARK: - Response models

@Test func decodesSubscriptionPurchaseV2WithEveryField() throws {
    let purchase = try decode(SubscriptionPurchaseV2.self, subscriptionPurchaseV2JSON)

    #expect(purchase.kind == "androidpublisher#subscriptionPurchaseV2")
    #expect(purchase.regionCode == "US")
    #expect(purchase.startTime == "2024-01-01T00:00:00Z")
    #expect(purchase.startDate == utc(2024, 1, 1))
    #expect(purchase.subscriptionState == .canceled)
    #expect(purchase.latestOrderId == "GPA.1234-5678-9012-34567..0")
    #expect(purchase.linkedPurchaseToken == "old-token")
    #expect(purchase.pausedStateContext?.autoResumeDate == utc(2024, 4, 1))
    #expect(purchase.testPurchase == TestPurchase())
    #expect(purchase.acknowledgementState == .acknowledged)
    #expect(purchase.etag == "etag-123")

    let cancellation = try #require(purchase.canceledStateContext?.userInitiatedCancellation)
    #expect(cancellation.cancelSurveyResult?.reason == .others)
    #expect(cancellation.cancelSurveyResult?.reasonUserInput == "Too many emails")
    #expect(cancellation.cancelDate == utc(2024, 1, 20, 8, 30).addingTimeInterval(0.5))
    #expect(purchase.canceledStateContext?.systemInitiatedCancellation == nil)
    #expect(
        purchase.inGracePeriodStateContext?.renewalDeclined?.pendingOrderId
            == "GPA.1111-2222-3333-44444..1")
    #expect(
        purchase.onHoldStateContext?.renewalDeclined?.pendingOrderId == "GPA.1111-2222-3333-44444..2")

    #expect(purchase.externalAccountIdentifiers?.externalAccountId == "ext-1")
    #expect(purchase.externalAccountIdentifiers?.obfuscatedExternalAccountId == "obf-account")
    #expect(purchase.externalAccountIdentifiers?.obfuscatedExternalProfileId == "obf-profile")
    #expect(purchase.subscribeWithGoogleInfo?.emailAddress == "jo@example.com")
    #expect(purchase.subscribeWithGoogleInfo?.familyName == "Doe")
    #expect(purchase.outOfAppPurchaseContext?.expiredPurchaseToken == "expired-token")
    #expect(
        purchase.outOfAppPurchaseContext?.expiredExternalAccountIdentifiers?.obfuscatedExternalAccountId
            == "old-obf")

    let items = try #require(purchase.lineItems)
    #expect(items.count == 2)
    let item = items[0]
    #expect(item.productId == "premium_monthly")
    #expect(approx(item.expiryDate, utc(2024, 2, 1).addingTimeInterval(0.123)))
    #expect(item.latestSuccessfulOrderId == "GPA.1234-5678-9012-34567..0")
    let plan = try #require(item.autoRenewingPlan)
    #expect(plan.autoRenewEnabled == true)
    #expect(plan.recurringPrice == Money(currencyCode: "USD", units: 9, nanos: 990_000_000))
    #expect(plan.priceChangeDetails?.newPrice?.units == 12)
    #expect(plan.priceChangeDetails?.priceChangeMode == .priceIncrease)
    #expect(plan.priceChangeDetails?.priceChangeState == .outstanding)
    #expect(plan.priceChangeDetails?.expectedNewPriceChargeDate == utc(2024, 3, 1))
    #expect(plan.installmentDetails?.initialCommittedPaymentsCount == 12)
    #expect(plan.installmentDetails?.subsequentCommittedPaymentsCount == 12)
    #expect(plan.installmentDetails?.remainingCommittedPaymentsCount == 11)
    #expect(plan.installmentDetails?.pendingCancellation != nil)
    #expect(plan.priceStepUpConsentDetails?.state?.rawValue == "CONSENT_STATE_PENDING")
    #expect(plan.priceStepUpConsentDetails?.consentDeadlineDate == utc(2024, 2, 15, 12))
    #expect(plan.priceStepUpConsentDetails?.newPrice?.units == 11)
    #expect(item.offerDetails?.basePlanId == "monthly")
    #expect(item.offerDetails?.offerId == "intro-offer")
    #expect(item.offerDetails?.offerTags == ["intro", "promo"])
    #expect(item.deferredItemReplacement?.productId == "premium_yearly")
    #expect(item.deferredItemRemoval != nil)
    #expect(item.itemReplacement?.productId == "basic_monthly")
    #expect(item.itemReplacement?.basePlanId == "basic")
    #expect(item.itemReplacement?.offerId == "basic-offer")
    #expect(item.itemReplacement?.replacementMode?.rawValue == "WITH_TIME_PRORATION")
    #expect(item.offerPhase?.introductoryPrice != nil)
    #expect(item.offerPhase?.freeTrial == nil)
    #expect(item.signupPromotion?.vanityCode?.promotionCode == "SPRING24")
    #expect(item.prepaidPlan == nil)

    let prepaid = items[1]
    #expect(prepaid.prepaidPlan?.allowExtendAfterDate == utc(2024, 1, 25))
    #expect(prepaid.offerPhase?.prorationPeriod?.originalOfferPhaseType == "FREE_TRIAL")
    #expect(prepaid.signupPromotion?.oneTimeCode != nil)
    #expect(prepaid.autoRenewingPlan == nil)
}

@Test func decodesV1ProductPurchaseWithEveryField() throws {
    let purchase = try decode(ProductPurchase.self, productPurchaseJSON)
    #expect(purchase.kind == "androidpublisher#productPurchase")
    #expect(purchase.purchaseTimeMillis == 1_704_067_200_123)
    #expect(approx(purchase.purchaseDate, utc(2024, 1, 1).addingTimeInterval(0.123)))
    #expect(purchase.purchaseState == .purchased)
    #expect(purchase.consumptionState == .consumed)
    #expect(purchase.developerPayload == "payload")
    #expect(purchase.orderId == "GPA.3333-4444-5555-66666")
    #expect(purchase.purchaseType == .test)
    #expect(purchase.acknowledgementState == .acknowledged)
    #expect(purchase.purchaseToken == "product-token")
    #expect(purchase.productId == "coins_100")
    #expect(purchase.quantity == 3)
    #expect(purchase.obfuscatedExternalAccountId == "obf-account")
    #expect(purchase.obfuscatedExternalProfileId == "obf-profile")
    #expect(purchase.regionCode == "DE")
    #expect(purchase.refundableQuantity == 2)
}

@Test func decodesProductPurchaseV2WithEveryField() throws {
    let purchase = try decode(ProductPurchaseV2.self, productPurchaseV2JSON)
    #expect(purchase.kind == "androidpublisher#productPurchaseV2")
    #expect(purchase.purchaseStateContext?.purchaseState == .purchased)
    #expect(purchase.testPurchaseContext?.fopType == .test)
    #expect(purchase.orderId == "GPA.3333-4444-5555-66666")
    #expect(purchase.obfuscatedExternalAccountId == "obf-account")
    #expect(purchase.obfuscatedExternalProfileId == "obf-profile")
    #expect(purchase.regionCode == "FR")
    #expect(purchase.purchaseCompletionTime == "2024-05-01T10:00:00.000001Z")
    #expect(approx(purchase.purchaseCompletionDate, utc(2024, 5, 1, 10).addingTimeInterval(0.000_001)))
    #expect(purchase.acknowledgementState == .pending)

    let item = try #require(purchase.productLineItem?.first)
    #expect(item.productId == "coins_100")
    let offer = try #require(item.productOfferDetails)
    #expect(offer.offerTags == ["sale"])
    #expect(offer.offerId == "summer-sale")
    #expect(offer.purchaseOptionId == "buy")
    #expect(offer.rentOfferDetails != nil)
    #expect(offer.preorderOfferDetails?.preorderReleaseDate == utc(2024, 6, 1))
    #expect(offer.offerToken == "offer-token")
    #expect(offer.quantity == 3)
    #expect(offer.refundableQuantity == 2)
    #expect(offer.consumptionState == .yetToBeConsumed)
}

@Test func decodesVoidedPurchasesListResponse() throws {
    let response = try decode(VoidedPurchasesListResponse.self, voidedPurchasesJSON)
    #expect(response.pageInfo == PageInfo(totalResults: 2, resultPerPage: 1000, startIndex: 0))
    #expect(response.tokenPagination?.nextPageToken == "next")
    #expect(response.tokenPagination?.previousPageToken == "prev")

    let purchases = try #require(response.voidedPurchases)
    #expect(purchases.count == 2)
    let first = purchases[0]
    #expect(first.kind == "androidpublisher#voidedPurchase")
    #expect(first.purchaseToken == "voided-token")
    #expect(first.purchaseTimeMillis == 1_704_067_200_000)
    #expect(first.purchaseDate == utc(2024, 1, 1))
    #expect(first.voidedTimeMillis == 1_704_153_600_000)
    #expect(first.voidedDate == utc(2024, 1, 2))
    #expect(first.orderId == "GPA.7777-8888-9999-00000")
    #expect(first.voidedSource == .google)
    #expect(first.voidedReason == .chargeback)
    #expect(first.voidedQuantity == 1)

    // Numbers instead of strings, and unknown enum values, still decode.
    let second = purchases[1]
    #expect(second.purchaseTimeMillis == 1_704_067_200_000)
    #expect(second.voidedSource?.rawValue == 9)
    #expect(second.voidedReason == VoidedPurchase.VoidedReason(rawValue: 42))
    #expect(second.voidedReason?.description == "42")
}

@Test func decodesOrderWithEveryField() throws {
    let order = try decode(Order.self, orderJSON)
    #expect(order.orderId == "GPA.1234-5678-9012-34567")
    #expect(order.purchaseToken == "order-token")
    #expect(order.state == .partiallyRefunded)
    #expect(order.salesChannel == .inApp)
    #expect(approx(order.createDate, utc(2024, 1, 1).addingTimeInterval(0.123_456)))
    #expect(order.lastEventDate == utc(2024, 1, 5))
    #expect(order.buyerAddress == BuyerAddress(buyerCountry: "US", buyerState: "CA", buyerPostcode: "94043"))
    #expect(order.total == Money(currencyCode: "USD", units: 10, nanos: 790_000_000))
    #expect(order.tax == Money(currencyCode: "USD", nanos: 800_000_000))
    #expect(order.orderDetails?.taxInclusive == false)
    #expect(order.developerRevenueInBuyerCurrency?.units == 8)
    #expect(order.pointsDetails?.pointsOfferId == "points-offer")
    #expect(order.pointsDetails?.pointsCouponValue?.units == 2)
    #expect(order.pointsDetails?.pointsDiscountRateMicros == 500_000)
    #expect(order.pointsDetails?.pointsSpent == 100)

    let items = try #require(order.lineItems)
    #expect(items.count == 2)
    #expect(items[0].productTitle == "Premium (Monthly)")
    #expect(items[0].productId == "premium_monthly")
    #expect(items[0].listingPrice?.nanos == 990_000_000)
    #expect(items[0].total?.units == 10)
    #expect(items[0].tax?.units == nil)
    let subscription = try #require(items[0].subscriptionDetails)
    #expect(subscription.basePlanId == "monthly")
    #expect(subscription.offerId == "intro-offer")
    #expect(subscription.offerPhase == .introductory)
    #expect(subscription.offerPhaseDetails?.prorationPeriodDetails?.originalOfferPhase == "FREE_TRIAL")
    #expect(subscription.servicePeriodStartDate == utc(2024, 1, 1))
    #expect(subscription.servicePeriodEndDate == utc(2024, 2, 1))
    let oneTime = try #require(items[1].oneTimePurchaseDetails)
    #expect(oneTime.offerId == "summer-sale")
    #expect(oneTime.purchaseOptionId == "buy")
    #expect(oneTime.quantity == 3)
    #expect(oneTime.preorderDetails != nil)
    #expect(oneTime.rentalDetails != nil)
    #expect(items[1].paidAppDetails != nil)

    let history = try #require(order.orderHistory)
    #expect(history.processedEvent?.eventDate == utc(2024, 1, 1, 0, 0, 5))
    #expect(history.cancellationEvent?.eventDate == utc(2024, 1, 6))
    let partial = try #require(history.partialRefundEvents?.first)
    #expect(partial.createDate == utc(2024, 1, 4))
    #expect(partial.processDate == utc(2024, 1, 5))
    #expect(partial.state == .processedSuccessfully)
    #expect(partial.refundDetails?.total?.units == 5)
    #expect(partial.refundDetails?.tax?.nanos == 400_000_000)
    #expect(history.refundEvent?.eventDate == utc(2024, 1, 7))
    #expect(history.refundEvent?.refundReason == .chargeback)
    #expect(history.refundEvent?.refundDetails?.total?.nanos == 790_000_000)
}

@Test func decodesGoogleErrorBody() throws {
    let body = try decode(GoogleAPIErrorBody.self, errorJSON)
    let error = try #require(body.error)
    #expect(error.code == 400)
    #expect(error.status == "INVALID_ARGUMENT")
    #expect(error.message == "The purchase token does not match the package name.")
    let item = try #require(error.errors?.first)
    #expect(item.domain == "androidpublisher")
    #expect(item.reason == "purchaseTokenDoesNotMatchPackage")
    #expect(item.location == "token")
    #expect(item.locationType == "parameter")
    let detail = try #require(error.details?.first)
    #expect(detail["@type"]?.stringValue == "type.googleapis.com/google.rpc.ErrorInfo")
    #expect(detail["metadata"]?["retryable"] == .bool(false))
    #expect(detail["metadata"]?["attempt"] == .integer(1))
    #expect(detail["metadata"]?["ratio"] == .double(0.5))
    #expect(detail["links"] == .array([.null, .string("x")]))
    #expect(try roundTrip(body) == body)
}

@Test func decodesSmallResponseBodies() throws {
    let v1 = try decode(
        SubscriptionPurchasesDeferResponse.self, #"{"newExpiryTimeMillis":"1706745600000"}"#)
    #expect(v1.newExpiryDate == utc(2024, 2, 1))

    let v2 = try decode(
        DeferSubscriptionPurchaseResponse.self,
        #"{"itemExpiryTimeDetails":[{"productId":"premium_monthly","expiryTime":"2024-02-08T00:00:00Z"}]}"#
    )
    #expect(v2.itemExpiryTimeDetails?.first?.productId == "premium_monthly")
    #expect(v2.itemExpiryTimeDetails?.first?.expiryDate == utc(2024, 2, 8))

    #expect(try decode(RevokeSubscriptionPurchaseResponse.self, "{}") == .init())
    #expect(try decode(CancelSubscriptionPurchaseResponse.self, "{}") == .init())
}

// MARK: - Open enums

@Test func unknownEnumValuesDecodeAndKeepTheirRawValue() throws {
    let purchase = try decode(
        SubscriptionPurchaseV2.self,
        """
        {"subscriptionState": "SUBSCRIPTION_STATE_SOMETHING_NEW",
         "acknowledgementState": "ACKNOWLEDGEMENT_STATE_LATER",
         "lineItems": [{"autoRenewingPlan": {"priceChangeDetails": {"priceChangeMode": "NEW_MODE"}}}]}
        """)
    #expect(purchase.subscriptionState?.rawValue == "SUBSCRIPTION_STATE_SOMETHING_NEW")
    #expect(purchase.subscriptionState != .active)
    #expect(purchase.acknowledgementState?.description == "ACKNOWLEDGEMENT_STATE_LATER")
    #expect(
        purchase.lineItems?.first?.autoRenewingPlan?.priceChangeDetails?.priceChangeMode?.rawValue
            == "NEW_MODE")

    let product = try decode(ProductPurchase.self, #"{"purchaseState": 7, "purchaseType": 99}"#)
    #expect(product.purchaseState?.rawValue == 7)
    #expect(product.purchaseType == ProductPurchase.PurchaseType(rawValue: 99))

    let order = try decode(Order.self, #"{"state": "ON_THE_MOON", "salesChannel": "TELEPATHY"}"#)
    #expect(order.state?.rawValue == "ON_THE_MOON")
    #expect(order.salesChannel?.rawValue == "TELEPATHY")

    // Unknown values survive a round trip unchanged.
    #expect(try roundTrip(purchase) == purchase)
    #expect(try jsonObject(order)["state"] as? String == "ON_THE_MOON")
}

@Test func knownEnumConstantsMatchGoogleRawValues() {
    #expect(SubscriptionState.pending.rawValue == "SUBSCRIPTION_STATE_PENDING")
    #expect(SubscriptionState.inGracePeriod.rawValue == "SUBSCRIPTION_STATE_IN_GRACE_PERIOD")
    #expect(SubscriptionState.onHold.rawValue == "SUBSCRIPTION_STATE_ON_HOLD")
    #expect(
        SubscriptionState.pendingPurchaseCanceled.rawValue
            == "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED")
    #expect(AcknowledgementState.pending.rawValue == "ACKNOWLEDGEMENT_STATE_PENDING")
    #expect(SubscriptionNotification.NotificationType.renewed.rawValue == 2)
    #expect(SubscriptionNotification.NotificationType.priceChangeUpdated.rawValue == 19)
    #expect(SubscriptionNotification.NotificationType.pendingPurchaseCanceled.rawValue == 20)
    #expect(OneTimeProductNotification.NotificationType.canceled.rawValue == 2)
    #expect(VoidedPurchaseNotification.RefundType.quantityBasedPartialRefund.rawValue == 2)
    #expect(VoidedPurchase.VoidedReason.unacknowledgedPurchase.rawValue == 8)
    #expect(
        CancellationContext.CancellationType.developerRequestedStopPayments.rawValue
            == "DEVELOPER_REQUESTED_STOP_PAYMENTS")
}

// MARK: - Int64String

@Test func int64DecodesFromStringAndNumberAndEncodesAsString() throws {
    #expect(try decode(Int64String.self, #""9223372036854775807""#) == Int64String(.max))
    #expect(try decode(Int64String.self, #""-42""#) == -42)
    #expect(try decode(Int64String.self, "1704067200000") == 1_704_067_200_000)
    #expect(try decode([Int64String].self, #"["1", 2]"#) == [1, 2])

    let money = try decode(Money.self, #"{"currencyCode":"EUR","units":5,"nanos":1}"#)
    #expect(money.units == 5)
    let encoded = try jsonObject(money)
    #expect(encoded["units"] as? String == "5")
    #expect(encoded["nanos"] as? Int == 1)

    let data = try JSONEncoder().encode([Int64String(1_704_067_200_123)])
    #expect(String(decoding: data, as: UTF8.self) == #"["1704067200123"]"#)
}

@Test(arguments: [#""12a""#, #""""#, #"" 12""#, #""1.5""#, #""9223372036854775808""#, "1.5", "true"])
func int64RejectsMalformedValues(json: String) {
    #expect(throws: DecodingError.self) { try decode(Int64String.self, json) }
}

@Test func malformedInt64FailsTheEnclosingModel() {
    #expect(throws: DecodingError.self) {
        try decode(ProductPurchase.self, #"{"purchaseTimeMillis": "yesterday"}"#)
    }
}

@Test func int64MillisecondsDateConversion() {
    let value = Int64String(milliseconds: utc(2024, 1, 1).addingTimeInterval(0.5))
    #expect(value == 1_704_067_200_500)
    #expect(value.dateFromMilliseconds == utc(2024, 1, 1).addingTimeInterval(0.5))
    #expect(Int64String("77") == 77)
    #expect(Int64String("x") == nil)
    #expect(Int64String(1) < Int64String(2))
}

// MARK: - RFC 3339

@Test(arguments: [
    ("2024-01-01T00:00:00Z", 0.0),
    ("2024-01-01T00:00:00.123Z", 0.123),
    ("2024-01-01T00:00:00.123456Z", 0.123_456),
    ("2024-01-01T00:00:00.123456789Z", 0.123_456_789),
    ("2024-01-01T00:00:00.1Z", 0.1),
    ("2024-01-01t00:00:00.12z", 0.12),
])
func rfc3339ParsesFractionalDigits(text: String, fraction: Double) throws {
    let date = try #require(RFC3339.date(from: text))
    #expect(abs(date.timeIntervalSince(utc(2024, 1, 1)) - fraction) < 0.000_001)
}

@Test func rfc3339ParsesOffsets() throws {
    #expect(RFC3339.date(from: "2024-01-01T05:30:00+05:30") == utc(2024, 1, 1))
    #expect(RFC3339.date(from: "2023-12-31T19:00:00.250-05:00") == utc(2024, 1, 1).addingTimeInterval(0.25))
    #expect(RFC3339.date(from: "2024-02-29T12:00:00+00:00") == utc(2024, 2, 29, 12))
    #expect(RFC3339.date(from: "1969-12-31T23:59:59Z") == Date(timeIntervalSince1970: -1))
}

@Test(arguments: [
    "", "2024-01-01", "2024-01-01T00:00:00", "2024-01-01T00:00:00.Z",
    "2024-01-01T00:00:00.1234567890Z", "2024-13-01T00:00:00Z", "2023-02-29T00:00:00Z",
    "2024-01-01T24:00:00Z", "2024-01-01T00:00:00+0530", "2024-01-01T00:00:00Zjunk",
    "2024-1-01T00:00:00Z",
])
func rfc3339RejectsMalformedTimestamps(text: String) {
    #expect(RFC3339.date(from: text) == nil)
}

@Test func rfc3339FormatsAndRoundTrips() throws {
    let date = utc(2024, 3, 9, 7, 5, 3).addingTimeInterval(0.25)
    #expect(RFC3339.string(from: date) == "2024-03-09T07:05:03.250Z")
    #expect(RFC3339.string(from: date, fractionalDigits: 0) == "2024-03-09T07:05:03Z")
    #expect(RFC3339.string(from: date, fractionalDigits: 6) == "2024-03-09T07:05:03.250000Z")
    #expect(RFC3339.string(from: Date(timeIntervalSince1970: -1)) == "1969-12-31T23:59:59.000Z")
    #expect(RFC3339.date(from: RFC3339.string(from: date)) == date)
    #expect(RFC3339.string(from: utc(2000, 2, 29), fractionalDigits: 0) == "2000-02-29T00:00:00Z")
}

// MARK: - RTDN

private func base64(_ json: String) -> String { Data(json.utf8).base64EncodedString() }

private func envelope(data: String) -> String {
    """
    {
      "message": {
        "attributes": { "origin": "play" },
        "data": "\(data)",
        "messageId": "136969346945",
        "publishTime": "2024-01-01T00:00:01.5Z",
        "orderingKey": "key-1"
      },
      "subscription": "projects/myproject/subscriptions/mysubscription",
      "deliveryAttempt": 3
    }
    """
}

@Test func pubSubEnvelopeDecodesIntoSubscriptionNotification() throws {
    let notification = """
        {"version":"1.0","packageName":"com.example.app","eventTimeMillis":"1704067200000",
         "subscriptionNotification":{"version":"1.0","notificationType":4,
           "purchaseToken":"sub-token","subscriptionId":"premium_monthly"}}
        """
    let push = try decode(PubSubPushEnvelope.self, envelope(data: base64(notification)))
    #expect(push.subscription == "projects/myproject/subscriptions/mysubscription")
    #expect(push.deliveryAttempt == 3)
    #expect(push.message.messageId == "136969346945")
    #expect(push.message.publishDate == utc(2024, 1, 1, 0, 0, 1).addingTimeInterval(0.5))
    #expect(push.message.attributes == ["origin": "play"])
    #expect(push.message.orderingKey == "key-1")

    let decoded = try push.developerNotification()
    #expect(decoded.version == "1.0")
    #expect(decoded.packageName == "com.example.app")
    #expect(decoded.eventTimeMillis == 1_704_067_200_000)
    #expect(decoded.eventDate == utc(2024, 1, 1))
    let subscription = try #require(decoded.subscriptionNotification)
    #expect(subscription.version == "1.0")
    #expect(subscription.notificationType == .purchased)
    #expect(subscription.purchaseToken == "sub-token")
    #expect(subscription.subscriptionId == "premium_monthly")
    #expect(decoded.oneTimeProductNotification == nil)
    #expect(decoded.voidedPurchaseNotification == nil)
    #expect(decoded.testNotification == nil)
}

@Test func developerNotificationDecodesEveryKind() throws {
    let oneTime = try decode(
        DeveloperNotification.self,
        """
        {"version":"1.0","packageName":"com.example.app","eventTimeMillis":1704067200000,
         "oneTimeProductNotification":{"version":"1.0","notificationType":1,"purchaseToken":"otp-token","sku":"coins_100"}}
        """)
    #expect(oneTime.eventTimeMillis == 1_704_067_200_000)
    #expect(oneTime.oneTimeProductNotification?.notificationType == .purchased)
    #expect(oneTime.oneTimeProductNotification?.purchaseToken == "otp-token")
    #expect(oneTime.oneTimeProductNotification?.sku == "coins_100")
    #expect(oneTime.oneTimeProductNotification?.version == "1.0")

    let voided = try decode(
        DeveloperNotification.self,
        """
        {"version":"1.0","packageName":"com.example.app","eventTimeMillis":"1704067200000",
         "voidedPurchaseNotification":{"purchaseToken":"voided-token","orderId":"GPA.1","productType":2,"refundType":2}}
        """)
    let voidedBody = try #require(voided.voidedPurchaseNotification)
    #expect(voidedBody.purchaseToken == "voided-token")
    #expect(voidedBody.orderId == "GPA.1")
    #expect(voidedBody.productType == .oneTime)
    #expect(voidedBody.refundType == .quantityBasedPartialRefund)

    let test = try decode(
        DeveloperNotification.self,
        #"{"version":"1.0","packageName":"com.example.app","eventTimeMillis":"1","testNotification":{"version":"1.0"}}"#
    )
    #expect(test.testNotification == TestNotification(version: "1.0"))

    let refundReview = try decode(
        DeveloperNotification.self,
        #"{"packageName":"com.example.app","pendingRefundReviewNotification":{"orderId":"GPA.2","pendingRefundToken":"t"}}"#
    )
    #expect(refundReview.pendingRefundReviewNotification?["pendingRefundToken"] == .string("t"))
}

@Test func eventTimeMillisAcceptsStringAndNumber() throws {
    let fromString = try decode(DeveloperNotification.self, #"{"eventTimeMillis":"1704067200000"}"#)
    let fromNumber = try decode(DeveloperNotification.self, #"{"eventTimeMillis":1704067200000}"#)
    #expect(fromString.eventTimeMillis == 1_704_067_200_000)
    #expect(fromNumber.eventTimeMillis == fromString.eventTimeMillis)
    #expect(throws: DecodingError.self) {
        try decode(DeveloperNotification.self, #"{"eventTimeMillis":"soon"}"#)
    }
}

@Test func unknownNotificationTypesAreAccepted() throws {
    let notification = try decode(
        DeveloperNotification.self,
        """
        {"packageName":"com.example.app","eventTimeMillis":"1",
         "subscriptionNotification":{"version":"1.0","notificationType":999,"purchaseToken":"t"},
         "oneTimeProductNotification":{"notificationType":77},
         "someFutureNotification":{"x":1}}
        """)
    #expect(notification.subscriptionNotification?.notificationType?.rawValue == 999)
    #expect(notification.oneTimeProductNotification?.notificationType?.rawValue == 77)
    #expect(notification.subscriptionNotification?.notificationType?.description == "999")
}

@Test func pubSubMessageAcceptsSnakeCaseAliases() throws {
    let push = try decode(
        PubSubPushEnvelope.self,
        """
        {"message":{"data":"e30=","message_id":"snake-id","publish_time":"2024-01-01T00:00:00Z"},
         "subscription":"projects/p/subscriptions/s"}
        """)
    #expect(push.message.messageId == "snake-id")
    #expect(push.message.publishTime == "2024-01-01T00:00:00Z")
    #expect(push.deliveryAttempt == nil)
    #expect(try push.developerNotification() == DeveloperNotification())

    // Encoding writes both spellings, like Pub/Sub does.
    let message = try jsonObject(push.message)
    #expect(message["messageId"] as? String == "snake-id")
    #expect(message["message_id"] as? String == "snake-id")
    #expect(message["publish_time"] as? String == "2024-01-01T00:00:00Z")
}

@Test func pubSubDataDecodingErrors() throws {
    #expect(throws: PubSubDataError.missingData) { try PubSubMessage().decodedData() }
    #expect(throws: PubSubDataError.invalidBase64) { try PubSubMessage(data: "@@@@").decodedData() }
    #expect(throws: PubSubDataError.invalidBase64) { try PubSubMessage(data: "abcde").decodedData() }
    // URL-safe alphabet and missing padding are tolerated.
    #expect(try PubSubMessage(data: "-_8").decodedData() == Data([0xFB, 0xFF]))
    #expect(try PubSubMessage(data: "e30").decodedData() == Data("{}".utf8))
    #expect(throws: DecodingError.self) {
        try PubSubPushEnvelope(message: PubSubMessage(data: base64("not json"))).developerNotification()
    }
}

@Test func pubSubEnvelopeBuiltByTheSimulatorRoundTrips() throws {
    let notification = DeveloperNotification(
        version: "1.0", packageName: "com.example.app", eventTimeMillis: 1_704_067_200_000,
        subscriptionNotification: SubscriptionNotification(
            version: "1.0", notificationType: .renewed, purchaseToken: "sub-token"))
    let payload = try JSONEncoder().encode(notification)
    let push = PubSubPushEnvelope(
        message: PubSubMessage(payload: payload, messageId: "1", publishTime: "2024-01-01T00:00:00Z"),
        subscription: "projects/p/subscriptions/s")
    let decoded = try roundTrip(push)
    #expect(decoded == push)
    #expect(try decoded.developerNotification() == notification)
    #expect(try jsonObject(notification)["eventTimeMillis"] as? String == "1704067200000")
}

// MARK: - Round trips and request bodies

@Test func responseModelsRoundTrip() throws {
    let subscription = try decode(SubscriptionPurchaseV2.self, subscriptionPurchaseV2JSON)
    #expect(try roundTrip(subscription) == subscription)
    let product = try decode(ProductPurchase.self, productPurchaseJSON)
    #expect(try roundTrip(product) == product)
    let productV2 = try decode(ProductPurchaseV2.self, productPurchaseV2JSON)
    #expect(try roundTrip(productV2) == productV2)
    let voided = try decode(VoidedPurchasesListResponse.self, voidedPurchasesJSON)
    #expect(try roundTrip(voided) == voided)
    let order = try decode(Order.self, orderJSON)
    #expect(try roundTrip(order) == order)

    // Encoding uses Google's field names and int64-as-string.
    let encoded = try jsonObject(product)
    #expect(encoded["purchaseTimeMillis"] as? String == "1704067200123")
    #expect(encoded["purchaseState"] as? Int == 0)
    let original = try jsonObject(decode([String: JSONValue].self, productPurchaseJSON))
    #expect(Set(encoded.keys) == Set(original.keys))
}

@Test func revokeRequestBodies() throws {
    let full = try jsonObject(RevokeSubscriptionPurchaseRequest(revocationContext: .fullRefund))
    let fullContext = try #require(full["revocationContext"] as? [String: Any])
    #expect(Set(fullContext.keys) == ["fullRefund"])
    #expect((fullContext["fullRefund"] as? [String: Any])?.isEmpty == true)

    let prorated = try jsonObject(RevokeSubscriptionPurchaseRequest(revocationContext: .proratedRefund))
    #expect(Set(try #require(prorated["revocationContext"] as? [String: Any]).keys) == ["proratedRefund"])

    let item = try jsonObject(
        RevokeSubscriptionPurchaseRequest(revocationContext: .itemBasedRefund(productId: "addon")))
    let itemContext = try #require(item["revocationContext"] as? [String: Any])
    #expect((itemContext["itemBasedRefund"] as? [String: Any])?["productId"] as? String == "addon")
}

@Test func cancelDeferAndAcknowledgeRequestBodies() throws {
    let cancel = try jsonObject(
        CancelSubscriptionPurchaseRequest(
            cancellationContext: CancellationContext(cancellationType: .userRequestedStopRenewals)))
    #expect(
        (cancel["cancellationContext"] as? [String: Any])?["cancellationType"] as? String
            == "USER_REQUESTED_STOP_RENEWALS")

    let deferV1 = try jsonObject(
        SubscriptionPurchasesDeferRequest(
            deferralInfo: SubscriptionDeferralInfo(
                expectedExpiryTimeMillis: 1_706_745_600_000, desiredExpiryTimeMillis: 1_707_350_400_000)))
    let info = try #require(deferV1["deferralInfo"] as? [String: Any])
    #expect(info["expectedExpiryTimeMillis"] as? String == "1706745600000")
    #expect(info["desiredExpiryTimeMillis"] as? String == "1707350400000")

    let deferV2 = try jsonObject(
        DeferSubscriptionPurchaseRequest(
            deferralContext: DeferralContext(etag: "etag-123", deferDuration: "604800s", validateOnly: true)))
    let context = try #require(deferV2["deferralContext"] as? [String: Any])
    #expect(context["etag"] as? String == "etag-123")
    #expect(context["deferDuration"] as? String == "604800s")
    #expect(context["validateOnly"] as? Bool == true)

    let acknowledge = try jsonObject(SubscriptionPurchasesAcknowledgeRequest(developerPayload: "p"))
    #expect(acknowledge.count == 1)
    #expect(acknowledge["developerPayload"] as? String == "p")
    let acknowledgeProduct = try jsonObject(ProductPurchasesAcknowledgeRequest())
    #expect(acknowledgeProduct.isEmpty)
}
