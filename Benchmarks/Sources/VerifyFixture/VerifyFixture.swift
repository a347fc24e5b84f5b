public import AppStoreServer
public import Crypto
public import Foundation
import StoreSimulator

/// What both verification benchmarks measure: one production `signedTransactionInfo` signed by an
/// Apple-shaped test chain, a verifier configured the way a production server configures it
/// (trusted root, bundle id, app Apple id, environment `.production`, offline), and the raw ES256
/// inputs of the very same token — its signing input bytes, its signature and the leaf's key.
public struct VerifyFixture: Sendable {
    public static let bundleId = "com.storekeeper.benchmarks"
    public static let appAppleId: Int64 = 1_234_567_890
    /// The transaction id the signed payload carries; every verification is checked against it.
    public static let transactionId = "2000000987654321"

    /// The compact JWS, as the App Store sends it in `signedTransactionInfo`.
    public let token: String
    public let verifier: SignedDataVerifier
    /// `base64url(header) + "." + base64url(payload)`: the bytes ES256 signs.
    public let signingInput: Data
    /// The token's signature, parsed once.
    public let signature: P256.Signing.ECDSASignature
    /// The leaf certificate's key: the key the verifier checks the signature with.
    public let leafPublicKey: P256.Signing.PublicKey

    /// Signs a fresh transaction with a fresh chain. Call ``warmUp()`` before measuring.
    public init() throws {
        // A fixed signing date; the chain is valid around it, and `.signingDate` validates at it.
        let signedDate = Date(timeIntervalSince1970: 1_760_000_000)
        let chain = try TestCertificateChain(options: .init(now: signedDate))
        let token = try AppStoreSigner(chain: chain).sign(Self.transaction(signedDate: signedDate))
        self.token = token
        self.verifier = try SignedDataVerifier(
            configuration: .init(
                trustedRoots: chain.trustedRoots,
                bundleId: Self.bundleId,
                appAppleId: Self.appAppleId,
                environment: .production,
                effectiveDate: .signingDate,
                onlineChecks: false
            )
        )
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let rawSignature = Base64URL.decode(parts[2]) else {
            throw BenchmarkFailure("the signer produced a malformed token")
        }
        self.signingInput = Data(token[parts[0].startIndex..<parts[1].endIndex].utf8)
        self.signature = try P256.Signing.ECDSASignature(rawRepresentation: rawSignature)
        self.leafPublicKey = chain.leafKey.publicKey
    }

    /// A renewal of a monthly auto-renewable subscription, with the fields a production
    /// `JWSTransactionDecodedPayload` carries.
    public static func transaction(signedDate: Date) -> JWSTransaction {
        JWSTransaction(
            appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138",
            appTransactionId: "704289572311000001",
            bundleId: bundleId,
            currency: "USD",
            environment: .production,
            expiresDate: signedDate.addingTimeInterval(30 * 86_400),
            inAppOwnershipType: .purchased,
            originalPurchaseDate: signedDate.addingTimeInterval(-90 * 86_400),
            originalTransactionId: "2000000123456789",
            price: 9_990,
            productId: "com.storekeeper.benchmarks.monthly",
            purchaseDate: signedDate,
            quantity: 1,
            signedDate: signedDate,
            storefront: "USA",
            storefrontId: "143441",
            subscriptionGroupIdentifier: "21000000",
            transactionId: transactionId,
            transactionReason: .renewal,
            type: .autoRenewableSubscription,
            webOrderLineItemId: "2000000055555555"
        )
    }

    /// Verifies once, so the chain is validated and cached, and checks that it now is.
    public func warmUp() async throws {
        try await verifyOnce()
        try rawVerifyOnce()
        try await verifyOnce()
        let statistics = verifier.chainCacheStatistics
        guard statistics.entries == 1, statistics.misses == 1, statistics.hits >= 1 else {
            throw BenchmarkFailure("the chain cache did not warm: \(statistics)")
        }
    }

    /// One full verification of the token; fails unless it verifies to the signed transaction.
    public func verifyOnce() async throws {
        let transaction = try await verifier.verify(token, as: JWSTransaction.self)
        guard transaction.transactionId == Self.transactionId else {
            throw BenchmarkFailure("verified the wrong transaction: \(transaction.transactionId ?? "nil")")
        }
    }

    /// One raw ES256 verification (SHA-256 of the signing input + P-256 ECDSA verify) of the same token.
    public func rawVerifyOnce() throws {
        guard leafPublicKey.isValidSignature(signature, for: signingInput) else {
            throw BenchmarkFailure("the raw P-256 signature did not verify")
        }
    }
}

/// A benchmark that measured something other than a successful verification.
public struct BenchmarkFailure: Error, CustomStringConvertible {
    public var description: String

    public init(_ description: String) {
        self.description = description
    }
}
