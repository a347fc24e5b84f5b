import Foundation
import StoreCore
import Storekeeper

/// The purchase history's cursor (`after`, `next`): the last purchase key a page listed, opaque
/// to clients (base64url of the store's raw value and the purchase id), so its form may change.
struct PurchaseCursor: Hashable {
    var key: PurchaseKey

    init(_ key: PurchaseKey) { self.key = key }

    /// Reads a cursor this endpoint gave, refusing anything else with `unknown-cursor`.
    init(text: String) throws(ServerError) {
        guard let data = Base64URL.decode(text), let decoded = String(data: data, encoding: .utf8),
            let colon = decoded.firstIndex(of: ":"),
            let store = Store(rawValue: String(decoded[..<colon])),
            !decoded[decoded.index(after: colon)...].isEmpty
        else {
            throw ServerError(
                .unknownCursor, "after must be a next cursor this endpoint gave, not '\(text.prefix(40))'")
        }
        key = PurchaseKey(store: store, id: String(decoded[decoded.index(after: colon)...]))
    }

    /// The key an `after` query parameter names (nil when absent), refused as ``init(text:)`` does.
    static func key(after raw: String?) throws(ServerError) -> PurchaseKey? {
        guard let raw else { return nil }
        return try PurchaseCursor(text: raw).key
    }

    var text: String { Base64URL.encode(Data("\(key.store.rawValue):\(key.id)".utf8)) }
}
