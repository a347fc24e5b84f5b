import Foundation
import Testing

/// `storekeeper demo` as a user runs it: the README's run command.
@Suite struct DemoCommandTests {
    @Test func tellsBothStoriesAndExitsCleanly() throws {
        let result = try CLI.run(["demo"])
        #expect(result.status == 0, "\(result.standardError)")
        let output = result.standardOutput
        for expected in [
            "== App Store — customer alice", "← App Store: SUBSCRIBED INITIAL_BUY",
            "← App Store: DID_FAIL_TO_RENEW GRACE_PERIOD", "pro ✓ grace_period",
            "✗ refused: 409 ownership-conflict", "← App Store: EXPIRED VOLUNTARY",
            "== Google Play — customer gina", "← Google Play: SUBSCRIPTION_IN_GRACE_PERIOD",
            "← Google Play: VOIDED_PURCHASE", "balance: coins 20", "Done; the temporary directory is removed.",
            // The app backend's receiver beside the story, each signature checked there.
            "⇢ webhook purchase.started delivered (signature ok)",
            "⇢ webhook subscription.grace_period delivered (signature ok)",
            "⇢ webhook subscription.expired delivered (signature ok)",
            "⇢ webhook purchase.refunded delivered (signature ok)",
        ] {
            #expect(output.contains(expected), "missing: \(expected)")
        }
        #expect(!output.contains("signature INVALID"))
    }

    @Test func refusesAnUnknownPolicy() throws {
        let result = try CLI.run(["demo", "--ownership-policy", "finders-keepers"])
        #expect(result.status == 2)
        #expect(result.standardError.contains("--ownership-policy takes one of keep, transfer, transfer-if-no-active"))
    }
}
