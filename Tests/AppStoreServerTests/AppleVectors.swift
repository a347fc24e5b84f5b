import Foundation
import Testing

/// The third-party test vectors in `../shared/vectors` beside the repository (see DESIGN.md). They
/// are not part of the repository; where the folder is absent the tests that need it are skipped.
enum AppleVectors {
    /// `STOREKEEPER_VECTORS`, or `../shared/vectors` next to the package root.
    static let directory: URL = {
        if let override = ProcessInfo.processInfo.environment["STOREKEEPER_VECTORS"] {
            return URL(fileURLWithPath: override)
        }
        return URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("shared/vectors")
    }()

    static var available: Bool {
        FileManager.default.fileExists(atPath: directory.appendingPathComponent("apple-real/index.json").path)
    }

    static let skipReason: Comment =
        "the third-party vectors are not in ../shared/vectors (a user's clone); set STOREKEEPER_VECTORS to run"

    static func path(_ relative: String) -> String {
        directory.appendingPathComponent(relative).path
    }

    static func text(_ relative: String) throws -> String {
        try String(contentsOfFile: path(relative), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

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
