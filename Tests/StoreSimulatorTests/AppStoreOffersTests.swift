import AppStoreServer
import Foundation
import StoreSimulator
import Testing

@Suite struct AppStoreOffersTests {
    @Test func payAsYouGoIntroductoryOfferCoversRenewalsUntilItsDurationEnds() async throws {
        try await Harness.run { h in
            let token = UUID()
            let purchase = try h.appStore.purchase(
                customer: "ivy", product: "pro.monthly", appAccountToken: token,
                offer: .payAsYouGo(price: 2_990, duration: "P2M"))
            let bought = try await h.next(after: 0)
            #expect(bought.payload.notificationType == .subscribed && bought.payload.subtype == .initialBuy)
            let first = try #require(bought.transaction)
            #expect(first.offerType == .introductory && first.offerDiscountType == .payAsYouGo)
            #expect(first.offerPeriod == "P2M" && first.price == 2_990)
            #expect(first.expiresDate == h.date(Harness.start, months: 1))
            #expect(bought.renewalInfo?.offerType == .introductory)
            #expect(bought.renewalInfo?.renewalPrice == 2_990)

            try h.appStore.advance(by: 31 * Harness.day)
            let second = try #require(try await h.next(after: 1).transaction)
            #expect(second.offerDiscountType == .payAsYouGo && second.price == 2_990)
            try h.appStore.advance(by: 31 * Harness.day)
            let third = try await h.next(after: 2)
            #expect(third.transaction?.offerType == nil && third.transaction?.price == 9_990)
            #expect(third.renewalInfo?.offerType == nil && third.renewalInfo?.renewalPrice == 9_990)
            #expect(purchase.originalTransactionId == third.transaction?.originalTransactionId)
        }
    }

    @Test func payUpFrontOfferIsOneTransactionForItsWholeDuration() async throws {
        try await Harness.run { h in
            try h.appStore.purchase(
                customer: "jay", product: "pro.monthly", offer: .payUpFront(price: 14_990, duration: "P3M"))
            let first = try #require(try await h.next(after: 0).transaction)
            #expect(first.offerDiscountType == .payUpFront && first.price == 14_990)
            #expect(first.expiresDate == h.date(Harness.start, months: 3))
        }
    }

    @Test func promotionalOfferOnTheCurrentProductAppliesAtTheNextRenewal() async throws {
        try await Harness.run { h in
            let token = UUID()
            let purchase = try h.appStore.purchase(customer: "kim", product: "pro.monthly", appAccountToken: token)
            let offer = SimulatedOffer.promotional("loyal50", discountType: .payAsYouGo, price: 4_990, period: "P1M")
            let redeemed = try h.appStore.redeemOffer(purchase.originalTransactionId, offer: offer)
            #expect(redeemed.transactionId == purchase.transactionId)

            let notification = try await h.next(after: 1)
            #expect(notification.payload.notificationType == .offerRedeemed)
            #expect(notification.payload.subtype == nil)
            #expect(notification.payload.data?.status == .active)
            #expect(notification.transaction?.transactionId == purchase.transactionId)
            let renewal = try #require(notification.renewalInfo)
            #expect(renewal.offerType == .promotional && renewal.offerIdentifier == "loyal50")
            #expect(renewal.offerDiscountType == .payAsYouGo && renewal.offerPeriod == "P1M")
            #expect(renewal.renewalPrice == 4_990)

            try h.appStore.advance(by: 31 * Harness.day)
            let renewed = try #require(try await h.next(after: 2).transaction)
            #expect(renewed.offerType == .promotional && renewed.offerIdentifier == "loyal50")
            #expect(renewed.price == 4_990)
            #expect(renewed.appAccountTokenUUID == token)
            try h.appStore.advance(by: 31 * Harness.day)
            let full = try #require(try await h.next(after: 3).transaction)
            #expect(full.offerType == nil && full.price == 9_990)
        }
    }

