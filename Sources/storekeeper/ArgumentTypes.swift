public import ArgumentParser
import Logging
import Storekeeper

// Options whose values are a closed set are parsed into their types, so that a wrong value fails
// at parsing, with the allowed values listed in the error and in `--help`.

extension OwnershipPolicy: ExpressibleByArgument {}

/// `--log-level`: one of swift-log's levels, by its name. (A wrapper rather than a conformance of
/// `Logger.Level` itself, which belongs to neither this package nor ArgumentParser.)
struct LogLevelArgument: ExpressibleByArgument {
    var level: Logger.Level

    init(_ level: Logger.Level) { self.level = level }

    init?(argument: String) {
        guard let level = Logger.Level(rawValue: argument) else { return nil }
        self.level = level
    }

    static var allValueStrings: [String] { Logger.Level.allCases.map(\.rawValue) }

    var defaultValueDescription: String { level.rawValue }
}

/// `storekeeper sign promotional-offer --format`: the two signatures App Store apps accept.
enum PromotionalOfferFormat: String, CaseIterable, ExpressibleByArgument {
    /// The original signature (`Product.PurchaseOption.promotionalOffer(offerID:keyID:nonce:signature:timestamp:)`).
    case v1
    /// A compact JWS (`Product.PurchaseOption.promotionalOffer(_:compactJWS:)`).
    case jws
}
