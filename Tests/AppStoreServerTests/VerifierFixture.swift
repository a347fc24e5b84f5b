import AppStoreServer
import Foundation
import StoreSimulator
import Synchronization

/// A fresh test chain, a signer over it, and a production-style transaction to sign.
struct VerifierFixture {
    static let bundleId = "com.storekeeper.tests"
    static let appAppleId: Int64 = 1_234_567_890
    /// A fixed signing date inside the default chain's validity.
    let signedDate: Date
    let chain: TestCertificateChain
    let signer: AppStoreSigner

    init(options: TestCertificateChain.Options? = nil, signedDate: Date = Date(timeIntervalSince1970: 1_760_000_000))
        throws
    {
        self.signedDate = signedDate
        self.chain = try TestCertificateChain(options: options ?? .init(now: signedDate))
        self.signer = AppStoreSigner(chain: chain)
    }

    func transaction(
        bundleId: String = Self.bundleId, environment: Environment = .production, signedDate: Date? = nil
    ) -> JWSTransaction {
        JWSTransaction(
            appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138",
            appTransactionId: "704289572311000001",
            bundleId: bundleId,
            currency: "USD",
            environment: environment,
            expiresDate: self.signedDate.addingTimeInterval(30 * 86_400),
            inAppOwnershipType: .purchased,
            offerDiscountType: nil,
            originalPurchaseDate: self.signedDate.addingTimeInterval(-90 * 86_400),
            originalTransactionId: "2000000123456789",
            price: 9_990,
            productId: "com.storekeeper.tests.monthly",
            purchaseDate: self.signedDate,
            quantity: 1,
            signedDate: signedDate ?? self.signedDate,
            storefront: "USA",
            storefrontId: "143441",
            subscriptionGroupIdentifier: "21000000",
            transactionId: "2000000987654321",
            transactionReason: .renewal,
            type: .autoRenewableSubscription,
            webOrderLineItemId: "2000000055555555"
        )
    }

    /// A verifier trusting this fixture's root, with production-style identity checks.
    func verifier(
        environment: Environment? = .production,
        bundleId: String? = Self.bundleId,
        appAppleId: Int64? = Self.appAppleId,
        roots: TrustedRoots? = nil,
        effectiveDate: SignedDataVerifier.EffectiveDate = .signingDate,
        clock: any WallClock = SystemWallClock()
    ) throws -> SignedDataVerifier {
        try SignedDataVerifier(
            configuration: .init(
                trustedRoots: roots ?? chain.trustedRoots,
                bundleId: bundleId,
                appAppleId: appAppleId,
                environment: environment,
                effectiveDate: effectiveDate
            ),
            clock: clock
        )
    }

    /// Payload JSON of a production transaction, as the App Store encodes it.
    func transactionJSON() throws -> Data {
        try AppStoreJSON.makeEncoder().encode(transaction())
    }
}

/// A clock tests move by hand.
final class ManualClock: WallClock {
    private let current: Mutex<Date>
    init(_ start: Date) { current = Mutex(start) }
    func now() -> Date { current.withLock { $0 } }
    func advance(by seconds: TimeInterval) { current.withLock { $0 += seconds } }
    func set(_ date: Date) { current.withLock { $0 = date } }
}
