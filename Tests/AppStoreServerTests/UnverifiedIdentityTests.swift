import AppStoreServer
import Foundation
import StoreCore
import Testing

/// What a notification claims about its app, read before verification to choose the verifier:
/// every shape names its app and environment in its own place.
@Suite struct UnverifiedIdentityTests {
    /// An unsigned compact JWS around `payload` (the peek never looks at the signature).
    func token(_ payload: String) -> String {
        "eyJhbGciOiJFUzI1NiJ9." + Base64URL.encode(Data(payload.utf8)) + ".c2ln"
    }

    func claims(_ payload: String) throws -> (bundle: String?, environment: Environment?) {
        let identity = try ClaimedAppIdentity.unverified(token(payload), as: NotificationPayload.self)
        return (identity.claimedBundleId, identity.claimedEnvironment)
    }

    @Test func eachNotificationShapeNamesItsAppAndEnvironment() throws {
        let data = try claims(#"{"notificationType":"DID_RENEW","data":{"bundleId":"com.a","environment":"Sandbox"}}"#)
        #expect(data.bundle == "com.a" && data.environment == .sandbox)
        let summary = try claims(
            #"{"notificationType":"RENEWAL_EXTENSION","subtype":"SUMMARY","summary":{"bundleId":"com.b","environment":"Sandbox","appAppleId":2}}"#
        )
        #expect(summary.bundle == "com.b" && summary.environment == .sandbox)
        let external = try claims(
            #"{"notificationType":"EXTERNAL_PURCHASE_TOKEN","externalPurchaseToken":{"externalPurchaseId":"SANDBOX_1","bundleId":"com.c","appAppleId":3}}"#
        )
        #expect(external.bundle == "com.c" && external.environment == .sandbox)
        let externalLive = try claims(
            #"{"notificationType":"EXTERNAL_PURCHASE_TOKEN","externalPurchaseToken":{"externalPurchaseId":"f1","bundleId":"com.c"}}"#
        )
        #expect(externalLive.environment == .production)
        let appData = try claims(
            #"{"notificationType":"RESCIND_CONSENT","appData":{"bundleId":"com.d","environment":"Production","appAppleId":4}}"#
        )
        #expect(appData.bundle == "com.d" && appData.environment == .production)
        let none = try claims(#"{"notificationType":"TEST"}"#)
        #expect(none.bundle == nil && none.environment == nil)
    }

    /// Routing reads only the identity fields; what it reads is what the whole payload, as
    /// verification decodes it, claims — every field, in every shape.
    @Test func theRoutingReadClaimsWhatTheWholePayloadClaims() throws {
        let payloads = [
            #"{"notificationType":"DID_RENEW","notificationUUID":"u","signedDate":1700000000000,"data":{"appAppleId":7,"bundleId":"com.a","bundleVersion":"1","environment":"Sandbox","signedTransactionInfo":"eyJ.x.y","signedRenewalInfo":"eyJ.z.w","status":1,"consumptionRequestReason":"UNINTENDED_PURCHASE"}}"#,
            #"{"notificationType":"DID_RENEW","data":{"bundleId":"com.a","environment":"Xcode"}}"#,
            #"{"notificationType":"RENEWAL_EXTENSION","subtype":"SUMMARY","summary":{"bundleId":"com.b","environment":"Production","appAppleId":2,"requestIdentifier":"r","succeededCount":3}}"#,
            #"{"notificationType":"EXTERNAL_PURCHASE_TOKEN","externalPurchaseToken":{"externalPurchaseId":"SANDBOX_1","bundleId":"com.c","appAppleId":3}}"#,
            #"{"notificationType":"EXTERNAL_PURCHASE_TOKEN","externalPurchaseToken":{"externalPurchaseId":"f1","bundleId":"com.c"}}"#,
            #"{"notificationType":"RESCIND_CONSENT","appData":{"bundleId":"com.d","environment":"Production","appAppleId":4}}"#,
            #"{"notificationType":"TEST","somethingNew":{"bundleId":"com.e"}}"#,
        ]
        for payload in payloads {
            let json = Data(payload.utf8)
            let whole = try AppStoreJSON.makeDecoder().decode(NotificationPayload.self, from: json).claimedIdentity
            #expect(try NotificationPayload.unverifiedClaim(fromJSON: json) == whole, "\(payload)")
        }
    }

    @Test func whatIsNotAJWSOrAPayloadIsRefusedAsVerificationWouldBe() {
        #expect(throws: SignedDataVerificationError.self) {
            _ = try ClaimedAppIdentity.unverified("not a jws", as: NotificationPayload.self)
        }
        #expect(throws: SignedDataVerificationError.self) {
            _ = try ClaimedAppIdentity.unverified(token("[1, 2]"), as: NotificationPayload.self)
        }
    }
}
