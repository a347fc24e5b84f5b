public import Foundation

/// A customer: the app's id for its user, and the token Storekeeper issued for it, which the app
/// hands to the stores (StoreKit `appAccountToken`, Play Billing `obfuscatedAccountId`) so their
/// notifications can be tied back without the app being online.
public struct Customer: Sendable, Hashable, Codable {
    public var id: CustomerID
    public var appAccountToken: UUID
    public var createdAt: Date

    public init(id: CustomerID, appAccountToken: UUID, createdAt: Date) {
        self.id = id
        self.appAccountToken = appAccountToken
        self.createdAt = createdAt
    }
}

/// A customer's link to an app transaction (App Store `appTransactionId`: one per Apple Account per
/// app download), made when the app's backend submitted the app transaction StoreKit gave the app.
public struct AppTransactionLink: Sendable, Hashable, Codable {
    public var app: AppID
    public var appTransactionID: String
    public var environment: PurchaseEnvironment
    public var customerID: CustomerID
    public var linkedAt: Date

    public init(
        app: AppID, appTransactionID: String, environment: PurchaseEnvironment, customerID: CustomerID, linkedAt: Date
    ) {
        self.app = app
        self.appTransactionID = appTransactionID
        self.environment = environment
        self.customerID = customerID
        self.linkedAt = linkedAt
    }
}
