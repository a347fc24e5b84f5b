import Foundation
import Storekeeper
import TestSupport
import Testing

/// DESIGN.md, "Ordering": any number of re-deliveries in any order give what in-order single
/// delivery gives.
@Suite struct OrderingTests {
    let key = PurchaseKey.appStore("1000000000000001")
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    func fact(_ state: SubscriptionState, at offset: TimeInterval, hint: String? = nil) -> PurchaseFact {
        PurchaseFact(
            key: key, app: AppID("com.example.app"), productID: "monthly", kind: .subscription, environment: .sandbox,
            state: state,
            expiresAt: start.addingTimeInterval(offset + 30 * 86_400), autoRenew: state == .active, accountHint: hint,
            observedAt: start.addingTimeInterval(offset)
        )
    }

    /// Two facts of one instant with the same state (a renewal-date extension stated in the same
    /// millisecond as the purchase): the later expiry wins, whichever came first.
    @Test func aTieOfOneStateGoesToTheLaterExpiry() {
        let first = fact(.active, at: 100)
        var extended = fact(.active, at: 100)
        extended.expiresAt = first.expiresAt?.addingTimeInterval(5 * 86_400)
        #expect(Purchase(fact: extended).applying(first) == .stale)
        guard case .applied(let next) = Purchase(fact: first).applying(extended) else {
            Issue.record("the later expiry of the same instant was not applied")
            return
        }
        #expect(next.expiresAt == extended.expiresAt)
    }

    func applyAll(_ facts: [PurchaseFact]) -> Purchase? {
        var purchase: Purchase?
        for fact in facts {
            guard let current = purchase else {
                purchase = Purchase(fact: fact)
                continue
            }
            if case .applied(let next) = current.applying(fact) { purchase = next }
        }
        return purchase
    }

    @Test func olderFactsAreStaleAndTiesGoToTheLaterState() {
        let purchase = Purchase(fact: fact(.active, at: 100))
        #expect(purchase.applying(fact(.expired, at: 50)) == .stale)
        #expect(purchase.applying(fact(.active, at: 100)) == .stale)
        #expect(purchase.applying(fact(.expired, at: 100)) != .stale)
        #expect(Purchase(fact: fact(.expired, at: 100)).applying(fact(.active, at: 100)) == .stale)
        guard case .applied(let next) = purchase.applying(fact(.canceled, at: 101)) else {
            Issue.record("a newer fact was not applied")
            return
        }
        #expect(next.state == .canceled)
    }

    @Test func linkAndAccountHintSurviveLaterFactsThatLackThem() {
        var purchase = Purchase(fact: fact(.active, at: 0, hint: "token-a"))
        purchase.customerID = CustomerID("alice")
        guard case .applied(let next) = purchase.applying(fact(.billingRetry, at: 10)) else {
            Issue.record("a newer fact was not applied")
            return
        }
        #expect(next.customerID == CustomerID("alice"))
        #expect(next.accountHint == "token-a")
    }

    @Test func supersededIsFinal() {
        let replaced = Purchase(fact: fact(.active, at: 0)).superseding(at: start.addingTimeInterval(20))
        guard case .applied(let next) = replaced.applying(fact(.expired, at: 30)) else {
            Issue.record("a newer fact was not applied")
            return
        }
        #expect(next.state == .superseded)
        #expect(!next.grantsAccess(at: start))
    }

    /// Google shows a revoked subscription as expired: its answer to a notification processed after
    /// the revocation's keeps the purchase revoked. A store whose expiry means only expiry (Apple,
    /// where a reversed refund of an ended period reads expired) moves on.
    @Test func anExpiryThatMayMeanRevocationKeepsARevocation() {
        let revoked = Purchase(fact: fact(.revoked, at: 10))
        var google = fact(.expired, at: 20)
        google.expiredMayMeanRevoked = true
        guard case .applied(let kept) = revoked.applying(google) else {
            Issue.record("a newer fact was not applied")
            return
        }
        #expect(kept.state == .revoked)
        #expect(kept.observedAt == google.observedAt)
        var active = fact(.active, at: 30)
        active.expiredMayMeanRevoked = true
        guard case .applied(let resubscribed) = revoked.applying(active),
            case .applied(let expired) = revoked.applying(fact(.expired, at: 20))
        else {
            Issue.record("a newer fact was not applied")
            return
        }
        #expect(resubscribed.state == .active)
        #expect(expired.state == .expired)
    }

    @Test(arguments: 0..<200)
    func shuffledRepeatedDeliveryConvergesOnInOrderResult(seed: Int) {
        var random = SplitMix64(state: UInt64(seed))
        let states: [SubscriptionState] = [.active, .canceled, .gracePeriod, .billingRetry, .expired, .revoked]
        var offset: TimeInterval = 0
        let inOrder = (0..<Int.random(in: 1...12, using: &random)).map { _ -> PurchaseFact in
            offset += TimeInterval(Int.random(in: 1...86_400, using: &random))
            return fact(states.randomElement(using: &random) ?? .active, at: offset)
        }
        var deliveries = inOrder.flatMap { fact in Array(repeating: fact, count: Int.random(in: 1...3, using: &random))
        }
        deliveries.shuffle(using: &random)
        #expect(applyAll(deliveries) == applyAll(inOrder))
    }
}
