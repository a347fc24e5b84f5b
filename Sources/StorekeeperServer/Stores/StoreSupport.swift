public import Foundation
public import Storekeeper

extension Purchase {
    /// The purchase's app, which every store call for it needs; a purchase stored before apps
    /// were recorded (and not backfilled) is refused rather than sent to a guessed app.
    public func requireApp() throws(ServerError) -> AppID {
        guard let app else {
            throw ServerError(
                .purchaseAppUnknown,
                "purchase \(key) was stored before apps were recorded and its app is not known yet; "
                    + "its next notification or submission records it")
        }
        return app
    }
}

/// Decodes a store's submission body, answering a specific 400 when it doesn't fit.
func decodeSubmission<Value: Decodable>(_ type: Value.Type, _ body: Data) throws(ServerError) -> Value {
    do {
        return try JSONDecoder().decode(Value.self, from: body)
    } catch {
        throw ServerError(.malformedBody, "the body is not the expected JSON: \(error)")
    }
}
