public import Foundation

/// The third-party test vectors in `../shared/vectors` beside the repository (see DESIGN.md). They
/// are not part of the repository; where the folder is absent, tests that need it are skipped with
/// ``skipReason``.
public enum ThirdPartyVectors {
    /// `STOREKEEPER_VECTORS`, or `../shared/vectors` next to the package root.
    public static let directory: URL = {
        if let override = ProcessInfo.processInfo.environment["STOREKEEPER_VECTORS"] {
            return URL(fileURLWithPath: override)
        }
        return URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("shared/vectors")
    }()

    /// Whether the vectors are there.
    public static var available: Bool {
        FileManager.default.fileExists(atPath: directory.appendingPathComponent("apple-real/index.json").path)
    }

    /// Why tests needing the vectors were skipped.
    public static let skipReason =
        "the third-party vectors are not in ../shared/vectors (a user's clone); set STOREKEEPER_VECTORS to run"

    /// The absolute path of a vector file.
    public static func path(_ relative: String) -> String {
        directory.appendingPathComponent(relative).path
    }

    /// A vector file's text, trimmed.
    public static func text(_ relative: String) throws -> String {
        try String(contentsOfFile: path(relative), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