    @Test func promotionalOfferUpgradesNowAndDowngradesAtRenewal() async throws {
        try await Harness.run { h in
            let token = UUID()
            let purchase = try h.appStore.purchase(customer: "lou", product: "pro.monthly", appAccountToken: token)
            try h.appStore.advance(by: 5 * Harness.day)
            let upgrade = SimulatedOffer.promotional("max-half", discountType: .payUpFront, price: 9_990, period: "P1M")
            let result = try h.appStore.redeemOffer(
                purchase.originalTransactionId, offer: upgrade, product: "max.monthly")
            let upgraded = try await h.next(after: 1)
            #expect(upgraded.payload.notificationType == .offerRedeemed)
            #expect(upgraded.payload.subtype == .upgrade)
            let transaction = try #require(upgraded.transaction)
            #expect(
                transaction.transactionId == result.transactionId && transaction.transactionId != purchase.transactionId
            )
            #expect(transaction.productId == "max.monthly" && transaction.offerIdentifier == "max-half")
            #expect(transaction.offerType == .promotional && transaction.price == 9_990)
            #expect(transaction.appAccountTokenUUID == token)
            #expect(h.appStore.transaction(purchase.transactionId)?.isUpgraded == true)

            let downgrade = SimulatedOffer.promotional("stay", discountType: .payAsYouGo, price: 4_990, period: "P1M")
            try h.appStore.redeemOffer(purchase.originalTransactionId, offer: downgrade, product: "pro.monthly")
            let downgraded = try await h.next(after: 2)
            #expect(downgraded.payload.notificationType == .offerRedeemed)
            #expect(downgraded.payload.subtype == .downgrade)
            #expect(downgraded.transaction?.productId == "max.monthly")
            #expect(downgraded.renewalInfo?.autoRenewProductId == "pro.monthly")
            #expect(downgraded.renewalInfo?.offerIdentifier == "stay")

            try h.appStore.advance(by: 31 * Harness.day)
            let renewed = try #require(try await h.next(after: 3).transaction)
            #expect(renewed.productId == "pro.monthly" && renewed.offerIdentifier == "stay" && renewed.price == 4_990)
        }
    }

    @Test func offerCodeStartsASubscriptionWithoutAppAccountToken() async throws {
        try await Harness.run { h in
            h.appStore.addCustomer("max", appAccountToken: UUID())
            let offer = SimulatedOffer.offerCode("SPRING", discountType: .freeTrial, price: 0, period: "P1M")
            let result = try h.appStore.redeemOfferCode(customer: "max", product: "pro.monthly", offer: offer)
            let bought = try await h.next(after: 0)
            #expect(bought.payload.notificationType == .subscribed)
            #expect(bought.payload.subtype == .initialBuy)
            let transaction = try #require(bought.transaction)
            #expect(transaction.transactionId == result.transactionId)
            #expect(transaction.appAccountToken == nil)
            #expect(transaction.offerType == .offerCode && transaction.offerIdentifier == "SPRING")
            #expect(transaction.offerDiscountType == .freeTrial && transaction.offerPeriod == "P1M")
            #expect(transaction.price == 0)
            #expect(bought.renewalInfo?.appAccountToken == nil)

            // A second code while subscribed: OFFER_REDEEMED, still without a token.
            let again = SimulatedOffer.offerCode("SUMMER", discountType: .payAsYouGo, price: 4_990, period: "P1M")
            try h.appStore.redeemOfferCode(customer: "max", product: "pro.monthly", offer: again)
            let redeemed = try await h.next(after: 1)
            #expect(redeemed.payload.notificationType == .offerRedeemed && redeemed.payload.subtype == nil)
            #expect(redeemed.renewalInfo?.offerType == .offerCode && redeemed.renewalInfo?.offerIdentifier == "SUMMER")
        }
    }

    @Test func winBackOfferResubscribesALapsedSubscriber() async throws {
        try await Harness.run { h in
            let purchase = try h.appStore.purchase(customer: "ned", product: "pro.monthly", appAccountToken: UUID())
            try h.appStore.setAutoRenew(purchase.originalTransactionId, on: false)
            try h.appStore.advance(by: 31 * Harness.day)
            let offer = SimulatedOffer.winBack("come-back", discountType: .payUpFront, price: 4_990, period: "P2M")
            let result = try h.appStore.redeemOffer(purchase.originalTransactionId, offer: offer)
            #expect(result.originalTransactionId == purchase.originalTransactionId)
            let back = try await h.next(after: 3)
            #expect(back.payload.notificationType == .subscribed && back.payload.subtype == .resubscribe)
            let transaction = try #require(back.transaction)
            #expect(transaction.offerType == .winBack && transaction.offerIdentifier == "come-back")
            #expect(transaction.expiresDate == h.date(h.simulator.clock.now(), months: 2))
        }
    }

    @Test func consentedPriceIncreaseIsChargedAtRenewal() async throws {
        try await Harness.run { h in
            let purchase = try h.appStore.purchase(customer: "olga", product: "pro.monthly")
            let affected = try h.appStore.requestPriceIncrease(
                product: "pro.monthly", newPrice: 12_990, requiresConsent: true)
            #expect(affected == [purchase.originalTransactionId])
            let pending = try await h.next(after: 1)
            #expect(pending.payload.notificationType == .priceIncrease)
            #expect(pending.payload.subtype == .pending)
            #expect(pending.renewalInfo?.priceIncreaseStatus == .notResponded)
            #expect(pending.renewalInfo?.renewalPrice == 12_990)

            try h.appStore.acceptPriceIncrease(purchase.originalTransactionId)
            let accepted = try await h.next(after: 2)
            #expect(accepted.payload.notificationType == .priceIncrease)
            #expect(accepted.payload.subtype == .accepted)
            #expect(accepted.renewalInfo?.priceIncreaseStatus == .accepted)

            try h.appStore.advance(by: 31 * Harness.day)
            let renewed = try await h.next(after: 3)
            #expect(renewed.payload.notificationType == .didRenew)
            #expect(renewed.transaction?.price == 12_990)
            #expect(renewed.renewalInfo?.priceIncreaseStatus == nil)
        }
    }

    @Test func unansweredPriceIncreaseExpiresTheSubscription() async throws {
        try await Harness.run { h in
            let purchase = try h.appStore.purchase(customer: "pam", product: "pro.monthly")
            try h.appStore.requestPriceIncrease(product: "pro.monthly", newPrice: 12_990, requiresConsent: true)
            try h.appStore.advance(by: 31 * Harness.day)
            let events = try await h.received(from: 0)
            #expect(events.map(\.payload.notificationType) == [.subscribed, .priceIncrease, .expired])
            let expired = try #require(events.last)
            #expect(expired.payload.subtype == .priceIncrease)
            #expect(expired.payload.data?.status == .expired)
            #expect(expired.renewalInfo?.expirationIntent == .didNotConsentToPriceIncrease)
            #expect(h.appStore.subscription(purchase.originalTransactionId)?.status == .expired)
        }
    }

    @Test func priceIncreaseWithoutConsentIsAcceptedAtOnce() async throws {
        try await Harness.run { h in
            try h.appStore.purchase(customer: "quinn", product: "pro.monthly")
            try h.appStore.requestPriceIncrease(product: "pro.monthly", newPrice: 10_990, requiresConsent: false)
            let notice = try await h.next(after: 1)
            #expect(notice.payload.subtype == .accepted)
            #expect(notice.renewalInfo?.priceIncreaseStatus == .accepted)
            try h.appStore.advance(by: 31 * Harness.day)
            #expect(try await h.next(after: 2).transaction?.price == 10_990)
        }
    }
}
