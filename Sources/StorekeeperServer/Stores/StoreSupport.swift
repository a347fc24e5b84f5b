import Foundation
public import Storekeeper
import StorekeeperStorage

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

/// Decodes a JSON request body (a route's, a store's submission), answering a specific 400 when it
/// doesn't fit.
func decodeJSONBody<Value: Decodable>(_ type: Value.Type, _ body: Data) throws(ServerError) -> Value {
    do {
        return try JSONDecoder().decode(Value.self, from: body)
    } catch {
        throw ServerError(.malformedBody, "the body is not the expected JSON: \(error)")
    }
}

/// How an adapter turns what its store's libraries throw into ``ServerError``: the store's own
/// errors by ``translateStoreError(_:)``; what every adapter meets alike (an error already
/// translated, storage, cancellation) here, once.
protocol TranslatesStoreErrors {
    /// The store's name in messages.
    static var storeName: String { get }
    /// The translation of one of the store's own errors; nil for any other error.
    static func translateStoreError(_ error: any Error) -> ServerError?
}

extension TranslatesStoreErrors {
    static func translate(_ error: any Error) -> ServerError {
        if let error = error as? ServerError { return error }
        if let translated = translateStoreError(error) { return translated }
        switch error {
        case let error as StorageError:
            return ServerError(.storageUnavailable, error.description, underlying: error)
        case is CancellationError:
            return ServerError(.storeUnavailable, "\(storeName): cancelled")
        default:
            return ServerError(.internal, "\(storeName): \(error)")
        }
    }

    /// Runs `body`, translating what it throws.
    func translating<Result>(_ body: () async throws -> Result) async throws(ServerError) -> Result {
        do {
            return try await body()
        } catch {
            throw Self.translate(error)
        }
    }
}

/// An adapter's configured app.
protocol ConfiguredStoreApp: Sendable {
    var id: AppID { get }
}

/// An adapter's configured apps, looked up by the id a payload or request names.
protocol ConfiguredStoreApps {
    associatedtype App: ConfiguredStoreApp
    var apps: [App] { get }
    /// The store's name in messages ("App Store").
    static var storeName: String { get }
    /// The request field that names an app ("bundleId").
    static var appField: String { get }
}

extension ConfiguredStoreApps {
    /// The app with this id.
    public func app(_ id: AppID) throws(ServerError) -> App {
        guard let app = apps.first(where: { $0.id == id }) else {
            throw ServerError(.unknownApp, "no configured \(Self.storeName) app has \(Self.appField) \(id)")
        }
        return app
    }

    /// The app a request names, or the only configured one when it names none; with several
    /// configured, a request that names none is refused rather than guessed.
    public func app(named id: AppID?) throws(ServerError) -> App {
        if let id { return try app(id) }
        guard apps.count == 1, let only = apps.first else {
            throw ServerError(
                apps.isEmpty ? .notConfigured : .appRequired,
                apps.isEmpty
                    ? "no \(Self.storeName) app is configured"
                    : "several \(Self.storeName) apps are configured; say which with \(Self.appField)")
        }
        return only
    }
}
