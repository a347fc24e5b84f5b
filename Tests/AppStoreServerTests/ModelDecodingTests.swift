import Foundation
import Testing

@testable import AppStoreServer

/// Decodes `json` the way the verifier does.
private func decode<T: Decodable>(_ type: T.Type, _ json: String) throws -> T {
    try AppStoreJSON.makeDecoder().decode(type, from: Data(json.utf8))
}

/// Encodes `value` with the App Store encoder and decodes it back.
private func roundTrip<T: Codable>(_ value: T) throws -> T {
    let data = try AppStoreJSON.makeEncoder().encode(value)
    return try AppStoreJSON.makeDecoder().decode(T.self, from: data)
}

/// The date `milliseconds` after 1970, computed as the decoder does.
private func ms(_ milliseconds: Int64) -> Date {
    Date(timeIntervalSince1970: Double(milliseconds) / 1000)
}

private let transactionJSON = """
    {
      "appAccountToken": "7e3fb20b-4cdb-47cc-936d-99d65f608138",
      "appTransactionId": "704289557651883223",
      "bundleId": "com.example.app",
      "billingPlanType": "MONTHLY",
      "currency": "USD",
      "commitmentInfo": {
        "billingPeriodNumber": 3,
        "commitmentExpiresDate": 1729684800000,
        "commitmentPrice": 119880,
        "totalBillingPeriods": 12
      },
      "environment": "Sandbox",
      "expiresDate": 1700827300000,
      "inAppOwnershipType": "PURCHASED",
      "isUpgraded": false,
      "offerDiscountType": "PAY_AS_YOU_GO",
      "offerIdentifier": "spring-promo",
      "offerPeriod": "P1M",
      "offerType": 2,
      "originalPurchaseDate": 1698148800000,
      "originalTransactionId": "2000000431781712",
      "previousOriginalTransactionId": "2000000431700000",
      "price": 9990,
      "productId": "com.example.app.pro.monthly",
      "purchaseDate": 1698148900000,
      "quantity": 1,
      "revocationDate": 1698149000000,
      "revocationPercentage": 33333,
      "revocationReason": 1,
      "revocationType": "REFUND_PRORATED",
      "signedDate": 1698149100000,
      "storefront": "USA",
      "storefrontId": "143441",
      "subscriptionGroupIdentifier": "21379574",
      "transactionId": "2000000431795123",
      "transactionReason": "PURCHASE",
      "type": "Auto-Renewable Subscription",
      "webOrderLineItemId": "2000000041580987",
      "advancedCommerceInfo": {
        "descriptors": { "description": "All premium content", "displayName": "Premium" },
        "estimatedTax": 830,
        "items": [
          {
            "SKU": "premium.video",
            "description": "Video add-on",
            "displayName": "Video",
            "offer": { "period": "P1W", "periodCount": 2, "price": 0, "reason": "ACQUISITION" },
            "price": 4990,
            "refunds": [
              {
                "refundAmount": 2495,
                "refundDate": 1698149050000,
                "refundReason": "FULFILLMENT_ISSUE",
                "refundType": "PRORATED"
              }
            ],
            "revocationDate": 1698149050000
          }
        ],
        "period": "P1M",
        "requestReferenceId": "f2c2a9c2-6a7e-4a53-9b2c-1d5d1f0e9a11",
        "taxCode": "C003-00-2",
        "taxExclusivePrice": 9160,
        "taxRate": "0.0906"
      }
    }
    """

