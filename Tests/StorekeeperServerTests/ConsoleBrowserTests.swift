import Foundation
import StoreSimulator
import Storekeeper
import StorekeeperServer
import StorekeeperStorage
import TestSupport
import Testing

/// The console in a real headless Chromium from Debian's packages, driven by Selenium
/// (`Tests/Browser/console_walkthrough.py`) through Debian's chromedriver, against a server wired
/// to the store simulator: sign in, the overview charts (states with a trial, activity, revenue per
/// currency), a search by each kind of id, a trial on the customer page, the timeline
/// and a notification's decoded payload, retrying a failed notification, extending a renewal
/// date; no errors in the browser's console. Screenshots of each page are kept in
/// `.build/console-screenshots/`.
///
/// Python comes from `STOREKEEPER_BROWSER_PYTHON` (`.ci/run` sets it) or a virtual environment
/// this test makes once in `.build/console-browser-venv` from `Tests/Browser/requirements.txt`.
/// Skipped, saying so, only where Chromium or its driver is not installed
/// (`apt-get install chromium chromium-driver`; `.ci/run` installs them).
@Suite struct ConsoleBrowserTests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }
    static let chromedriver = ["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }
    static var browserInstalled: Bool { chromium != nil && chromedriver != nil }
    static let password = "walkthrough password"

    @Test(
        .enabled(
            if: browserInstalled,
            "Chromium and its driver are not installed here (apt-get install chromium chromium-driver; .ci/run installs them)"
        ), .timeLimit(.minutes(10)))
    func anOperatorWorksThroughTheConsoleInChromium() async throws {
        let chromium = try #require(Self.chromium)
        let chromedriver = try #require(Self.chromedriver)
        let python = try await Self.python()
        let screenshots = Self.packageRoot.appendingPathComponent(".build/console-screenshots")
        try? FileManager.default.removeItem(at: screenshots)
        try FileManager.default.createDirectory(at: screenshots, withIntermediateDirectories: true)
        let console = ConsoleSettings(operators: [
            ConsoleOperator(name: "olga", role: .operator, credential: .password(Self.password))
        ])
        let walkthrough: (ServerHarness) async throws -> Void = { h in
            let token = try await h.createCustomer("alice")
            let apple = try h.simulator.appStore.purchase(
                customer: "alice", product: "pro.monthly", appAccountToken: token)
            let google = try h.simulator.googlePlay.purchaseSubscription(
                packageName: ServerHarness.packageName, productId: "premium",
                options: PlayPurchaseOptions(obfuscatedExternalAccountId: token.uuidString))
            let googleOrder = try #require(google.orderId)
            // Carol starts a free trial: the overview counts it apart, her page names it.
            let carol = try await h.createCustomer("carol")
            _ = try h.simulator.appStore.purchase(
                customer: "carol", product: "pro.monthly", appAccountToken: carol, offer: .freeTrial("P1W"))
            try await h.settle()
            // Bob's purchase arrives while Google's API fails: its notification is left failed.
            let bob = try await h.createCustomer("bob")
            h.simulator.faults.add([APIFault(pathPrefix: "/androidpublisher/", status: 500, times: 1_000)])
            _ = try h.simulator.googlePlay.purchaseSubscription(
                packageName: ServerHarness.packageName, productId: "premium",
                options: PlayPurchaseOptions(obfuscatedExternalAccountId: bob.uuidString))
            try await h.simulator.googlePlay.deliveriesSettled()
            var failed: [InboxNotification] = []
            let deadline = ContinuousClock.now.advanced(by: .seconds(30))
            while failed.isEmpty, ContinuousClock.now < deadline {
                failed = try await h.storage.transaction { try await $0.notifications(status: .failed, limit: 10) }
                try await Task.sleep(for: .milliseconds(50))
            }
            let failedKey = try #require(failed.first?.dedupeKey)
            h.simulator.faults.clear()
            // The overview's rollup, as its job would have folded it by now.
            try await h.application.rollup.run(recount: true)
            let expiryBefore = try #require(h.simulator.appStore.subscription(apple.originalTransactionId)?.expiresDate)

            let plan: [String: Any] = [
                "baseURL": h.baseURL, "chromium": chromium, "chromedriver": chromedriver,
                "screenshots": screenshots.path, "operator": "olga", "password": Self.password, "customer": "alice",
                "searches": [
                    ["customer", "alice"], ["appAccountToken", token.uuidString.lowercased()],
                    ["appStoreOriginalTransaction", apple.originalTransactionId],
                    ["appStoreTransaction", apple.transactionId],
                    ["appStoreOrder", AppStoreSimulation.orderId(forTransactionId: apple.transactionId)],
                    ["googlePurchaseToken", google.purchaseToken], ["googleOrder", googleOrder],
                ],
                "failedNotification": failedKey, "extend": apple.originalTransactionId, "trialCustomer": "carol",
            ]
            let planFile = screenshots.appendingPathComponent("plan.json")
            try JSONSerialization.data(withJSONObject: plan).write(to: planFile)
            let (status, output) = try await Self.run(
                python,
                [Self.packageRoot.appendingPathComponent("Tests/Browser/console_walkthrough.py").path, planFile.path])
            #expect(status == 0, "the walkthrough failed:\n\(output)")
            #expect(output.contains(" passed, 0 failed"), "\(output)")

            // What the browser did happened: bob's notification was processed, alice's renewal
            // date moved 5 days at the store, and both actions were recorded with who did them.
            let retried = try await h.storage.transaction {
                try await $0.notification(store: .googlePlay, dedupeKey: failedKey)
            }
            #expect(retried?.status == .processed)
            let expiryAfter = h.simulator.appStore.subscription(apple.originalTransactionId)?.expiresDate
            #expect(expiryAfter == expiryBefore.addingTimeInterval(5 * 86_400))
            let actions = try await h.storage.transaction { try await $0.recentConsoleActions(limit: 10) }
            #expect(Set(actions.map(\.action)) == ["retry-notification", "extend-renewal-date"])
            #expect(actions.allSatisfy { $0.operatorName == "olga" })
            for page in [
                "sign-in", "overview", "customer", "trial-customer", "notification-payload", "notifications-failed",
                "extended",
            ] {
                #expect(FileManager.default.fileExists(atPath: screenshots.appendingPathComponent("\(page).png").path))
            }
        }
        try await ServerHarness.run(customize: { _, configuration in configuration.console = console }, walkthrough)
    }

    /// A Python with Selenium: the one `.ci/run` made, or one made here once.
    static func python() async throws -> String {
        if let given = ProcessInfo.processInfo.environment["STOREKEEPER_BROWSER_PYTHON"], !given.isEmpty {
            return given
        }
        let venv = packageRoot.appendingPathComponent(".build/console-browser-venv")
        let python = venv.appendingPathComponent("bin/python").path
        let requirements = packageRoot.appendingPathComponent("Tests/Browser/requirements.txt").path
        if !FileManager.default.isExecutableFile(atPath: python) {
            let (made, output) = try await run("/usr/bin/python3", ["-m", "venv", venv.path])
            try #require(made == 0, "python3 -m venv failed (apt-get install python3-venv):\n\(output)")
        }
        let (installed, output) = try await run(
            python, ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r", requirements])
        try #require(installed == 0, "pip install -r Tests/Browser/requirements.txt failed:\n\(output)")
        return python
    }

    /// Runs a program to its end in the package's root; its exit status and everything it wrote.
    static func run(_ executable: String, _ arguments: [String]) async throws -> (Int32, String) {
        let result = try await ChildProcess.run(
            URL(fileURLWithPath: executable), arguments, currentDirectory: packageRoot, timeLimit: 540)
        return (result.status, result.standardOutput + result.standardError)
    }
}
