extension AppStoreRequestSigner {
    /// An introductory offer eligibility signature (`aud` `introductory-offer-eligibility`; StoreKit's
    /// `Product.PurchaseOption.introductoryOfferEligibility(compactJWS:)`): claims `productId`,
    /// `allowIntroductoryOffer` (a JSON boolean) and `transactionId` — any transaction id of the
    /// customer, or their `appTransactionId`.
    public func introductoryOfferEligibilitySignature(
        productId: String, allowIntroductoryOffer: Bool, transactionId: String
    ) throws(RequestSigningError) -> String {
        try RequestSigningError.requireNonEmpty(productId, "the product id")
        try RequestSigningError.requireNonEmpty(transactionId, "the transaction id")
        return try sign(
            audience: .introductoryOfferEligibility,
            featureClaims: [
                "productId": .string(productId),
                "allowIntroductoryOffer": .bool(allowIntroductoryOffer),
                "transactionId": .string(transactionId),
            ])
    }
}