private let renewalInfoJSON = """
    {
      "appAccountToken": "7e3fb20b-4cdb-47cc-936d-99d65f608138",
      "appTransactionId": "704289557651883223",
      "autoRenewProductId": "com.example.app.pro.yearly",
      "autoRenewStatus": 1,
      "currency": "EUR",
      "commitmentInfo": {
        "commitmentAutoRenewProductId": "com.example.app.pro.committed",
        "commitmentAutoRenewStatus": 0,
        "commitmentRenewalBillingPlanType": "BILLED_UPFRONT",
        "commitmentRenewalDate": 1729684800000,
        "commitmentRenewalPrice": 99990
      },
      "eligibleWinBackOfferIds": ["winback-1", "winback-2"],
      "environment": "Production",
      "expirationIntent": 2,
      "gracePeriodExpiresDate": 1700913700000,
      "isInBillingRetryPeriod": true,
      "offerDiscountType": "FREE_TRIAL",
      "offerIdentifier": "trial-offer",
      "offerPeriod": "P1W",
      "offerType": 4,
      "originalTransactionId": "2000000431781712",
      "priceIncreaseStatus": 0,
      "productId": "com.example.app.pro.monthly",
      "recentSubscriptionStartDate": 1698148800000,
      "renewalBillingPlanType": "MONTHLY",
      "renewalDate": 1700827300000,
      "renewalPrice": 12990,
      "signedDate": 1698149100000,
      "advancedCommerceInfo": {
        "consistencyToken": "consistency-token-1",
        "descriptors": { "description": "All premium content", "displayName": "Premium" },
        "items": [
          {
            "SKU": "premium.video",
            "description": "Video add-on",
            "displayName": "Video",
            "offer": { "period": "P3M", "periodCount": 1, "price": 2990, "reason": "RETENTION" },
            "price": 4990,
            "priceIncreaseInfo": {
              "dependentSKUs": ["premium.music", "premium.books"],
              "price": 5990,
              "status": "PENDING"
            }
          }
        ],
        "period": "P1Y",
        "requestReferenceId": "a8d0f1e4-1b8c-4b8e-9a3a-2c7c1d9e0f22",
        "taxCode": "C003-00-2"
      }
    }
    """

private let appTransactionJSON = """
    {
      "receiptType": "Production",
      "appAppleId": 6449876543,
      "bundleId": "com.example.app",
      "applicationVersion": "2.4.1",
      "versionExternalIdentifier": 869876543,
      "receiptCreationDate": 1698148900000,
      "originalPurchaseDate": 1698148800000,
      "originalApplicationVersion": "1.0",
      "deviceVerification": "u7dGyh0vGQwtUvJx5h0hXYkLx9bM0Lx0cJ8xE0pKcD3CQm1mH9s0Qw==",
      "deviceVerificationNonce": "48ccfa42-7431-4f22-9908-7e88983e105a",
      "preorderDate": 1698148700000,
      "appTransactionId": "704289557651883223",
      "originalPlatform": "visionOS"
    }
    """

private let consumptionRequestJSON = """
    {
      "notificationType": "CONSUMPTION_REQUEST",
      "subtype": "UPGRADE",
      "notificationUUID": "002e14d5-51f5-4503-b5a8-c3a1af68eb20",
      "version": "2.0",
      "signedDate": 1698148900000,
      "data": {
        "appAppleId": 6449876543,
        "bundleId": "com.example.app",
        "bundleVersion": "241",
        "consumptionRequestReason": "UNINTENDED_PURCHASE",
        "environment": "Sandbox",
        "signedRenewalInfo": "eyJhbGciOiJFUzI1NiJ9.cmVuZXdhbA.c2ln",
        "signedTransactionInfo": "eyJhbGciOiJFUzI1NiJ9.dHJhbnNhY3Rpb24.c2ln",
        "status": 3
      }
    }
    """

