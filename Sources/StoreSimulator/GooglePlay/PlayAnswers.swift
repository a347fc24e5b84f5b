import Foundation
import GooglePlay

/// Builds the Android Publisher API's resources from the simulation's records, with the models of
/// the `GooglePlay` module (int64 as strings, RFC 3339 times, enums as Google's strings).
enum PlayAnswers {
    /// The line item's `expiryTime`: the end of the grace period while in one, else the paid-through date.
    static func reportedExpiry(_ record: PlaySubscriptionRecord) -> Date {
        switch record.phase {
        case .gracePeriod(let until, _): until
        case .onHold(_, let failedAt): failedAt
        case .expired(let at): min(at, record.expiryTime)
        default: record.expiryTime
        }
    }

    static func time(_ date: Date) -> String { RFC3339.string(from: date) }

    static func money(_ micros: Int64, _ currency: String) -> Money {
        Money(
            currencyCode: currency, units: Int64String(micros / 1_000_000),
            nanos: Int((micros % 1_000_000) * 1_000))
    }

    static func subscriptionV2(_ record: PlaySubscriptionRecord, app: SimulatedPlayApp?, now: Date)
        -> SubscriptionPurchaseV2
    {
        var answer = SubscriptionPurchaseV2()
        answer.kind = "androidpublisher#subscriptionPurchaseV2"
        answer.regionCode = app?.regionCode ?? "US"
        answer.startTime = record.startTime.map(time)
        answer.subscriptionState = record.subscriptionState
        answer.linkedPurchaseToken = record.linkedPurchaseToken
        answer.acknowledgementState = record.acknowledged ? .acknowledged : .pending
        answer.testPurchase = record.options.testPurchase ? TestPurchase() : nil
        if record.options.obfuscatedExternalAccountId != nil || record.options.obfuscatedExternalProfileId != nil {
            answer.externalAccountIdentifiers = ExternalAccountIdentifiers(
                obfuscatedExternalAccountId: record.options.obfuscatedExternalAccountId,
                obfuscatedExternalProfileId: record.options.obfuscatedExternalProfileId)
        }
        switch record.phase {
        case .paused(let until):
            answer.pausedStateContext = PausedStateContext(autoResumeTime: time(until))
        case .gracePeriod:
            answer.inGracePeriodStateContext = InGracePeriodStateContext()
        case .onHold:
            answer.onHoldStateContext = OnHoldStateContext()
        default:
            break
        }
        if let cancellation = record.cancellation {
            var context = CanceledStateContext()
            switch cancellation {
            case .user(let at):
                context.userInitiatedCancellation = UserInitiatedCancellation(cancelTime: time(at))
            case .developer: context.developerInitiatedCancellation = DeveloperInitiatedCancellation()
            case .system: context.systemInitiatedCancellation = SystemInitiatedCancellation()
            case .replacement: context.replacementCancellation = ReplacementCancellation()
            }
            answer.canceledStateContext = context
        }
        var item = SubscriptionPurchaseLineItem()
        item.productId = record.productId
        if record.startTime != nil { item.expiryTime = time(reportedExpiry(record)) }
        if record.plan.autoRenewing {
            item.autoRenewingPlan = AutoRenewingPlan(
                autoRenewEnabled: record.autoRenew,
                recurringPrice: money(record.plan.price.priceMicros, record.plan.price.currency))
        } else {
            item.prepaidPlan = PrepaidPlan()
        }
        item.offerDetails = OfferDetails(basePlanId: record.basePlanId, offerId: record.options.offerId)
        // The latest order is only here: `SubscriptionPurchaseV2.latestOrderId` is no longer a field of
        // Google's resource.
        item.latestSuccessfulOrderId = record.latestOrderId
        answer.lineItems = [item]
        answer.etag = etag(record)
        return answer
    }

    /// A value that changes whenever the purchase changes.
    static func etag(_ record: PlaySubscriptionRecord) -> String {
        let parts = [
            record.subscriptionState.rawValue, String(record.expiryTime.timeIntervalSince1970),
            String(record.orderIds.count), String(record.autoRenew), String(record.acknowledged),
        ]
        let digest = parts.joined(separator: "|").utf8.reduce(UInt64(14_695_981_039_346_656_037)) {
            ($0 ^ UInt64($1)) &* 1_099_511_628_211
        }
        return String(digest, radix: 16)
    }

    static func productV1(_ record: PlayProductRecord, app: SimulatedPlayApp?) -> ProductPurchase {
        var answer = ProductPurchase()
        answer.kind = "androidpublisher#productPurchase"
        answer.purchaseTimeMillis = Int64String(milliseconds: record.purchaseTime)
        answer.purchaseState = record.canceled ? .canceled : record.pending ? .pending : .purchased
        answer.consumptionState = record.consumed ? .consumed : .yetToBeConsumed
        answer.developerPayload = record.developerPayload ?? ""
        answer.orderId = record.orderId
        answer.purchaseType = record.options.testPurchase ? .test : nil
        answer.acknowledgementState = record.acknowledged ? .acknowledged : .yetToBeAcknowledged
        answer.purchaseToken = record.purchaseToken
        answer.productId = record.productId
        answer.quantity = record.quantity
        answer.obfuscatedExternalAccountId = record.options.obfuscatedExternalAccountId
        answer.obfuscatedExternalProfileId = record.options.obfuscatedExternalProfileId
        answer.regionCode = app?.regionCode ?? "US"
        answer.refundableQuantity = record.quantity - record.refundedQuantity
        return answer
    }

