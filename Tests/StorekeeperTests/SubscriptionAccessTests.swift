import Foundation
import Storekeeper
import Testing

@Suite struct SubscriptionAccessTests {
    let expiry = Date(timeIntervalSince1970: 1_800_000_000)

    @Test(arguments: [SubscriptionState.active, .canceled])
    func paidStatesGrantAccessUntilExpiryOnly(state: SubscriptionState) {
        let access = SubscriptionAccess(state: state, expiresAt: expiry)
        #expect(access.grantsAccess(at: expiry.addingTimeInterval(-1)))
        #expect(!access.grantsAccess(at: expiry))
        #expect(access.accessEnds(at: expiry.addingTimeInterval(-1)) == expiry)
        #expect(!SubscriptionAccess(state: state, expiresAt: nil).grantsAccess(at: expiry))
    }

    @Test func gracePeriodGrantsAccessUntilGraceExpiry() {
        let graceEnd = expiry.addingTimeInterval(16 * 86_400)
        let access = SubscriptionAccess(state: .gracePeriod, expiresAt: expiry, gracePeriodExpiresAt: graceEnd)
        #expect(access.grantsAccess(at: expiry.addingTimeInterval(86_400)))
        #expect(!access.grantsAccess(at: graceEnd))
        #expect(access.accessEnds(at: expiry) == graceEnd)
    }

    @Test(arguments: [SubscriptionState.billingRetry, .paused, .pending, .expired, .revoked, .superseded])
    func otherStatesNeverGrantAccess(state: SubscriptionState) {
        let access = SubscriptionAccess(state: state, expiresAt: expiry, gracePeriodExpiresAt: expiry)
        #expect(!access.grantsAccess(at: expiry.addingTimeInterval(-86_400)))
        #expect(access.accessEnds(at: expiry.addingTimeInterval(-86_400)) == nil)
    }
}
