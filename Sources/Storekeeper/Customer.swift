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
