import AppStoreServer
import Foundation
import Testing

/// Real App Store payloads (signed by Apple's production chain) and the vectors of Apple's own
/// library tests, verified with the pinned Apple root or the test CA allowed explicitly.
@Suite(.enabled(if: AppleVectors.available, AppleVectors.skipReason))
struct AppleVectorTests {
    func appleVerifier(for vector: AppleVectors.RealVector) throws -> SignedDataVerifier {
        let roots = try TrustedRoots(appleRootFiles: [AppleVectors.path("apple-real/AppleRootCA-G3.cer")])
        let environment = Environment(rawValue: vector.environment)
        // A production verifier needs the app's Apple id; transactions do not carry one, so any value serves there.
        return try SignedDataVerifier(
            configuration: .init(
                trustedRoots: roots, bundleId: vector.bundleId,
                appAppleId: vector.appAppleId ?? (environment == .production ? 1 : nil), environment: environment))
    }

    @Test(arguments: AppleVectors.realVectors)
    func realVectorVerifiesWithThePinnedRootAtItsSignedDate(_ vector: AppleVectors.RealVector) async throws {
        let token = try AppleVectors.text("apple-real/\(vector.file)")
        let verifier = try appleVerifier(for: vector)
        let signedDate = Date(timeIntervalSince1970: vector.signedDate / 1000)
        switch vector.kind {
        case "notification":
            let notification = try await verifier.verifyNotification(token)
            #expect(notification.payload.notificationType?.rawValue == vector.notificationType)
            #expect(notification.payload.subtype?.rawValue == vector.subtype)
            #expect(notification.payload.notificationUUID == vector.notificationUUID)
            #expect(notification.payload.signedDate == signedDate)
            let nested = vector.nestedJwsVerified ?? []
            #expect((notification.transaction != nil) == nested.contains("signedTransactionInfo"))
            #expect((notification.renewalInfo != nil) == nested.contains("signedRenewalInfo"))
            if let transaction = notification.transaction {
                #expect(transaction.bundleId == vector.bundleId)
                #expect(transaction.environment?.rawValue == vector.environment)
            }
        case "transaction":
            let transaction = try await verifier.verify(token, as: JWSTransaction.self)
            #expect(transaction.transactionId == vector.transactionId)
            #expect(transaction.originalTransactionId == vector.originalTransactionId)
            #expect(transaction.productId == vector.productId)
            #expect(transaction.signedDate == signedDate)
        case "renewalInfo":
            let renewalInfo = try await verifier.verify(token, as: JWSRenewalInfo.self)
            #expect(renewalInfo.originalTransactionId == vector.originalTransactionId)
            #expect(renewalInfo.productId == vector.productId)
            #expect(renewalInfo.autoRenewStatus == .on)
        default:
            Issue.record("unknown vector kind \(vector.kind)")
        }
    }

    @Test(arguments: AppleVectors.realVectors.filter { $0.kind == "transaction" })
    func realTransactionIsRefusedByAnotherAppsVerifier(_ vector: AppleVectors.RealVector) async throws {
        let roots = try TrustedRoots(appleRootFiles: [AppleVectors.path("apple-real/AppleRootCA-G3.cer")])
        let verifier = try SignedDataVerifier(
            configuration: .init(
                trustedRoots: roots, bundleId: "com.not.this.app", appAppleId: 1,
                environment: Environment(rawValue: vector.environment)))
        let token = try AppleVectors.text("apple-real/\(vector.file)")
        do {
            _ = try await verifier.verify(token, as: JWSTransaction.self)
            Issue.record("\(vector.file) verified for another app")
        } catch {
            #expect(error.reason == .bundleIdMismatch)
        }
    }

    @Test func realVectorsAreRefusedWhenOnlyTheTestRootIsTrusted() async throws {
        let verifier = try SignedDataVerifier(
            configuration: .init(
                trustedRoots: TrustedRoots(
                    appleRootFiles: [], allowedRootFiles: [AppleVectors.path("apple-library-test/testCA.der")])))
        for vector in AppleVectors.realVectors {
            let token = try AppleVectors.text("apple-real/\(vector.file)")
            do {
                _ = try await verifier.verify(token, as: JWSTransaction.self)
                Issue.record("\(vector.file) verified under the wrong root")
            } catch {
                #expect(error.reason == .untrustedChain, "\(vector.file): \(error)")
            }
        }
    }

    @Test func anotherRootIsRefusedAsAppleRoot() throws {
        #expect(throws: TrustedRoots.LoadError.self) {
            try TrustedRoots(appleRootFiles: [AppleVectors.path("apple-library-test/testCA.der")])
        }
        #expect(throws: TrustedRoots.LoadError.self) {
            try TrustedRoots(appleRootFiles: [AppleVectors.path("apple-real/intermediate-bdd4ed6e.cer")])
        }
        #expect(throws: TrustedRoots.LoadError.self) { try TrustedRoots(appleRootFiles: []) }
    }

    // MARK: Apple's library test vectors (test CA, bundle id com.example, Sandbox)

    func libraryTestVerifier() throws -> SignedDataVerifier {
        try SignedDataVerifier(
            configuration: .init(
                trustedRoots: TrustedRoots(
                    appleRootFiles: [], allowedRootFiles: [AppleVectors.path("apple-library-test/testCA.der")]),
                bundleId: "com.example", appAppleId: 1234, environment: .sandbox))
    }

    @Test func libraryTestPayloadsVerifyWithTheTestCAAllowed() async throws {
        let verifier = try libraryTestVerifier()
        let notification = try await verifier.verifyNotification(
            AppleVectors.text("apple-library-test/testNotification"))
        #expect(notification.payload.notificationType == .test)
        #expect(notification.payload.notificationUUID == "9ad56bd2-0bc6-42e0-af24-fd996d87a1e6")
        #expect(notification.payload.data?.appAppleId == 1234)
        let transaction = try await verifier.verify(
            AppleVectors.text("apple-library-test/transactionInfo"), as: JWSTransaction.self)
        #expect(transaction.bundleId == "com.example")
        let renewalInfo = try await verifier.verify(
            AppleVectors.text("apple-library-test/renewalInfo"), as: JWSRenewalInfo.self)
        #expect(renewalInfo.environment == .sandbox)
    }

    @Test func libraryTestWrongBundleIdFailsOnBundleId() async throws {
        let verifier = try libraryTestVerifier()
        let token = try AppleVectors.text("apple-library-test/wrongBundleId")
        do {
            _ = try await verifier.verifyNotification(token)
            Issue.record("wrongBundleId verified")
        } catch {
            #expect(error.reason == .bundleIdMismatch)
        }
    }

    @Test func libraryTestMissingX5CFailsOnFormat() async throws {
        let verifier = try libraryTestVerifier()
        let token = try AppleVectors.text("apple-library-test/missingX5CHeaderClaim")
        do {
            _ = try await verifier.verifyNotification(token)
            Issue.record("missingX5CHeaderClaim verified")
        } catch {
            #expect(error.reason == .malformedHeader)
        }
    }
}
