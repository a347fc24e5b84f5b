public import Foundation

extension AppStoreRequestSigner {
    /// An Advanced Commerce API in-app request (`aud` `advanced-commerce-api`), for StoreKit to send:
    /// claim `request`, the standard base64 of `requestJSON` exactly as given (UTF-8 JSON of a request
    /// such as `SubscriptionCreateRequest`). Input that is not a JSON object is refused.
    public func advancedCommerceInAppSignature(requestJSON: Data) throws(RequestSigningError) -> String {
        guard (try? JSONSerialization.jsonObject(with: requestJSON)) is [String: Any] else {
            throw RequestSigningError(.invalidInput, "the Advanced Commerce request is not a JSON object")
        }
        return try sign(
            audience: .advancedCommerce, featureClaims: ["request": .string(requestJSON.base64EncodedString())])
    }

    /// An Advanced Commerce API in-app request built from `request`, encoded as App Store JSON.
    public func advancedCommerceInAppSignature(request: some Encodable) throws(RequestSigningError) -> String {
        let json: Data
        do {
            json = try AppStoreJSON.makeEncoder().encode(request)
        } catch {
            throw RequestSigningError(.invalidInput, "the Advanced Commerce request could not be encoded as JSON")
        }
        return try advancedCommerceInAppSignature(requestJSON: json)
    }
}
