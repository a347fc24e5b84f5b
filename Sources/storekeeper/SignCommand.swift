import AppStoreServer
import ArgumentParser
import Foundation

/// `storekeeper sign`: signs what StoreKit needs from a server to apply an offer.
struct SignCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Sign promotional offers and introductory offer eligibility for StoreKit, printing JSON.",
        subcommands: [SignPromotionalOfferCommand.self, SignIntroEligibilityCommand.self]
    )
}

/// The key and identity options every `sign` subcommand takes.
struct SigningIdentityOptions: ParsableArguments {
    @Option(help: "The App Store Connect private key file (.p8: PKCS#8 PEM, P-256).")
    var key: String

    @Option(help: "The key's id in App Store Connect (the JWS kid).")
    var keyId: String

    @Option(help: "The issuer id of the key's team in App Store Connect; required for JWS signatures.")
    var issuerId: String?

    @Option(help: "The app's bundle id.")
    var bundleId: String

    /// The key, or a usage error saying why it cannot be used (never its contents).
    func loadKey() throws -> AppStoreSigningKey {
        do {
            return try AppStoreSigningKey(contentsOfFile: key, keyId: keyId)
        } catch {
            throw UsageError(error.description)
        }
    }

    /// A JWS signer; `--issuer-id` is required for it.
    func requestSigner(for use: String) throws -> AppStoreRequestSigner {
        guard let issuerId else { throw UsageError("--issuer-id is required for \(use)") }
        let key = try loadKey()
        return try orUsageError { () throws(RequestSigningError) in
            try AppStoreRequestSigner(key: key, issuerId: issuerId, bundleId: bundleId)
        }
    }
}

/// `storekeeper sign promotional-offer`.
struct SignPromotionalOfferCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "promotional-offer",
        abstract: "Sign a promotional offer: v1 (the original signature) or jws (StoreKit's compact JWS).",
        discussion: """
            v1 prints {"keyId", "nonce", "timestamp", "signature"} for SKPaymentDiscount or \
            Product.SubscriptionOffer.Signature; the offer is valid for 24 hours. jws prints \
            {"signature": "<compact JWS>"} for Product.PurchaseOption.promotionalOffer(_:compactJWS:).
            """
    )

    @OptionGroup var identity: SigningIdentityOptions

    @Option(help: "The signature's form.")
    var format: PromotionalOfferFormat

    @Option(help: "The subscription's product id.")
    var productId: String

    @Option(help: "The promotional offer id set up in App Store Connect.")
    var offerId: String

    @Option(help: "v1 only: the appAccountToken (UUID) the app passes with the purchase; signed in lowercase.")
    var appAccountToken: String?

    @Option(help: "jws only: a transaction id of the customer, or their appTransactionId (recommended).")
    var transactionId: String?

    func run() throws {
        switch format {
        case .v1:
            if transactionId != nil {
                throw UsageError("--transaction-id is only signed with --format jws; v1 has no transaction id")
            }
            let token = try appAccountToken.map(Self.parseUUID)
            let key = try identity.loadKey()
            let signature = try orUsageError { () throws(RequestSigningError) in
                try PromotionalOfferV1Signer(key: key, bundleId: identity.bundleId)
                    .sign(productId: productId, offerId: offerId, appAccountToken: token)
            }
            try printJSON(signature)
        case .jws:
            if appAccountToken != nil {
                throw UsageError(
                    "--app-account-token is only signed with --format v1; with a JWS the app passes it to the purchase")
            }
            let signer = try identity.requestSigner(for: "--format jws")
            let jws = try orUsageError { () throws(RequestSigningError) in
                try signer.promotionalOfferSignature(
                    productId: productId, offerIdentifier: offerId, transactionId: transactionId)
            }
            try printJSON(["signature": jws])
        }
    }

    static func parseUUID(_ text: String) throws -> UUID {
        guard let uuid = UUID(uuidString: text) else {
            throw UsageError(
                "--app-account-token takes a UUID such as 7e3fb20b-4cdb-47cc-936d-99d65f608138, not \"\(text)\"")
        }
        return uuid
    }
}

/// `storekeeper sign intro-eligibility`.
struct SignIntroEligibilityCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "intro-eligibility",
        abstract: "Sign introductory offer eligibility (compact JWS) for a customer and product.",
        discussion: """
            Prints {"signature": "<compact JWS>"} for \
            Product.PurchaseOption.introductoryOfferEligibility(compactJWS:).
            """
    )

    @OptionGroup var identity: SigningIdentityOptions

    @Option(help: "The subscription's product id.")
    var productId: String

    @Option(help: "A transaction id of the customer, or their appTransactionId.")
    var transactionId: String

    @Option(help: "Whether the customer may have the introductory offer: true or false.")
    var allowIntroductoryOffer: Bool = true

    func run() throws {
        let signer = try identity.requestSigner(for: "intro-eligibility")
        let jws = try orUsageError { () throws(RequestSigningError) in
            try signer.introductoryOfferEligibilitySignature(
                productId: productId, allowIntroductoryOffer: allowIntroductoryOffer, transactionId: transactionId)
        }
        try printJSON(["signature": jws])
    }
}

/// Runs `body`, turning a signing error (bad input; its text holds no key material) into a usage error.
func orUsageError<T>(_ body: () throws(RequestSigningError) -> T) throws -> T {
    do {
        return try body()
    } catch {
        throw UsageError(error.description)
    }
}

/// Prints `value` as pretty JSON with sorted keys on standard output.
func printJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}
