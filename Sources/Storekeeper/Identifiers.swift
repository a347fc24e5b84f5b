/// The store a purchase was made in.
public enum Store: String, Sendable, Hashable, Codable, CaseIterable {
    case appStore = "app_store"
    case googlePlay = "google_play"
}

/// The app's own id for a customer: an opaque string the app chooses.
public struct CustomerID: StringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The longest id accepted; ids are keys, not documents.
    public static let maxLength = 256

    /// Why `rawValue` is not acceptable as a customer id, or nil when it is.
    public static func problem(with rawValue: String) -> String? {
        if rawValue.isEmpty { return "customer id is empty" }
        if rawValue.utf8.count > maxLength { return "customer id is longer than \(maxLength) bytes" }
        if rawValue.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return "customer id contains control characters"
        }
        return nil
    }
}

/// Names one store-side purchase: an App Store `originalTransactionId` or a Google Play
/// `purchaseToken`.
public struct PurchaseKey: Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
    public var store: Store
    /// `originalTransactionId` (App Store) or `purchaseToken` (Google Play).
    public var id: String

    public init(store: Store, id: String) {
        self.store = store
        self.id = id
    }

    public static func appStore(_ originalTransactionID: String) -> Self {
        Self(store: .appStore, id: originalTransactionID)
    }

    public static func googlePlay(_ purchaseToken: String) -> Self {
        Self(store: .googlePlay, id: purchaseToken)
    }

    public var description: String { "\(store.rawValue):\(id)" }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        (lhs.store.rawValue, lhs.id) < (rhs.store.rawValue, rhs.id)
    }
}
