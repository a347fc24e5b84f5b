/// Supplies the bearer token of App Store Server API requests (an ES256 JWT made from the app's
/// `.p8` key). Narrow on purpose: the token provider and tests conform to it.
public protocol AppStoreAPIAuthorization: Sendable {
    /// A token valid for at least the next request.
    func bearerToken() throws -> String
    /// Drops a cached token the App Store refused (401), so the next one is new.
    func invalidate()
}

extension AppStoreAPIAuthorization {
    public func invalidate() {}
}

extension AppStoreServerAPITokenProvider: AppStoreAPIAuthorization {
    /// The cached token, renewed shortly before it expires.
    public func bearerToken() throws -> String {
        try token().jwt
    }
}
