import Foundation
import GooglePlay
import StoreSimulator
import Testing

@Suite struct GooglePlaySimulationTests {
    @Test func renewalsGetNumberedOrderIdsUnderOneToken() async throws {
        try await PlayHarness.run { h in
            let purchase = try h.play.purchaseSubscription(
                packageName: PlayHarness.package, productId: "premium", basePlanId: "monthly",
                options: PlayPurchaseOptions(obfuscatedExternalAccountId: "account-1"))
            let base = try #require(purchase.orderId)
            #expect(base.wholeMatch(of: /GPA\.\d{4}-\d{4}-\d{4}-\d{5}/) != nil)
            try await h.acknowledgeSubscription(purchase.purchaseToken)
            h.play.advance(by: 31 * PlayHarness.day)
            h.play.advance(by: 28 * PlayHarness.day)
            let snapshot = try #require(h.play.subscription(purchase.purchaseToken))
            #expect(snapshot.orderIds == [base, base + "..0", base + "..1"])
            let answer = try await h.subscriptionV2(purchase.purchaseToken)
            #expect(answer.subscriptionState == .active)
            #expect(answer.latestOrderId == nil)
            #expect(answer.lineItems?.first?.latestSuccessfulOrderId == base + "..1")
            #expect(answer.acknowledgementState == .acknowledged)
            #expect(answer.externalAccountIdentifiers?.obfuscatedExternalAccountId == "account-1")
            let item = try #require(answer.lineItems?.first)
            #expect(item.productId == "premium")
            #expect(item.offerDetails?.basePlanId == "monthly")
            #expect(item.autoRenewingPlan?.autoRenewEnabled == true)
            #expect(item.expiryDate == h.date(PlayHarness.start, months: 3))
            #expect(h.subscriptionEvents(purchase.purchaseToken) == [4, 2, 2])
        }
    }

    @Test func failedBillingGoesThroughGraceAndHoldThenRecovers() async throws {
        try await PlayHarness.run { h in
            let purchase = try h.play.purchaseSubscription(packageName: PlayHarness.package, productId: "premium")
            let token = purchase.purchaseToken
            try await h.acknowledgeSubscription(token)
            try h.play.failBilling(token)
            h.play.advance(by: 31 * PlayHarness.day)
            var answer = try await h.subscriptionV2(token)
            #expect(answer.subscriptionState == .inGracePeriod)
            // Access until the end of the grace period (3 days by default).
            #expect(answer.lineItems?.first?.expiryDate == h.date(PlayHarness.start, months: 1, days: 3))
            h.play.advance(by: 3 * PlayHarness.day)
            answer = try await h.subscriptionV2(token)
            #expect(answer.subscriptionState == .onHold)
            let recovered = try h.play.recoverBilling(token)
            answer = try await h.subscriptionV2(token)
            #expect(answer.subscriptionState == .active)
            #expect(answer.lineItems?.first?.latestSuccessfulOrderId == recovered)
            #expect(recovered == (purchase.orderId ?? "") + "..0")
            #expect(h.subscriptionEvents(token) == [4, 6, 5, 1])
        }
    }

    @Test func holdThatEndsExpiresTheSubscription() async throws {
        try await PlayHarness.run { h in
            let token = try h.play.purchaseSubscription(packageName: PlayHarness.package, productId: "premium")
                .purchaseToken
            try await h.acknowledgeSubscription(token)
            try h.play.failBilling(token)
            h.play.advance(by: (31 + 3 + 30 + 1) * PlayHarness.day)
            let answer = try await h.subscriptionV2(token)
            #expect(answer.subscriptionState == .expired)
            #expect(answer.canceledStateContext?.systemInitiatedCancellation != nil)
            #expect(h.subscriptionEvents(token) == [4, 6, 5, 13])
        }
    }

