import Foundation

/// `application/x-www-form-urlencoded` encoding and decoding (shared with the simulator).
package enum FormURLEncoding {
    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// Encodes the pairs in order, percent-encoding everything but unreserved characters.
    package static func encode(_ pairs: [(String, String)]) -> String {
        pairs.map { name, value in escape(name) + "=" + escape(value) }.joined(separator: "&")
    }

    /// Decodes a form body into its fields (the last occurrence of a name wins); nil if malformed.
    package static func decode(_ body: String) -> [String: String]? {
        var fields: [String: String] = [:]
        for pair in body.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard
                let name = parts[0].replacingOccurrences(of: "+", with: " ").removingPercentEncoding,
                let value = (parts.count > 1 ? String(parts[1]) : "").replacingOccurrences(of: "+", with: " ")
                    .removingPercentEncoding
            else { return nil }
            fields[name] = value
        }
        return fields
    }

    private static func escape(_ string: String) -> String {
        string.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }
}
