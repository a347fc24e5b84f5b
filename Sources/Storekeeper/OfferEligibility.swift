/// Who may have an App Store subscription offer signed: rules over a customer's purchases and the
/// catalog's subscription groups (`CatalogProduct.group`), the same on every store.
public enum OfferEligibility {
    /// Who gets promotional offers.
    public enum PromotionalRule: String, Sendable, Hashable, Codable, CaseIterable {
        /// Current or lapsed subscribers of the offer's subscription group, as Apple intends them.
        case subscribersOfGroup = "subscribers-of-group"
        /// Anyone (the app decides whom to show the offer).
        case anyone
    }

    /// Whether the customer with `purchases` may have a promotional offer of `product` signed.
    public static func promotional(
        _ product: CatalogProduct, rule: PromotionalRule, purchases: [Purchase], catalog: Catalog
    ) -> Bool {
        switch rule {
        case .anyone: true
        case .subscribersOfGroup:
            purchases.contains { inGroup($0, of: product, acrossStores: false, catalog: catalog) }
        }
    }

    /// Whether the customer is still eligible for `product`'s introductory offer: they never
    /// subscribed to its group — on its store, or, `acrossStores`, on any store whose catalog puts
    /// a product in a group of the same name (one customer, two stores: what no store can decide
    /// alone).
    public static func introductory(
        _ product: CatalogProduct, acrossStores: Bool, purchases: [Purchase], catalog: Catalog
    ) -> Bool {
        !purchases.contains { inGroup($0, of: product, acrossStores: acrossStores, catalog: catalog) }
    }

    /// Whether `purchase` is a subscription in `product`'s group (the product itself without one).
    static func inGroup(_ purchase: Purchase, of product: CatalogProduct, acrossStores: Bool, catalog: Catalog)
        -> Bool
    {
        guard acrossStores || purchase.key.store == product.store,
            let bought = catalog.product(purchase.productID, in: purchase.key.store), bought.kind == .subscription,
            purchase.state != .pending
        else { return false }
        guard let group = product.group else { return bought.store == product.store && bought.id == product.id }
        return bought.group == group
    }
}