    @Test func userCancellationKeepsAccessUntilExpiryThenExpires() async throws {
        try await PlayHarness.run { h in
            let token = try h.play.purchaseSubscription(packageName: PlayHarness.package, productId: "premium")
                .purchaseToken
            try await h.acknowledgeSubscription(token)
            h.play.advance(by: PlayHarness.day)
            try h.play.cancelSubscription(token)
            var answer = try await h.subscriptionV2(token)
            #expect(answer.subscriptionState == .canceled)
            #expect(answer.lineItems?.first?.autoRenewingPlan?.autoRenewEnabled == false)
            let cancelDate = answer.canceledStateContext?.userInitiatedCancellation?.cancelDate
            #expect(cancelDate == PlayHarness.start.addingTimeInterval(PlayHarness.day))
            h.play.advance(by: 31 * PlayHarness.day)
            answer = try await h.subscriptionV2(token)
            #expect(answer.subscriptionState == .expired)
            #expect(h.subscriptionEvents(token) == [4, 3, 13])
        }
    }

    @Test func restartUndoesACancellation() async throws {
        try await PlayHarness.run { h in
            let token = try h.play.purchaseSubscription(packageName: PlayHarness.package, productId: "premium")
                .purchaseToken
            try await h.acknowledgeSubscription(token)
            try h.play.cancelSubscription(token)
            try h.play.restartSubscription(token)
            let answer = try await h.subscriptionV2(token)
            #expect(answer.subscriptionState == .active)
            #expect(answer.canceledStateContext == nil)
            #expect(h.subscriptionEvents(token) == [4, 3, 7])
        }
    }

    @Test func upgradeMakesANewTokenLinkedToTheOldOne() async throws {
        try await PlayHarness.run { h in
            let old = try h.play.purchaseSubscription(packageName: PlayHarness.package, productId: "premium")
            try await h.acknowledgeSubscription(old.purchaseToken)
            h.play.advance(by: 10 * PlayHarness.day)
            let new = try h.play.changeSubscription(
                old.purchaseToken, toProductId: "gold", basePlanId: "monthly", replacementMode: .chargeProratedPrice)
            #expect(new.purchaseToken != old.purchaseToken)
            #expect(new.orderId != old.orderId)
            let answer = try await h.subscriptionV2(new.purchaseToken)
            #expect(answer.linkedPurchaseToken == old.purchaseToken)
            #expect(answer.subscriptionState == .active)
            #expect(answer.acknowledgementState == .pending)
            #expect(answer.lineItems?.first?.productId == "gold")
            #expect(answer.lineItems?.first?.autoRenewingPlan?.recurringPrice?.currencyCode == "EUR")
            let replaced = try await h.subscriptionV2(old.purchaseToken)
            #expect(replaced.subscriptionState == .expired)
            #expect(replaced.canceledStateContext?.replacementCancellation != nil)
            #expect(h.subscriptionEvents(new.purchaseToken) == [4])
            #expect(h.subscriptionEvents(old.purchaseToken) == [4])
        }
    }

