extension AppStoreRequestSigner {
    /// A promotional offer signature in JWS form (`aud` `promotional-offer`; StoreKit's
    /// `Product.PurchaseOption.promotionalOffer(_:compactJWS:)`): claims `productId`,
    /// `offerIdentifier` and, when given, `transactionId` — any transaction id of the customer, or
    /// their `appTransactionId`; optional but recommended by Apple (required for retention messages).
    public func promotionalOfferSignature(
        productId: String, offerIdentifier: String, transactionId: String? = nil
    ) throws(RequestSigningError) -> String {
        try RequestSigningError.requireNonEmpty(productId, "the product id")
        try RequestSigningError.requireNonEmpty(offerIdentifier, "the offer identifier")
        var claims: [String: JWSClaim] = [
            "productId": .string(productId),
            "offerIdentifier": .string(offerIdentifier),
        ]
        if let transactionId {
            try RequestSigningError.requireNonEmpty(transactionId, "the transaction id")
            claims["transactionId"] = .string(transactionId)
        }
        return try sign(audience: .promotionalOffer, featureClaims: claims)
    }
}
