import Foundation
import Storekeeper
import StorekeeperDemo
import StorekeeperStorage
import Synchronization
import Testing

/// The demo's story end to end, as `storekeeper demo` tells it: every customer view after every
/// step, for both stores, on both storage backends.
@Suite(.serialized) struct DemoStoryTests {
    /// Runs the story and returns its lines.
    func tell(on backend: StorageBackend, policy: OwnershipPolicy = .keep) async throws -> [DemoStory.Line] {
        let lines = Mutex<[DemoStory.Line]>([])
        // The demo's App Store app has a 3-day grace period.
        try await ServerHarness.run(on: backend, policy: policy, appStoreGracePeriodDays: 3) { h in
            let story = DemoStory(deployment: h.deployment) { line in lines.withLock { $0.append(line) } }
            try await story.run()
        }
        return lines.withLock { $0 }
    }

    /// The named customer's views, in order.
    func views(_ lines: [DemoStory.Line], of customer: String) -> [CustomerView] {
        lines.compactMap { line in
            guard case .customer(let id, let view) = line, id == customer else { return nil }
            return view
        }
    }

    func states(_ views: [CustomerView], _ entitlement: String) -> [String] {
        views.map { view in
            guard let found = view.entitlements.first(where: { $0.name == entitlement }) else { return "-" }
            return (found.active ? "+" : "") + found.state.rawValue
        }
    }

    /// The App Store customer's `pro` after each step: the renewal's notification is lost
    /// ("active", but its period is over), then caught up; the refund requests come after expiry.
    static let alicePro =
        ["+active", "active", "+active", "+grace_period", "+active", "+active", "+canceled"]
        + Array(repeating: "expired", count: 9)
    /// Her coins: a pack refunded; then 80 of a pack spent and its refund declined; 20 of the next
    /// one spent and 80 % of it refunded.
    static let aliceCoins = [0, 0, 0, 0, 0, 0, 0, 0, 100, 0, 100, 20, 20, 120, 80, 0]
    /// The Google Play customer's `pro` after each step (the same lost renewal, caught up).
    static let ginaPro = [
        "+active", "active", "+active", "+grace_period", "+active", "+active", "+canceled", "expired", "expired",
        "expired",
    ]
    static let ginaCoins = [0, 0, 0, 0, 0, 0, 0, 0, 30, 20]

    @Test(arguments: StorageBackend.available) func everyStepEndsAsTheStorySays(_ backend: StorageBackend) async throws
    {
        let lines = try await tell(on: backend)
        let alice = views(lines, of: "alice")
        #expect(states(alice, "pro") == Self.alicePro)
        #expect(
            states(alice, "max") == ["-", "-", "-", "-", "-", "+active", "+canceled"]
                + Array(repeating: "expired", count: 9))
        #expect(alice.map { $0.balances["coins"] ?? 0 } == Self.aliceCoins)
        let answers = lines.compactMap { line -> String? in
            guard case .consumptionAnswer(let text) = line else { return nil }
            return text
        }
        #expect(
            answers == [
                "CONSUMPTION_REQUEST answered: deliveryStatus DELIVERED, consumptionPercentage 80000 (80.0% consumed), refundPreference DECLINE",
                "CONSUMPTION_REQUEST answered: deliveryStatus DELIVERED, consumptionPercentage 20000 (20.0% consumed), refundPreference GRANT_PRORATED",
            ])
        let gina = views(lines, of: "gina")
        #expect(states(gina, "pro") == Self.ginaPro)
        #expect(
            states(gina, "max") == ["-", "-", "-", "-", "-", "+active", "+canceled", "expired", "expired", "expired"])
        #expect(gina.map { $0.balances["coins"] ?? 0 } == Self.ginaCoins)

        // Keep: the second accounts are refused and get nothing.
        let refusals = lines.compactMap { line -> String? in
            guard case .refusal(let text) = line else { return nil }
            return text
        }
        #expect(refusals.count == 2)
        #expect(refusals.allSatisfy { $0.hasPrefix("409 ownership-conflict") })
        #expect(views(lines, of: "alex").allSatisfy { $0.entitlements.isEmpty })
        #expect(views(lines, of: "george").allSatisfy { $0.entitlements.isEmpty })

        // Every store event is reported, in order; the two lost on the way were caught up.
        let events = lines.compactMap { line -> String? in
            guard case .storeEvent(_, let event) = line else { return nil }
            return event
        }
        #expect(
            events.filter { $0.hasSuffix(DemoStory.lost) } == [
                "DID_RENEW" + DemoStory.lost, "SUBSCRIPTION_RENEWED" + DemoStory.lost,
            ])
        let caughtUp = lines.compactMap { line -> String? in
            guard case .catchUp(let text) = line else { return nil }
            return text
        }
        #expect(
            caughtUp == [
                "1 notification from Apple's notification history", "1 overdue subscription asked of its store",
            ])
        #expect(events.filter { $0.hasPrefix("CONSUMPTION_REQUEST") }.count == 2)
        #expect(events.contains("REFUND_DECLINED"))
        #expect(events.contains("  revocationType REFUND_PRORATED 80%"))
        #expect(events.first == "SUBSCRIBED INITIAL_BUY")
        #expect(events.contains("DID_FAIL_TO_RENEW GRACE_PERIOD"))
        #expect(events.contains("SUBSCRIPTION_IN_GRACE_PERIOD"))
        #expect(events.last == "VOIDED_PURCHASE")
    }

    @Test func underTransferTheSecondAccountTakesThePurchase() async throws {
        let lines = try await tell(on: .sqlite, policy: .transfer)
        #expect(views(lines, of: "alex").last?.entitlements.contains { $0.name == "max" && $0.active } == true)
        #expect(views(lines, of: "george").last?.entitlements.contains { $0.name == "max" && $0.active } == true)
        // alice and gina lost the subscription to them.
        #expect(views(lines, of: "alice").last?.entitlements.contains { $0.name == "max" } == false)
        #expect(views(lines, of: "gina").last?.entitlements.contains { $0.name == "max" } == false)
    }
}