    /// A prepaid plan is ACTIVE until it expires (CANCELED is for auto-renewing plans: the
    /// simulator said CANCELED); its top-up (`POST purchases/{token}/top-up`) is a new token linked
    /// to the old one, its period starting where the old one's ends, and the old one is replaced.
    @Test func aTopUpIsANewTokenThatExtendsThePrepaidPlan() async throws {
        try await PlayHarness.run { h in
            let old = try h.play.purchaseSubscription(
                packageName: PlayHarness.package, productId: "premium", basePlanId: "prepaid")
            let first = try await h.subscriptionV2(old.purchaseToken)
            #expect(first.subscriptionState == .active)
            #expect(first.lineItems?.first?.prepaidPlan != nil && first.lineItems?.first?.autoRenewingPlan == nil)
            let oldExpiry = try #require(first.lineItems?.first?.expiryDate)
            try await h.acknowledgeSubscription(old.purchaseToken)
            h.play.advance(by: 10 * PlayHarness.day)
            // Through the control API, which calls `topUp(_:basePlanId:)`.
            let control = h.endpoints.controlURL + "/googleplay"
            let toppedUp = try await playRequest(
                .POST, control + "/purchases/\(old.purchaseToken)/top-up", json: #"{"basePlanId": "prepaid"}"#)
            #expect(toppedUp.status == 200)
            let new = try toppedUp.decode(PlayPurchaseResult.self)
            let answer = try await h.subscriptionV2(new.purchaseToken)
            #expect(answer.linkedPurchaseToken == old.purchaseToken)
            #expect(answer.subscriptionState == .active)
            #expect(answer.lineItems?.first?.offerDetails?.basePlanId == "prepaid")
            let newExpiry = try #require(answer.lineItems?.first?.expiryDate)
            #expect(newExpiry > oldExpiry.addingTimeInterval(27 * PlayHarness.day))
            #expect(try await h.subscriptionV2(old.purchaseToken).subscriptionState == .expired)
            #expect(h.subscriptionEvents(new.purchaseToken) == [4])
            // An auto-renewing plan is not topped up.
            let monthly = try h.play.purchaseSubscription(packageName: PlayHarness.package, productId: "premium")
            #expect(throws: GooglePlaySimulationError.self) { try h.play.topUp(monthly.purchaseToken) }
        }
    }

    @Test func pauseAndResume() async throws {
        try await PlayHarness.run { h in
            let token = try h.play.purchaseSubscription(packageName: PlayHarness.package, productId: "premium")
                .purchaseToken
            try await h.acknowledgeSubscription(token)
            try h.play.pauseSubscription(token, cycles: 1)
            h.play.advance(by: 31 * PlayHarness.day)
            var answer = try await h.subscriptionV2(token)
            #expect(answer.subscriptionState == .paused)
            #expect(answer.pausedStateContext?.autoResumeDate == h.date(PlayHarness.start, months: 2))
            h.play.advance(by: 31 * PlayHarness.day)
            answer = try await h.subscriptionV2(token)
            #expect(answer.subscriptionState == .active)
            #expect(answer.lineItems?.first?.expiryDate == h.date(PlayHarness.start, months: 3))
            #expect(h.subscriptionEvents(token) == [4, 11, 10, 2])

            // A pause resumed early by the user.
            try h.play.pauseSubscription(token, cycles: 2)
            h.play.advance(by: 30 * PlayHarness.day)
            #expect(h.play.subscription(token)?.subscriptionState == "SUBSCRIPTION_STATE_PAUSED")
            try h.play.resumeSubscription(token)
            #expect(h.play.subscription(token)?.subscriptionState == "SUBSCRIPTION_STATE_ACTIVE")
            #expect(h.subscriptionEvents(token) == [4, 11, 10, 2, 11, 10, 1])
        }
    }

    @Test func pendingPurchasesCompleteOrCancel() async throws {
        try await PlayHarness.run { h in
            let pending = try h.play.purchaseSubscription(
                packageName: PlayHarness.package, productId: "premium", options: PlayPurchaseOptions(pending: true))
            #expect(pending.orderId == nil)
            var answer = try await h.subscriptionV2(pending.purchaseToken)
            #expect(answer.subscriptionState == .pending)
            #expect(answer.startTime == nil)
            // No acknowledgement deadline runs while pending.
            h.play.advance(by: 5 * PlayHarness.day)
            let completed = try h.play.completePendingPurchase(pending.purchaseToken)
            #expect(completed.orderId != nil)
            answer = try await h.subscriptionV2(pending.purchaseToken)
            #expect(answer.subscriptionState == .active)
            #expect(answer.startDate == PlayHarness.start.addingTimeInterval(5 * PlayHarness.day))
            #expect(h.subscriptionEvents(pending.purchaseToken) == [4])

            let canceled = try h.play.purchaseSubscription(
                packageName: PlayHarness.package, productId: "premium", options: PlayPurchaseOptions(pending: true))
            try h.play.cancelPendingPurchase(canceled.purchaseToken)
            answer = try await h.subscriptionV2(canceled.purchaseToken)
            #expect(answer.subscriptionState == .pendingPurchaseCanceled)
            #expect(h.subscriptionEvents(canceled.purchaseToken) == [20])

            let product = try h.play.purchaseProduct(
                packageName: PlayHarness.package, productId: "coins", options: PlayPurchaseOptions(pending: true))
            var v1 = try await h.get("purchases/products/coins/tokens/\(product.purchaseToken)")
                .decode(ProductPurchase.self)
            #expect(v1.purchaseState == .pending)
            try h.play.completePendingPurchase(product.purchaseToken)
            v1 = try await h.get("purchases/products/coins/tokens/\(product.purchaseToken)").decode(
                ProductPurchase.self)
            #expect(v1.purchaseState == .purchased)
            #expect(v1.orderId != nil)
        }
    }

    @Test func unacknowledgedPurchasesAreRefundedAfterThreeDays() async throws {
        try await PlayHarness.run { h in
            let acknowledged = try h.play.purchaseSubscription(packageName: PlayHarness.package, productId: "premium")
            let forgotten = try h.play.purchaseSubscription(packageName: PlayHarness.package, productId: "premium")
            try await h.acknowledgeSubscription(acknowledged.purchaseToken)
            let consumed = try h.play.purchaseProduct(packageName: PlayHarness.package, productId: "coins")
            let ackedProduct = try h.play.purchaseProduct(packageName: PlayHarness.package, productId: "lifetime")
            let forgottenProduct = try h.play.purchaseProduct(packageName: PlayHarness.package, productId: "lifetime")
            #expect(try await h.post("purchases/products/coins/tokens/\(consumed.purchaseToken):consume").status == 204)
            #expect(
                try await h.post("purchases/products/lifetime/tokens/\(ackedProduct.purchaseToken):acknowledge").status
                    == 204)

            h.play.advance(by: 3 * PlayHarness.day - 1)
            #expect(h.play.voidedPurchases.isEmpty)
            h.play.advance(by: 2)

            #expect(try await h.subscriptionV2(acknowledged.purchaseToken).subscriptionState == .active)
            #expect(try await h.subscriptionV2(forgotten.purchaseToken).subscriptionState == .expired)
            #expect(h.subscriptionEvents(forgotten.purchaseToken) == [4, 12])
            #expect(h.subscriptionEvents(acknowledged.purchaseToken) == [4])
            let voided = h.play.voidedPurchases
            #expect(Set(voided.map(\.purchaseToken)) == [forgotten.purchaseToken, forgottenProduct.purchaseToken])
            #expect(voided.allSatisfy { $0.voidedReason == .unacknowledgedPurchase && $0.voidedSource == .google })
            let product = try await h.get("purchases/products/lifetime/tokens/\(forgottenProduct.purchaseToken)")
                .decode(ProductPurchase.self)
            #expect(product.purchaseState == .canceled)
            let kept = try await h.get("purchases/products/lifetime/tokens/\(ackedProduct.purchaseToken)")
                .decode(ProductPurchase.self)
            #expect(kept.purchaseState == .purchased)
            #expect(kept.acknowledgementState == .acknowledged)
        }
    }

