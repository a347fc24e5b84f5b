public import Foundation

/// Where the one-time UUIDs (nonces) of request signatures come from; injected so tests are
/// deterministic. Nonces are always written as lowercase UUID strings.
public struct RequestNonceGenerator: Sendable {
    private let makeUUID: @Sendable () -> UUID

    /// A generator calling `makeUUID` for each nonce.
    public init(_ makeUUID: @escaping @Sendable () -> UUID) {
        self.makeUUID = makeUUID
    }

    /// Random UUIDs (version 4) from the system.
    public static let system = RequestNonceGenerator { UUID() }

    /// The next nonce.
    public func next() -> UUID {
        makeUUID()
    }

    /// A UUID as App Store signatures write it: lowercase, with hyphens.
    static func format(_ uuid: UUID) -> String {
        uuid.uuidString.lowercased()
    }
}
