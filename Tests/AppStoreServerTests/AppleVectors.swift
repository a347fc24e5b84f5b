import Foundation
import TestSupport
import Testing

/// The described Apple vectors of `../shared/vectors/apple-real` (see ``ThirdPartyVectors``).
enum AppleVectors {
    static var available: Bool { ThirdPartyVectors.available }
    static let skipReason = Comment(rawValue: ThirdPartyVectors.skipReason)
    static func path(_ relative: String) -> String { ThirdPartyVectors.path(relative) }
    static func text(_ relative: String) throws -> String { try ThirdPartyVectors.text(relative) }

    /// One described vector of `apple-real/index.json`.
    struct RealVector: Decodable, Sendable, CustomTestStringConvertible {
        var file: String
        var kind: String
        var notificationType: String?
        var subtype: String?
        var notificationUUID: String?
        var environment: String
        var bundleId: String?
        var appAppleId: Int64?
        var signedDate: Double
        var transactionId: String?
        var productId: String?
        var originalTransactionId: String?
        var nestedJwsVerified: [String]?

        var testDescription: String { file }
    }

    static let realVectors: [RealVector] = {
        guard available,
            let data = FileManager.default.contents(atPath: path("apple-real/index.json")),
            let vectors = try? JSONDecoder().decode([RealVector].self, from: data)
        else { return [] }
        return vectors
    }()
}