@Suite("App Store model decoding")
struct ModelDecodingTests {
    @Test("JWSTransaction decodes every documented field")
    func decodesTransaction() throws {
        let transaction = try decode(JWSTransaction.self, transactionJSON)

        #expect(transaction.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(
            transaction.appAccountTokenUUID == UUID(uuidString: "7E3FB20B-4CDB-47CC-936D-99D65F608138"))
        #expect(transaction.appTransactionId == "704289557651883223")
        #expect(transaction.bundleId == "com.example.app")
        #expect(transaction.billingPlanType == .monthly)
        #expect(transaction.currency == "USD")
        #expect(
            transaction.commitmentInfo
                == TransactionCommitmentInfo(
                    billingPeriodNumber: 3,
                    commitmentExpiresDate: ms(1_729_684_800_000),
                    commitmentPrice: 119_880,
                    totalBillingPeriods: 12
                ))
        #expect(transaction.environment == .sandbox)
        #expect(transaction.expiresDate == ms(1_700_827_300_000))
        #expect(transaction.inAppOwnershipType == .purchased)
        #expect(transaction.isUpgraded == false)
        #expect(transaction.offerDiscountType == .payAsYouGo)
        #expect(transaction.offerIdentifier == "spring-promo")
        #expect(transaction.offerPeriod == "P1M")
        #expect(transaction.offerType == .promotional)
        #expect(transaction.originalPurchaseDate == ms(1_698_148_800_000))
        #expect(transaction.originalTransactionId == "2000000431781712")
        #expect(transaction.previousOriginalTransactionId == "2000000431700000")
        #expect(transaction.price == 9990)
        #expect(transaction.productId == "com.example.app.pro.monthly")
        #expect(transaction.purchaseDate == ms(1_698_148_900_000))
        #expect(transaction.quantity == 1)
        #expect(transaction.revocationDate == ms(1_698_149_000_000))
        #expect(transaction.revocationPercentage == 33_333)
        #expect(transaction.revocationReason == .appIssue)
        #expect(transaction.revocationType == .refundProrated)
        #expect(transaction.signedDate == ms(1_698_149_100_000))
        #expect(transaction.storefront == "USA")
        #expect(transaction.storefrontId == "143441")
        #expect(transaction.subscriptionGroupIdentifier == "21379574")
        #expect(transaction.transactionId == "2000000431795123")
        #expect(transaction.transactionReason == .purchase)
        #expect(transaction.type == .autoRenewableSubscription)
        #expect(transaction.webOrderLineItemId == "2000000041580987")

        let commerce = try #require(transaction.advancedCommerceInfo)
        #expect(
            commerce.descriptors
                == AdvancedCommerceDescriptors(description: "All premium content", displayName: "Premium"))
        #expect(commerce.estimatedTax == 830)
        #expect(commerce.period == .oneMonth)
        #expect(commerce.requestReferenceId == "f2c2a9c2-6a7e-4a53-9b2c-1d5d1f0e9a11")
        #expect(commerce.taxCode == "C003-00-2")
        #expect(commerce.taxExclusivePrice == 9160)
        #expect(commerce.taxRate == "0.0906")
        let item = try #require(commerce.items?.first)
        #expect(commerce.items?.count == 1)
        #expect(item.sku == "premium.video")
        #expect(item.description == "Video add-on")
        #expect(item.displayName == "Video")
        #expect(
            item.offer
                == AdvancedCommerceOffer(period: .oneWeek, periodCount: 2, price: 0, reason: .acquisition))
        #expect(item.price == 4990)
        #expect(item.revocationDate == ms(1_698_149_050_000))
        #expect(
            item.refunds == [
                AdvancedCommerceRefund(
                    refundAmount: 2495,
                    refundDate: ms(1_698_149_050_000),
                    refundReason: .fulfillmentIssue,
                    refundType: .prorated
                )
            ])
    }

    @Test("JWSRenewalInfo decodes every documented field")
    func decodesRenewalInfo() throws {
        let info = try decode(JWSRenewalInfo.self, renewalInfoJSON)

        #expect(info.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(info.appAccountTokenUUID == UUID(uuidString: "7e3fb20b-4cdb-47cc-936d-99d65f608138"))
        #expect(info.appTransactionId == "704289557651883223")
        #expect(info.autoRenewProductId == "com.example.app.pro.yearly")
        #expect(info.autoRenewStatus == .on)
        #expect(info.currency == "EUR")
        #expect(
            info.commitmentInfo
                == RenewalCommitmentInfo(
                    commitmentAutoRenewProductId: "com.example.app.pro.committed",
                    commitmentAutoRenewStatus: .off,
                    commitmentRenewalBillingPlanType: .billedUpfront,
                    commitmentRenewalDate: ms(1_729_684_800_000),
                    commitmentRenewalPrice: 99_990
                ))
        #expect(info.eligibleWinBackOfferIds == ["winback-1", "winback-2"])
        #expect(info.environment == .production)
        #expect(info.expirationIntent == .billingError)
        #expect(info.gracePeriodExpiresDate == ms(1_700_913_700_000))
        #expect(info.isInBillingRetryPeriod == true)
        #expect(info.offerDiscountType == .freeTrial)
        #expect(info.offerIdentifier == "trial-offer")
        #expect(info.offerPeriod == "P1W")
        #expect(info.offerType == .winBack)
        #expect(info.originalTransactionId == "2000000431781712")
        #expect(info.priceIncreaseStatus == .notResponded)
        #expect(info.productId == "com.example.app.pro.monthly")
        #expect(info.recentSubscriptionStartDate == ms(1_698_148_800_000))
        #expect(info.renewalBillingPlanType == .monthly)
        #expect(info.renewalDate == ms(1_700_827_300_000))
        #expect(info.renewalPrice == 12_990)
        #expect(info.signedDate == ms(1_698_149_100_000))

        let commerce = try #require(info.advancedCommerceInfo)
        #expect(commerce.consistencyToken == "consistency-token-1")
        #expect(commerce.descriptors?.displayName == "Premium")
        #expect(commerce.descriptors?.description == "All premium content")
        #expect(commerce.period == .oneYear)
        #expect(commerce.requestReferenceId == "a8d0f1e4-1b8c-4b8e-9a3a-2c7c1d9e0f22")
        #expect(commerce.taxCode == "C003-00-2")
        #expect(
            commerce.items == [
                AdvancedCommerceRenewalItem(
                    sku: "premium.video",
                    description: "Video add-on",
                    displayName: "Video",
                    offer: AdvancedCommerceOffer(
                        period: .threeMonths, periodCount: 1, price: 2990, reason: .retention),
                    price: 4990,
                    priceIncreaseInfo: AdvancedCommercePriceIncreaseInfo(
                        dependentSKUs: ["premium.music", "premium.books"],
                        price: 5990,
                        status: .pending
                    )
                )
            ])
    }

    @Test("AppTransaction decodes every documented field")
    func decodesAppTransaction() throws {
        let app = try decode(AppTransaction.self, appTransactionJSON)

        #expect(app.receiptType == .production)
        #expect(app.appAppleId == 6_449_876_543)
        #expect(app.bundleId == "com.example.app")
        #expect(app.applicationVersion == "2.4.1")
        #expect(app.versionExternalIdentifier == 869_876_543)
        #expect(app.receiptCreationDate == ms(1_698_148_900_000))
        #expect(app.originalPurchaseDate == ms(1_698_148_800_000))
        #expect(app.originalApplicationVersion == "1.0")
        #expect(app.deviceVerification == "u7dGyh0vGQwtUvJx5h0hXYkLx9bM0Lx0cJ8xE0pKcD3CQm1mH9s0Qw==")
        #expect(app.deviceVerificationNonce == "48ccfa42-7431-4f22-9908-7e88983e105a")
        #expect(app.preorderDate == ms(1_698_148_700_000))
        #expect(app.appTransactionId == "704289557651883223")
        #expect(app.originalPlatform == .visionOS)
    }

    @Test("NotificationPayload decodes a notification with data")
    func decodesNotificationWithData() throws {
        let payload = try decode(NotificationPayload.self, consumptionRequestJSON)

        #expect(payload.notificationType == .consumptionRequest)
        #expect(payload.subtype == .upgrade)
        #expect(payload.notificationUUID == "002e14d5-51f5-4503-b5a8-c3a1af68eb20")
        #expect(payload.version == "2.0")
        #expect(payload.signedDate == ms(1_698_148_900_000))
        #expect(payload.summary == nil)
        #expect(payload.externalPurchaseToken == nil)
        #expect(payload.appData == nil)
        let data = try #require(payload.data)
        #expect(data.appAppleId == 6_449_876_543)
        #expect(data.bundleId == "com.example.app")
        #expect(data.bundleVersion == "241")
        #expect(data.consumptionRequestReason == .unintendedPurchase)
        #expect(data.environment == .sandbox)
        #expect(data.signedRenewalInfo == "eyJhbGciOiJFUzI1NiJ9.cmVuZXdhbA.c2ln")
        #expect(data.signedTransactionInfo == "eyJhbGciOiJFUzI1NiJ9.dHJhbnNhY3Rpb24.c2ln")
        #expect(data.status == .billingRetryPeriod)
    }

    @Test("NotificationPayload decodes a renewal-extension summary")
    func decodesNotificationWithSummary() throws {
        let payload = try decode(
            NotificationPayload.self,
            """
            {
              "notificationType": "RENEWAL_EXTENSION",
              "subtype": "SUMMARY",
              "notificationUUID": "9ad56bd2-0bc6-42e0-af24-fd996d87a1e6",
              "version": "2.0",
              "signedDate": 1698148900000,
              "summary": {
                "requestIdentifier": "efb27071-45a4-4aca-9854-2a1e9146f265",
                "environment": "Production",
                "appAppleId": 6449876543,
                "bundleId": "com.example.app",
                "productId": "com.example.app.pro.monthly",
                "storefrontCountryCodes": ["USA", "CAN", "MEX"],
                "failedCount": 5,
                "succeededCount": 3000000000
              }
            }
            """)

        #expect(payload.notificationType == .renewalExtension)
        #expect(payload.subtype == .summary)
        #expect(payload.data == nil)
        #expect(
            payload.summary
                == NotificationSummary(
                    requestIdentifier: "efb27071-45a4-4aca-9854-2a1e9146f265",
                    environment: .production,
                    appAppleId: 6_449_876_543,
                    bundleId: "com.example.app",
                    productId: "com.example.app.pro.monthly",
                    storefrontCountryCodes: ["USA", "CAN", "MEX"],
                    failedCount: 5,
                    succeededCount: 3_000_000_000
                ))
    }

    @Test("NotificationPayload decodes an external purchase token")
    func decodesNotificationWithExternalPurchaseToken() throws {
        let payload = try decode(
            NotificationPayload.self,
            """
            {
              "notificationType": "EXTERNAL_PURCHASE_TOKEN",
              "subtype": "ACTIVE_TOKEN_REMINDER",
              "notificationUUID": "1f1b5a6e-7d4c-4e0a-8e6b-3c2a1d0f9e8d",
              "version": "2.0",
              "signedDate": 1698148900000,
              "externalPurchaseToken": {
                "externalPurchaseId": "b2158121-7af9-49d4-9561-1f588205523e",
                "tokenCreationDate": 1698148950000,
                "appAppleId": 55555,
                "bundleId": "com.example.app",
                "tokenExpirationDate": 1729771350000,
                "tokenType": "SERVICES"
              }
            }
            """)

        #expect(payload.notificationType == .externalPurchaseToken)
        #expect(payload.subtype == .activeTokenReminder)
        #expect(
            payload.externalPurchaseToken
                == ExternalPurchaseToken(
                    externalPurchaseId: "b2158121-7af9-49d4-9561-1f588205523e",
                    tokenCreationDate: ms(1_698_148_950_000),
                    appAppleId: 55555,
                    bundleId: "com.example.app",
                    tokenExpirationDate: ms(1_729_771_350_000),
                    tokenType: .services
                ))
    }

    @Test("NotificationPayload decodes RESCIND_CONSENT app data")
    func decodesNotificationWithAppData() throws {
        let payload = try decode(
            NotificationPayload.self,
            """
            {
              "notificationType": "RESCIND_CONSENT",
              "notificationUUID": "002e14d5-51f5-4503-b5a8-c3a1af68eb20",
              "version": "2.0",
              "signedDate": 1698148900000,
              "appData": {
                "appAppleId": 41234,
                "bundleId": "com.example",
                "environment": "LocalTesting",
                "signedAppTransactionInfo": "eyJhbGciOiJFUzI1NiJ9.YXBw.c2ln"
              }
            }
            """)

        #expect(payload.notificationType == .rescindConsent)
        #expect(payload.subtype == nil)
        #expect(
            payload.appData
                == AppData(
                    appAppleId: 41234,
                    bundleId: "com.example",
                    environment: .localTesting,
                    signedAppTransactionInfo: "eyJhbGciOiJFUzI1NiJ9.YXBw.c2ln"
                ))
    }

    @Test("RealtimeRequest decodes every documented field")
    func decodesRealtimeRequest() throws {
        let request = try decode(
            RealtimeRequest.self,
            """
            {
              "originalTransactionId": "2000000431781712",
              "appAppleId": 6449876543,
              "productId": "com.example.app.pro.monthly",
              "userLocale": "en-US",
              "requestIdentifier": "3db5c98d-8acf-4e29-831e-8e1f82f9f6e9",
              "signedDate": 1698148900000,
              "environment": "Xcode"
            }
            """)

        #expect(request.originalTransactionId == "2000000431781712")
        #expect(request.appAppleId == 6_449_876_543)
        #expect(request.productId == "com.example.app.pro.monthly")
        #expect(request.userLocale == "en-US")
        #expect(request.requestIdentifier == "3db5c98d-8acf-4e29-831e-8e1f82f9f6e9")
        #expect(request.signedDate == ms(1_698_148_900_000))
        #expect(request.environment == .xcode)
    }

    @Test("Unknown enum values decode and keep their raw value")
    func keepsUnknownEnumValues() throws {
        let payload = try decode(
            NotificationPayload.self,
            """
            {
              "notificationType": "SOMETHING_NEW",
              "subtype": "BRAND_NEW_SUBTYPE",
              "data": { "environment": "Staging", "status": 9, "consumptionRequestReason": "NEW_REASON" }
            }
            """)
        #expect(payload.notificationType?.rawValue == "SOMETHING_NEW")
        #expect(payload.notificationType != .test)
        #expect(payload.subtype == NotificationSubtype(rawValue: "BRAND_NEW_SUBTYPE"))
        #expect(payload.data?.environment?.rawValue == "Staging")
        #expect(payload.data?.environment != .sandbox)
        #expect(payload.data?.status?.rawValue == 9)
        #expect(payload.data?.consumptionRequestReason?.rawValue == "NEW_REASON")

        let renewal = try decode(
            JWSRenewalInfo.self,
            """
            { "autoRenewStatus": 7, "expirationIntent": 42, "priceIncreaseStatus": 3, "offerType": 5,
              "renewalBillingPlanType": "QUARTERLY" }
            """)
        #expect(renewal.autoRenewStatus?.rawValue == 7)
        #expect(renewal.autoRenewStatus != .on)
        #expect(renewal.expirationIntent == ExpirationIntent(rawValue: 42))
        #expect(renewal.priceIncreaseStatus?.rawValue == 3)
        #expect(renewal.offerType?.rawValue == 5)
        #expect(renewal.renewalBillingPlanType?.rawValue == "QUARTERLY")

        let transaction = try decode(
            JWSTransaction.self,
            """
            { "type": "Bundle", "inAppOwnershipType": "ASSIGNED", "revocationType": "ASSIGNMENT_REVOKE",
              "revocationReason": 2, "transactionReason": "GIFT", "offerDiscountType": "HALF_OFF" }
            """)
        #expect(transaction.type?.rawValue == "Bundle")
        #expect(transaction.inAppOwnershipType?.rawValue == "ASSIGNED")
        #expect(transaction.revocationType?.rawValue == "ASSIGNMENT_REVOKE")
        #expect(transaction.revocationReason?.rawValue == 2)
        #expect(transaction.transactionReason?.rawValue == "GIFT")
        #expect(transaction.offerDiscountType?.rawValue == "HALF_OFF")

        let app = try decode(
            AppTransaction.self, #"{ "originalPlatform": "watchOS", "receiptType": "Staging" }"#)
        #expect(app.originalPlatform?.rawValue == "watchOS")
        #expect(app.receiptType?.description == "Staging")

        // An unknown value survives a round trip unchanged.
        #expect(try roundTrip(payload) == payload)
        #expect(try roundTrip(renewal).autoRenewStatus?.rawValue == 7)
    }

    @Test("Dates with fractional milliseconds decode")
    func decodesFractionalMilliseconds() throws {
        let transaction = try decode(
            JWSTransaction.self,
            #"{ "purchaseDate": 1698148900000.5, "signedDate": 1698148900123 }"#)
        let purchaseDate = try #require(transaction.purchaseDate)
        #expect(abs(purchaseDate.timeIntervalSince1970 - 1_698_148_900.0005) < 0.000_001)
        #expect(purchaseDate > ms(1_698_148_900_000))
        #expect(purchaseDate < ms(1_698_148_900_001))
        #expect(transaction.signedDate == ms(1_698_148_900_123))
    }

    @Test("Missing optional fields decode as nil")
    func decodesMissingFieldsAsNil() throws {
        #expect(try decode(JWSTransaction.self, "{}") == JWSTransaction())
        #expect(try decode(JWSRenewalInfo.self, "{}") == JWSRenewalInfo())
        #expect(try decode(AppTransaction.self, "{}") == AppTransaction())
        #expect(try decode(NotificationPayload.self, "{}") == NotificationPayload())
        #expect(try decode(RealtimeRequest.self, "{}") == RealtimeRequest())

        let sparse = try decode(
            JWSTransaction.self,
            #"{ "transactionId": "1000000000000001", "productId": "coins.100", "unknownField": [1, 2] }"#)
        #expect(sparse.transactionId == "1000000000000001")
        #expect(sparse.productId == "coins.100")
        #expect(sparse.appAccountToken == nil)
        #expect(sparse.appAccountTokenUUID == nil)
        #expect(sparse.expiresDate == nil)
        #expect(sparse.price == nil)
        #expect(sparse.revocationType == nil)
        #expect(sparse.advancedCommerceInfo == nil)

        let data = try decode(NotificationPayload.self, #"{ "notificationType": "TEST", "data": {} }"#)
        #expect(data.notificationType == .test)
        #expect(data.data == NotificationData())
        #expect(data.data?.signedTransactionInfo == nil)
    }

    @Test("A non-canonical appAccountToken is kept as sent")
    func keepsNonCanonicalAppAccountToken() throws {
        let transaction = try decode(JWSTransaction.self, #"{ "appAccountToken": "user-42" }"#)
        #expect(transaction.appAccountToken == "user-42")
        #expect(transaction.appAccountTokenUUID == nil)
    }

    @Test("Encoding then decoding gives an equal value")
    func roundTrips() throws {
        let transaction = try decode(JWSTransaction.self, transactionJSON)
        #expect(try roundTrip(transaction) == transaction)

        let renewal = try decode(JWSRenewalInfo.self, renewalInfoJSON)
        #expect(try roundTrip(renewal) == renewal)

        let app = try decode(AppTransaction.self, appTransactionJSON)
        #expect(try roundTrip(app) == app)

        let notification = try decode(NotificationPayload.self, consumptionRequestJSON)
        #expect(try roundTrip(notification) == notification)

        let built = NotificationPayload(
            notificationType: .subscribed,
            subtype: .initialBuy,
            notificationUUID: "5d3c1b7e-31a4-4f6b-8f53-0c2f2b0f4b7a",
            version: "2.0",
            signedDate: ms(1_698_148_900_000),
            summary: NotificationSummary(failedCount: 0, succeededCount: 12),
            externalPurchaseToken: ExternalPurchaseToken(
                externalPurchaseId: "token-1", tokenType: .acquisition),
            appData: AppData(appAppleId: 1, signedAppTransactionInfo: "a.b.c")
        )
        #expect(try roundTrip(built) == built)

        let request = RealtimeRequest(
            originalTransactionId: "1",
            appAppleId: 2,
            productId: "p",
            userLocale: "fr-FR",
            requestIdentifier: "r",
            signedDate: ms(1_698_148_900_000),
            environment: .sandbox
        )
        #expect(try roundTrip(request) == request)
    }

    @Test("Enums encode as their raw values and dates as milliseconds")
    func encodesWireFormat() throws {
        let transaction = JWSTransaction(
            offerType: .offerCode,
            purchaseDate: ms(1_698_148_900_000),
            type: .consumable,
            advancedCommerceInfo: AdvancedCommerceTransactionInfo(
                items: [AdvancedCommerceTransactionItem(sku: "sku.1")]
            )
        )
        let data = try AppStoreJSON.makeEncoder().encode(transaction)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["type"] as? String == "Consumable")
        #expect((object["offerType"] as? NSNumber)?.int32Value == 3)
        #expect((object["purchaseDate"] as? NSNumber)?.int64Value == 1_698_148_900_000)
        #expect(object["transactionId"] == nil)
        let commerce = try #require(object["advancedCommerceInfo"] as? [String: Any])
        let items = try #require(commerce["items"] as? [[String: Any]])
        #expect(items.first?["SKU"] as? String == "sku.1")
        #expect(items.first?["sku"] == nil)
    }

    @Test("A field of the wrong JSON type fails to decode")
    func rejectsWrongTypes() {
        #expect(throws: DecodingError.self) {
            try decode(JWSTransaction.self, #"{ "price": "9.99" }"#)
        }
        #expect(throws: DecodingError.self) {
            try decode(JWSRenewalInfo.self, #"{ "autoRenewStatus": "1" }"#)
        }
    }
}
