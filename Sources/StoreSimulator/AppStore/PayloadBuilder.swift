import AppStoreServer
import Foundation

/// Turns the simulator's records into the App Store's decoded payloads.
enum PayloadBuilder {
    static func transaction(_ record: TransactionRecord, app: SimulatedApp, signedDate: Date) -> JWSTransaction {
        JWSTransaction(
            appAccountToken: record.appAccountToken?.uuidString.lowercased(),
            appTransactionId: record.predatesAppTransactionId ? nil : record.appTransactionId,
            bundleId: record.bundleId,
            currency: record.currency,
            environment: record.environment,
            expiresDate: record.expiresDate,
            inAppOwnershipType: record.ownership,
            isUpgraded: record.isUpgraded ? true : nil,
            offerDiscountType: record.offer?.discountType,
            offerIdentifier: record.offer?.identifier,
            offerPeriod: record.offer?.period,
            offerType: record.offer?.type,
            originalPurchaseDate: record.originalPurchaseDate,
            originalTransactionId: record.originalTransactionId,
            price: record.price,
            productId: record.productId,
            purchaseDate: record.purchaseDate,
            quantity: 1,
            revocationDate: record.revocation?.date,
            revocationPercentage: record.revocation?.percentage,
            revocationReason: record.revocation?.reason,
            revocationType: record.revocation?.type,
            signedDate: signedDate,
            storefront: app.storefront,
            storefrontId: app.storefrontId,
            subscriptionGroupIdentifier: record.subscriptionGroupIdentifier,
            transactionId: record.transactionId,
            transactionReason: record.reason,
            type: record.type,
            webOrderLineItemId: record.webOrderLineItemId
        )
    }

    static func renewalInfo(
        _ subscription: SubscriptionRecord, renewalProduct: SimulatedProduct?, app: SimulatedApp, signedDate: Date
    ) -> JWSRenewalInfo {
        var expirationIntent: ExpirationIntent?
        var gracePeriodExpiresDate: Date?
        var inBillingRetry = false
        var renewalDate: Date? = subscription.expiresDate
        switch subscription.phase {
        case .active, .revoked:
            break
        case .gracePeriod(let expires, _):
            expirationIntent = .billingError
            gracePeriodExpiresDate = expires
            inBillingRetry = true
        case .billingRetry:
            expirationIntent = .billingError
            inBillingRetry = true
        case .expired(let intent):
            expirationIntent = intent
            renewalDate = nil
        }
        let offer = subscription.nextRenewalOffer
        return JWSRenewalInfo(
            appAccountToken: subscription.appAccountToken?.uuidString.lowercased(),
            appTransactionId: subscription.appTransactionId,
            autoRenewProductId: subscription.autoRenewProductId,
            autoRenewStatus: subscription.autoRenew ? .on : .off,
            currency: renewalProduct?.currency,
            eligibleWinBackOfferIds: subscription.eligibleWinBackOfferIds,
            environment: subscription.environment,
            expirationIntent: expirationIntent,
            gracePeriodExpiresDate: gracePeriodExpiresDate,
            isInBillingRetryPeriod: inBillingRetry,
            offerDiscountType: offer?.discountType,
            offerIdentifier: offer?.identifier,
            offerPeriod: offer?.period,
            offerType: offer?.type,
            originalTransactionId: subscription.originalTransactionId,
            priceIncreaseStatus: subscription.priceIncrease?.status,
            productId: subscription.productId,
            recentSubscriptionStartDate: subscription.recentSubscriptionStartDate,
            renewalDate: renewalDate,
            renewalPrice: offer?.price ?? renewalProduct?.price,
            signedDate: signedDate
        )
    }
}
