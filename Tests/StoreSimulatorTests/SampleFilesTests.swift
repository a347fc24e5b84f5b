import AppStoreServer
import Foundation
import StoreSimulator
import Testing

/// The committed files the README's quickstart verifies: a notification signed under a test chain,
/// and that chain's root. The chain's private keys are thrown away after signing.
///
/// `STOREKEEPER_REGENERATE_SAMPLES=1 swift test --filter SampleFilesTests` writes them anew.
@Suite struct SampleFilesTests {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Samples")
    static let bundleId = "com.example.storekeeper"
    static let signedDate = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01T00:00:00Z

    static func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    static func regenerate() throws {
        let chain = try TestCertificateChain(options: .init(now: signedDate, name: "Storekeeper Sample"))
        let signer = AppStoreSigner(chain: chain)
        let day: TimeInterval = 86_400
        let transaction = JWSTransaction(
            appAccountToken: "c9a4f3d2-1b7e-4a55-9f0e-2d6c8b1a7e43", appTransactionId: "705000000000000001",
            bundleId: bundleId, currency: "EUR", environment: .sandbox,
            expiresDate: signedDate.addingTimeInterval(30 * day), inAppOwnershipType: .purchased,
            originalPurchaseDate: signedDate.addingTimeInterval(-60 * day), originalTransactionId: "2000000700000001",
            price: 4_990, productId: "com.example.storekeeper.pro.monthly", purchaseDate: signedDate, quantity: 1,
            signedDate: signedDate, storefront: "DEU", storefrontId: "143443",
            subscriptionGroupIdentifier: "21500001", transactionId: "2000000700000003", transactionReason: .renewal,
            type: .autoRenewableSubscription, webOrderLineItemId: "2000000070000003")
        let renewalInfo = JWSRenewalInfo(
            appAccountToken: "c9a4f3d2-1b7e-4a55-9f0e-2d6c8b1a7e43",
            autoRenewProductId: "com.example.storekeeper.pro.monthly",
            autoRenewStatus: .on, currency: "EUR", environment: .sandbox,
            originalTransactionId: "2000000700000001", productId: "com.example.storekeeper.pro.monthly",
            recentSubscriptionStartDate: signedDate.addingTimeInterval(-60 * day),
            renewalDate: signedDate.addingTimeInterval(30 * day), renewalPrice: 4_990, signedDate: signedDate)
        let notification = NotificationPayload(
            notificationType: .didRenew, notificationUUID: "0b8e4c57-3a1f-4d2e-9c6b-5f7a8e9d0c1b", version: "2.0",
            signedDate: signedDate,
            data: NotificationData(
                appAppleId: 6_700_000_001, bundleId: bundleId, bundleVersion: "42", environment: .sandbox,
                signedRenewalInfo: try signer.sign(renewalInfo), signedTransactionInfo: try signer.sign(transaction),
                status: .active))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try chain.writeRoot(to: path("test-root.der"))
        try Data((try signer.sign(notification) + "\n").utf8).write(to: URL(fileURLWithPath: path("notification.jws")))
    }

    @Test func committedSampleVerifiesUnderItsRoot() async throws {
        if ProcessInfo.processInfo.environment["STOREKEEPER_REGENERATE_SAMPLES"] == "1" { try Self.regenerate() }
        let verifier = try SignedDataVerifier(
            configuration: .init(
                trustedRoots: TrustedRoots(appleRootFiles: [], allowedRootFiles: [Self.path("test-root.der")]),
                bundleId: Self.bundleId, environment: .sandbox))
        let token = try String(contentsOfFile: Self.path("notification.jws"), encoding: .utf8)
        let notification = try await verifier.verifyNotification(token)
        #expect(notification.payload.notificationType == .didRenew)
        #expect(notification.transaction?.transactionId == "2000000700000003")
        #expect(notification.renewalInfo?.autoRenewStatus == .on)
        #expect(notification.payload.signedDate == Self.signedDate)
    }
}