    static func productV2(_ record: PlayProductRecord, app: SimulatedPlayApp?) -> ProductPurchaseV2 {
        var answer = ProductPurchaseV2()
        answer.kind = "androidpublisher#productPurchaseV2"
        var details = ProductOfferDetails()
        details.offerId = record.options.offerId
        details.purchaseOptionId = "default"
        details.quantity = record.quantity
        details.refundableQuantity = record.quantity - record.refundedQuantity
        details.consumptionState = record.consumed ? .consumed : .yetToBeConsumed
        answer.productLineItem = [ProductLineItem(productId: record.productId, productOfferDetails: details)]
        answer.purchaseStateContext = PurchaseStateContext(
            purchaseState: record.canceled ? .cancelled : record.pending ? .pending : .purchased)
        answer.testPurchaseContext = record.options.testPurchase ? TestPurchaseContext(fopType: .test) : nil
        answer.orderId = record.orderId
        answer.obfuscatedExternalAccountId = record.options.obfuscatedExternalAccountId
        answer.obfuscatedExternalProfileId = record.options.obfuscatedExternalProfileId
        answer.regionCode = app?.regionCode ?? "US"
        answer.purchaseCompletionTime = record.completionTime.map(time)
        answer.acknowledgementState = record.acknowledged ? .acknowledged : .pending
        return answer
    }

    static func voided(_ record: PlayVoidedRecord) -> VoidedPurchase {
        var answer = VoidedPurchase()
        answer.kind = "androidpublisher#voidedPurchase"
        answer.purchaseToken = record.purchaseToken
        answer.purchaseTimeMillis = Int64String(milliseconds: record.purchaseTime)
        answer.voidedTimeMillis = Int64String(milliseconds: record.voidedTime)
        answer.orderId = record.orderId
        answer.voidedSource = record.source
        answer.voidedReason = record.reason
        answer.voidedQuantity = record.voidedQuantity
        return answer
    }

    static func order(_ record: PlayOrderRecord, app: SimulatedPlayApp?, pending: Bool) -> Order {
        var answer = Order()
        answer.orderId = record.orderId
        answer.purchaseToken = record.purchaseToken
        answer.salesChannel = .inApp
        answer.createTime = time(record.createTime)
        answer.lastEventTime = time(record.refundTime ?? record.createTime)
        answer.buyerAddress = BuyerAddress(buyerCountry: app?.regionCode ?? "US")
        let currency = record.price.currency
        let total = record.price.priceMicros * Int64(record.quantity)
        answer.total = money(total, currency)
        answer.tax = money(0, currency)
        answer.orderDetails = OrderDetails(taxInclusive: true)
        var item = OrderLineItem()
        item.productId = record.productId
        item.productTitle = record.productId
        item.listingPrice = money(record.price.priceMicros, currency)
        item.total = answer.total
        item.tax = answer.tax
        if let basePlanId = record.basePlanId {
            item.subscriptionDetails = SubscriptionDetails(
                basePlanId: basePlanId, offerPhase: .base,
                offerPhaseDetails: OfferPhaseDetails(baseDetails: BaseDetails()),
                servicePeriodStartTime: record.servicePeriodStart.map(time),
                servicePeriodEndTime: record.servicePeriodEnd.map(time))
        } else {
            item.oneTimePurchaseDetails = OneTimePurchaseDetails(purchaseOptionId: "default", quantity: record.quantity)
        }
        answer.lineItems = [item]
        var history = OrderHistory(processedEvent: ProcessedEvent(eventTime: time(record.createTime)))
        if record.refundedQuantity >= record.quantity, let refundTime = record.refundTime {
            answer.state = .refunded
            history.refundEvent = RefundEvent(
                eventTime: time(refundTime),
                refundDetails: RefundDetails(total: answer.total, tax: answer.tax), refundReason: .other)
        } else if record.refundedQuantity > 0, let refundTime = record.refundTime {
            answer.state = .partiallyRefunded
            let refunded = money(record.price.priceMicros * Int64(record.refundedQuantity), currency)
            history.partialRefundEvents = [
                PartialRefundEvent(
                    createTime: time(refundTime), processTime: time(refundTime), state: .processedSuccessfully,
                    refundDetails: RefundDetails(total: refunded, tax: money(0, currency)))
            ]
        } else {
            answer.state = pending ? .pending : .processed
        }
        answer.orderHistory = history
        return answer
    }
}