    @Test func voidedPurchasesListFiltersAndPages() async throws {
        try await PlayHarness.run { h in
            var productOrders: [String] = []
            for _ in 0..<3 {
                let purchase = try h.play.purchaseProduct(packageName: PlayHarness.package, productId: "lifetime")
                _ = try await h.post("purchases/products/lifetime/tokens/\(purchase.purchaseToken):acknowledge")
                productOrders.append(try #require(purchase.orderId))
            }
            let multi = try h.play.purchaseProduct(packageName: PlayHarness.package, productId: "coins", quantity: 5)
            _ = try await h.post("purchases/products/coins/tokens/\(multi.purchaseToken):acknowledge")
            let subscription = try h.play.purchaseSubscription(packageName: PlayHarness.package, productId: "premium")
            try await h.acknowledgeSubscription(subscription.purchaseToken)
            h.play.advance(by: PlayHarness.day)
            for order in productOrders {
                try h.play.refund(orderId: order, reason: .remorse)
                h.play.advance(by: 60)
            }
            try h.play.refund(orderId: try #require(multi.orderId), quantity: 2)
            try h.play.refund(orderId: try #require(subscription.orderId), revoke: true)

            let products = try await h.get("purchases/voidedpurchases").decode(VoidedPurchasesListResponse.self)
            #expect(products.voidedPurchases?.compactMap(\.orderId) == productOrders)
            #expect(products.tokenPagination?.nextPageToken == nil)

            let all = try await h.get("purchases/voidedpurchases?type=1").decode(VoidedPurchasesListResponse.self)
            #expect(all.voidedPurchases?.compactMap(\.orderId) == productOrders + [subscription.orderId ?? ""])

            let partial = try await h.get("purchases/voidedpurchases?type=1&includeQuantityBasedPartialRefund=true")
                .decode(VoidedPurchasesListResponse.self)
            #expect(partial.voidedPurchases?.count == 5)
            let multiEntry = partial.voidedPurchases?.first { $0.purchaseToken == multi.purchaseToken }
            #expect(multiEntry?.voidedQuantity == 2)
            let coins = try await h.get("purchases/products/coins/tokens/\(multi.purchaseToken)")
                .decode(ProductPurchase.self)
            #expect(coins.refundableQuantity == 3)
            #expect(coins.purchaseState == .purchased)
            let order = try await h.get("orders/\(multi.orderId ?? "")").decode(Order.self)
            #expect(order.state == .partiallyRefunded)

            // Pages of two, linked by tokens.
            var seen: [String] = []
            var path = "purchases/voidedpurchases?type=1&includeQuantityBasedPartialRefund=true&maxResults=2"
            var pages = 0
            while true {
                let page = try await h.get(path).decode(VoidedPurchasesListResponse.self)
                pages += 1
                seen += page.voidedPurchases?.compactMap(\.orderId) ?? []
                guard let next = page.tokenPagination?.nextPageToken else { break }
                path = "purchases/voidedpurchases?maxResults=2&token=\(next)"
            }
            #expect(pages == 3)
            #expect(seen == partial.voidedPurchases?.compactMap(\.orderId))

            // The time window filters on the voided time.
            let start = Int64((PlayHarness.start.timeIntervalSince1970 + PlayHarness.day + 30) * 1000)
            let windowed = try await h.get("purchases/voidedpurchases?startTime=\(start)")
                .decode(VoidedPurchasesListResponse.self)
            #expect(windowed.voidedPurchases?.compactMap(\.orderId) == Array(productOrders.dropFirst()))

            // The revoked subscription's RTDN.
            #expect(h.subscriptionEvents(subscription.purchaseToken) == [4, 12])
            let voidedNotifications = h.play.pushes.compactMap(\.notification.voidedPurchaseNotification)
            #expect(voidedNotifications.count == 5)
            #expect(voidedNotifications.filter { $0.refundType == .quantityBasedPartialRefund }.count == 1)
            #expect(voidedNotifications.filter { $0.productType == .subscription }.count == 1)
        }
    }

    @Test func longExpiredSubscriptionsAnswerGone() async throws {
        try await PlayHarness.run { h in
            let token = try h.play.purchaseSubscription(packageName: PlayHarness.package, productId: "premium")
                .purchaseToken
            try await h.acknowledgeSubscription(token)
            try h.play.cancelSubscription(token)
            h.play.advance(by: 31 * PlayHarness.day + 59 * PlayHarness.day)
            #expect(try await h.get("purchases/subscriptionsv2/tokens/\(token)").status == 200)
            h.play.advance(by: 2 * PlayHarness.day)
            let answer = try await h.get("purchases/subscriptionsv2/tokens/\(token)")
            #expect(answer.status == 410)
            let error = try answer.decode(GoogleAPIErrorBody.self).error
            #expect(error?.code == 410)
            #expect(
                error?.message
                    == "The subscription purchase is no longer available for query because it has been expired for too long."
            )
            let mapped = AndroidPublisherError(
                httpStatus: answer.status, body: answer.body, retryAfter: nil, attempts: 1)
            #expect(mapped.isGone)
        }
    }

    @Test func requestsWithoutAValidTokenAreRefused() async throws {
        try await PlayHarness.run { h in
            let token = try h.play.purchaseSubscription(packageName: PlayHarness.package, productId: "premium")
                .purchaseToken
            let path = h.url("purchases/subscriptionsv2/tokens/\(token)")
            for bearer in [nil, "ya29.forged"] {
                let answer = try await playRequest(.GET, path, bearer: bearer)
                #expect(answer.status == 401)
                let error = try answer.decode(GoogleAPIErrorBody.self).error
                #expect(error?.code == 401)
                #expect(error?.status == "UNAUTHENTICATED")
            }
            let issued = try await h.bearer
            #expect(try await playRequest(.GET, path, bearer: issued).status == 200)
            h.simulator.googleIdentity.revokeAllAccessTokens()
            #expect(try await playRequest(.GET, path, bearer: issued).status == 401)
        }
    }

    @Test func errorsAreGoogleShaped() async throws {
        try await PlayHarness.run { h in
            let unknown = try await h.get("purchases/subscriptionsv2/tokens/nosuchtoken")
            #expect(unknown.status == 404)
            #expect(try unknown.decode(GoogleAPIErrorBody.self).error?.errors?.first?.reason == "purchaseTokenNotFound")
            let product = try h.play.purchaseProduct(packageName: PlayHarness.package, productId: "coins")
            let mismatch = try await h.get("purchases/products/lifetime/tokens/\(product.purchaseToken)")
            #expect(mismatch.status == 400)
            let wrongPackage = try await playRequest(
                .GET,
                h.endpoints.baseURL
                    + "/androidpublisher/v3/applications/com.other/purchases/products/coins/tokens/x",
                bearer: try await h.bearer)
            #expect(wrongPackage.status == 404)
            #expect(try await h.post("purchases/products/coins/tokens/\(product.purchaseToken):consume").status == 204)
            let twice = try await h.post("purchases/products/coins/tokens/\(product.purchaseToken):consume")
            #expect(twice.status == 400)
            let method = try await h.post("purchases/products/coins/tokens/\(product.purchaseToken):explode")
            #expect(method.status == 404)
        }
    }

    @Test func everyAnswerDecodesWithTheGooglePlayModels() async throws {
        try await PlayHarness.run { h in
            let subscription = try h.play.purchaseSubscription(
                packageName: PlayHarness.package, productId: "premium",
                options: PlayPurchaseOptions(testPurchase: true, offerId: "intro"))
            let token = subscription.purchaseToken
            // An acknowledgement of an acknowledged purchase succeeds again.
            try await h.acknowledgeSubscription(token)
            try await h.acknowledgeSubscription(token)
            let v2 = try await h.subscriptionV2(token)
            #expect(v2.kind == "androidpublisher#subscriptionPurchaseV2")
            #expect(v2.testPurchase != nil)
            #expect(v2.lineItems?.first?.offerDetails?.offerId == "intro")
            #expect(v2.regionCode == "US")

            let deferred = try await h.post(
                "purchases/subscriptionsv2/tokens/\(token):defer",
                json: #"{"deferralContext":{"deferDuration":"604800s","etag":"\#(v2.etag ?? "")"}}"#)
            #expect(deferred.status == 200)
            let details = try deferred.decode(DeferSubscriptionPurchaseResponse.self).itemExpiryTimeDetails
            #expect(details?.first?.expiryDate == h.date(PlayHarness.start, months: 1, days: 7))
            #expect(try await h.subscriptionV2(token).lineItems?.first?.expiryDate == details?.first?.expiryDate)

            let canceled = try await h.post(
                "purchases/subscriptionsv2/tokens/\(token):cancel",
                json: #"{"cancellationContext":{"cancellationType":"DEVELOPER_REQUESTED_STOP_PAYMENTS"}}"#)
            #expect(canceled.status == 200)
            _ = try canceled.decode(CancelSubscriptionPurchaseResponse.self)
            #expect(try await h.subscriptionV2(token).canceledStateContext?.developerInitiatedCancellation != nil)

            let revoked = try await h.post(
                "purchases/subscriptionsv2/tokens/\(token):revoke", json: #"{"revocationContext":{"fullRefund":{}}}"#)
            #expect(revoked.status == 200)
            _ = try revoked.decode(RevokeSubscriptionPurchaseResponse.self)
            #expect(try await h.subscriptionV2(token).subscriptionState == .expired)
            #expect(h.subscriptionEvents(token) == [4, 9, 3, 12])

            let product = try h.play.purchaseProduct(
                packageName: PlayHarness.package, productId: "coins", quantity: 3,
                options: PlayPurchaseOptions(obfuscatedExternalProfileId: "profile-1"))
            let v1 = try await h.get("purchases/products/coins/tokens/\(product.purchaseToken)")
                .decode(ProductPurchase.self)
            #expect(v1.quantity == 3)
            #expect(v1.acknowledgementState == .yetToBeAcknowledged)
            #expect(v1.consumptionState == .yetToBeConsumed)
            #expect(v1.purchaseDate == PlayHarness.start)
            #expect(v1.obfuscatedExternalProfileId == "profile-1")
            let v2Product = try await h.get("purchases/productsv2/tokens/\(product.purchaseToken)")
                .decode(ProductPurchaseV2.self)
            #expect(v2Product.purchaseStateContext?.purchaseState == .purchased)
            #expect(v2Product.productLineItem?.first?.productOfferDetails?.quantity == 3)
            #expect(v2Product.orderId == product.orderId)

            let order = try await h.get("orders/\(product.orderId ?? "")").decode(Order.self)
            #expect(order.state == .processed)
            #expect(order.total?.units == 2)
            #expect(order.total?.nanos == 970_000_000)
            #expect(order.lineItems?.first?.oneTimePurchaseDetails?.quantity == 3)
            let subscriptionOrder = try await h.get("orders/\(subscription.orderId ?? "")").decode(Order.self)
            #expect(subscriptionOrder.state == .refunded)
            #expect(subscriptionOrder.lineItems?.first?.subscriptionDetails?.basePlanId == "monthly")
            #expect(try await h.get("orders/GPA.0000-0000-0000-00000").status == 404)

            let voided = try await h.get("purchases/voidedpurchases?type=1").decode(VoidedPurchasesListResponse.self)
            #expect(voided.voidedPurchases?.first?.voidedSource == .developer)
            #expect(voided.voidedPurchases?.first?.kind == "androidpublisher#voidedPurchase")
        }
    }

    @Test func apiFaultsApplyAndRequestsAreLoggedByQuotaBucket() async throws {
        try await PlayHarness.run { h in
            let token = try h.play.purchaseSubscription(packageName: PlayHarness.package, productId: "premium")
                .purchaseToken
            h.simulator.faults.add([APIFault(pathPrefix: "/androidpublisher/", status: 429, retryAfterSeconds: 7)])
            let limited = try await h.get("purchases/subscriptionsv2/tokens/\(token)")
            #expect(limited.status == 429)
            #expect(limited.headers["retry-after"] == "7")
            #expect(try await h.get("purchases/subscriptionsv2/tokens/\(token)").status == 200)
            _ = try await h.get("purchases/voidedpurchases")
            _ = try await h.get("orders/GPA.1")
            try await h.acknowledgeSubscription(token)
            let log = h.play.apiRequests
            #expect(log.map(\.status) == [429, 200, 200, 404, 204])
            #expect(
                log.map(\.bucket) == [
                    "purchases.subscriptionsv2", "purchases.subscriptionsv2", "purchases.voidedpurchases", "orders",
                    "purchases.subscriptions",
                ])
            #expect(log.first?.method == "GET")
            #expect(zip(log, log.dropFirst()).allSatisfy { $0.arrival <= $1.arrival })
        }
    }

    /// Arrivals are stamped by the simulator as it reads the request, whatever the client claims.
    @Test func theArrivalIsTheSimulatorsOwnStamp() async throws {
        try await PlayHarness.run { h in
            _ = try await h.get("purchases/voidedpurchases")  // the access token, fetched before timing
            let before = ContinuousClock.now
            let answer = try await h.get(
                "purchases/voidedpurchases", headers: [("X-Storekeeper-Simulator-Arrival", "0")])
            let after = ContinuousClock.now
            #expect(answer.status == 200)
            let arrival = try #require(h.play.apiRequests.last?.arrival)
            #expect(arrival >= before && arrival <= after, "a client's stamp was taken as the arrival")
        }
    }

    @Test func sameSeedGivesSameIds() async throws {
        var runs: [[String]] = []
        for _ in 0..<2 {
            try await PlayHarness.run(configuration: .init(seed: 42)) { h in
                let a = try h.play.purchaseSubscription(packageName: PlayHarness.package, productId: "premium")
                let b = try h.play.purchaseProduct(packageName: PlayHarness.package, productId: "coins")
                runs.append([a.purchaseToken, a.orderId ?? "", b.purchaseToken, b.orderId ?? ""])
            }
        }
        #expect(runs.count == 2)
        #expect(runs.first == runs.last)
    }
}
