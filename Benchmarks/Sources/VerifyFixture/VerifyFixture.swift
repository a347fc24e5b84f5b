public import AppStoreServer
public import Crypto
public import Foundation
import StoreSimulator
import X509

/// What both verification benchmarks measure: one production `signedTransactionInfo` signed by an
/// Apple-shaped test chain, a verifier configured the way a production server configures it
/// (trusted root, bundle id, app Apple id, environment `.production`, offline), and the raw ES256
/// inputs of the very same token — its signing input bytes, its signature and the leaf's key.
public struct VerifyFixture: Sendable {
    public static let bundleId = "com.storekeeper.benchmarks"
    public static let appAppleId: Int64 = 1_234_567_890
    /// The transaction id the signed payload carries; every verification is checked against it.
    public static let transactionId = "2000000987654321"
    /// The transaction id this fixture's token carries.
    public let expectedTransactionId: String

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
        let verifier = try SignedDataVerifier(
            configuration: .init(
                trustedRoots: chain.trustedRoots,
                bundleId: Self.bundleId,
                appAppleId: Self.appAppleId,
                environment: .production,
                effectiveDate: .signingDate,
                onlineChecks: false
            )
        )
        try self.init(
            token: token, verifier: verifier, transactionId: Self.transactionId, leafKey: chain.leafKey.publicKey)
    }

    /// A real `signedTransactionInfo` from `../shared/vectors/apple-real` (Apple's production chain,
    /// larger certificates than the test chain), verified with the pinned Apple root, bundle id and
    /// environment at its signedDate; nil where the vectors are absent.
    public static func realAppleVector() throws -> VerifyFixture? {
        let directory = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("shared/vectors/apple-real")
        let file = directory.appendingPathComponent("14-transaction-AutoRenewableSubscription.jws").path
        guard let data = FileManager.default.contents(atPath: file) else { return nil }
        let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let verifier = try SignedDataVerifier(
            configuration: .init(
                trustedRoots: TrustedRoots(appleRootFiles: [directory.appendingPathComponent("AppleRootCA-G3.cer").path]
                ),
                bundleId: "com.loki-project.loki-messenger",
                environment: .sandbox
            )
        )
        let header = try JSONSerialization.jsonObject(with: Base64URL.decode(token.split(separator: ".")[0]) ?? Data())
        guard let x5c = (header as? [String: Any])?["x5c"] as? [String], let leafDER = Data(base64Encoded: x5c[0])
        else {
            throw BenchmarkFailure("the real vector has no leaf certificate")
        }
        let leaf = try Certificate(derEncoded: Array(leafDER))
        guard let leafKey = P256.Signing.PublicKey(leaf.publicKey) else {
            throw BenchmarkFailure("the real vector's leaf key is not P-256")
        }
        return try VerifyFixture(token: token, verifier: verifier, transactionId: "2000001024998954", leafKey: leafKey)
    }

    init(token: String, verifier: SignedDataVerifier, transactionId: String, leafKey: P256.Signing.PublicKey) throws {
        self.token = token
        self.verifier = verifier
        self.expectedTransactionId = transactionId
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let rawSignature = Base64URL.decode(parts[2]) else {
            throw BenchmarkFailure("the signer produced a malformed token")
        }
        self.signingInput = Data(token[parts[0].startIndex..<parts[1].endIndex].utf8)
        self.signature = try P256.Signing.ECDSASignature(rawRepresentation: rawSignature)
        self.leafPublicKey = leafKey
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
        guard transaction.transactionId == expectedTransactionId else {
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
