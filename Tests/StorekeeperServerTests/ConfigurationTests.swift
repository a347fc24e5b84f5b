import Crypto
import Foundation
import GooglePlay
import NIOCore
import StoreSimulator
import Storekeeper
import StorekeeperServer
import Testing

/// `ConfigurationLoader` (what `storekeeper config check` runs) on real files.
@Suite struct ConfigurationTests {
    /// A folder holding a .p8 key and a root certificate, and a configuration file referring to them.
    struct Folder {
        let url: URL

        init() throws {
            url = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-config-\(UUID())")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            try P256.Signing.PrivateKey().pemRepresentation.write(
                to: url.appendingPathComponent("AuthKey.p8"), atomically: true, encoding: .utf8
            )
            let chain = try TestCertificateChain(options: .init(now: Date(), name: "Config Test"))
            try Data(TestCertificateChain.der(chain.root)).write(to: url.appendingPathComponent("root.der"))
        }

        func write(_ json: String) throws -> String {
            let path = url.appendingPathComponent("storekeeper.json").path
            try json.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }

        func remove() { try? FileManager.default.removeItem(at: url) }
    }

    static let valid = """
        {
          "server": {"port": 9090},
          "storage": {"url": "data.sqlite"},
          "policies": {"ownershipConflict": "transfer-if-no-active"},
          "processing": {"catchUp": {"interval": 900, "overdueAfter": 7200, "refreshBatch": 25,
                                      "awaitingNewsWatch": 2592000}},
          "apiKeys": {"backend": {"scope": "secret", "secret": "0123456789abcdef-backend"}, "app": {"scope": "read_only"}},
          "apps": {"main": {"appStore": {
            "bundleId": "com.example.app", "environments": ["Sandbox"],
            "keyId": "KEY1", "issuerId": "issuer", "privateKeyPath": "AuthKey.p8", "allowedRootFiles": ["root.der"]
          }}},
          "products": {"appStore": {
            "com.example.pro.monthly": {"kind": "subscription", "entitlements": ["pro"], "group": "pro"},
            "com.example.coins": {"kind": "consumable", "balance": "coins", "credits": 100}
          }}
        }
        """

    @Test func aValidFileLoadsWithEnvironmentOverridesAndSecrets() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        let path = try folder.write(Self.valid)
        let configuration = try await ConfigurationLoader.load(
            path: path,
            environment: ["SERVER_PORT": "7070", "API_KEYS_APP_SECRET": "read-only-secret-0123456789"]
        )
        #expect(configuration.server.port == 7070)
        #expect(configuration.policies.ownershipConflict == .transferIfNoActive)
        #expect(configuration.storageURL == "data.sqlite")
        #expect(configuration.processing.catchUp.interval == 900)
        #expect(configuration.processing.catchUp.overdueAfter == 7200)
        #expect(configuration.processing.catchUp.refreshBatch == 25)
        #expect(configuration.processing.catchUp.awaitingNewsWatch == 30 * 86_400)
        #expect(configuration.processing.catchUp.enabled)
        #expect(configuration.processing.catchUp.refreshInterval == CatchUpSettings().refreshInterval)
        #expect(configuration.processing.workers == ProcessingSettings.defaultWorkers)
        #expect(Set(configuration.apiKeys.map(\.name)) == ["app", "backend"])
        #expect(configuration.apiKeys.first { $0.name == "app" }?.secret == "read-only-secret-0123456789")
        #expect(configuration.apiKeys.allSatisfy { !"\($0)".contains($0.secret) })
        let app = try #require(configuration.apps.first?.appStore)
        #expect(app.privateKeyPath == folder.url.appendingPathComponent("AuthKey.p8").path)
        #expect(app.canCallAPI)
        #expect(configuration.catalog.product("com.example.coins", in: .appStore)?.credits == 100)
        #expect(configuration.catalog.product("com.example.pro.monthly", in: .appStore)?.entitlements == ["pro"])
        // A deployment is production unless it says otherwise; sandbox purchases grant nothing there.
        #expect(configuration.environment == .production)
        #expect(app.environments == [.sandbox])
        #expect(!app.sandboxGrantsAccess)
        #expect(configuration.access == EnvironmentAccess(deployment: .production))
    }

    /// Half the cores, from 1 to 4: on a 2-core host one worker, whose batches do not wait on
    /// each other's locks (Benchmarks/README.md).
    @Test func processingWorkersDefaultToHalfTheCoresFromOneToFour() {
        #expect(ProcessingSettings.defaultWorkers == min(4, max(1, System.coreCount / 2)))
        #expect((1...4).contains(ProcessingSettings.defaultWorkers))
        #expect(ProcessingSettings().workers == ProcessingSettings.defaultWorkers)
    }

    @Test func theDeploymentEnvironmentAndTheAppsSwitches() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        let path = try folder.write(
            Self.valid.replacingOccurrences(of: #""server": {"port": 9090},"#, with: #""environment": "sandbox","#)
                .replacingOccurrences(
                    of: #""environments": ["Sandbox"],"#,
                    with: #""environments": ["Sandbox"], "sandboxGrantsAccess": true,"#))
        let secrets = ["API_KEYS_APP_SECRET": "read-only-secret-0123456789"]
        let configuration = try await ConfigurationLoader.load(path: path, environment: secrets)
        #expect(configuration.environment == .sandbox)
        #expect(configuration.access.sandboxGrantingApps == [StoreApp(.appStore, AppID("com.example.app"))])
        let refused = try folder.write(
            Self.valid.replacingOccurrences(of: #""server": {"port": 9090},"#, with: #""environment": "staging","#))
        await #expect(throws: ConfigurationError.self) {
            _ = try await ConfigurationLoader.load(path: refused, environment: secrets)
        }
    }

    /// Two apps of one store with the same bundle id or package name would make every payload
    /// ambiguous: `config check` names both.
    @Test func twoAppsSharingABundleIdOrPackageNameAreReported() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        let appStore =
            #"{"bundleId": "com.example.app", "environments": ["Sandbox"], "allowedRootFiles": ["root.der"]}"#
        let googlePlay = #"{"packageName": "com.example.android"}"#
        let path = try folder.write(
            """
            {"apiKeys": {"backend": {"secret": "0123456789abcdef-backend"}},
             "apps": {"one": {"appStore": \(appStore), "googlePlay": \(googlePlay)},
                      "two": {"appStore": \(appStore), "googlePlay": \(googlePlay)}},
             "products": {"appStore": {"p": {"kind": "subscription", "entitlements": ["pro"]}}}}
            """)
        do {
            _ = try await ConfigurationLoader.load(path: path, environment: [:])
            Issue.record("two apps with one bundle id loaded")
        } catch let error as ConfigurationError {
            let duplicates = error.problems.filter { $0.message.contains("is also the") }
            #expect(
                duplicates.map(\.path).sorted() == ["apps.two.appStore.bundleId", "apps.two.googlePlay.packageName"])
            #expect(duplicates.allSatisfy { $0.message.contains("apps.one") })
        }
    }

    @Test func everyProblemIsListedOnceWithItsKeyPath() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        let path = try folder.write(
            """
            {"server": {"port": 99999}, "storage": {"url": "mysql://user:hunter2@db/x"},
             "policies": {"ownershipConflict": "steal"},
             "processing": {"catchUp": {"enabled": "sometimes", "refreshBatch": 0, "awaitingNewsWatch": 3600}},
             "apiKeys": {"backend": {"secret": "short"}},
             "apps": {"main": {"appStore": {"bundleId": "com.x", "environments": ["Production", "Prod"],
                                            "keyId": "K", "privateKeyPath": "missing.p8"}}},
             "products": {"appStore": {"a": {"kind": "subscriptoin"}}, "googlePlay": {"c": {"kind": "consumable"}}}}
            """
        )
        do {
            _ = try await ConfigurationLoader.load(path: path, environment: [:])
            Issue.record("a broken configuration loaded")
        } catch let error as ConfigurationError {
            let paths = error.problems.map(\.path)
            for expected in [
                "server.port", "storage.url", "policies.ownershipConflict", "apiKeys.backend.secret",
                "processing.catchUp.enabled", "processing.catchUp.refreshBatch", "processing.catchUp.awaitingNewsWatch",
                "apps.main.appStore.environments", "apps.main.appStore.appAppleId",
                "apps.main.appStore.privateKeyPath", "apps.main.appStore", "apps.main.appStore.appleRootFiles",
                "products.appStore.a.kind", "products.googlePlay", "products.googlePlay.c",
            ] {
                #expect(paths.contains(expected), "no problem reported for \(expected): \(error)")
            }
            #expect(!error.description.contains("hunter2"))
            #expect(error.problems.allSatisfy { !$0.message.isEmpty && !$0.message.contains("\n") })
        }
    }

    @Test func anUnreadableFileIsOneProblem() async throws {
        do {
            _ = try await ConfigurationLoader.load(path: "/nonexistent/storekeeper.json", environment: [:])
            Issue.record("a missing file loaded")
        } catch let error as ConfigurationError {
            #expect(error.problems.count == 1)
        }
    }

    /// Store quotas: Google's defaults unless set; a bucket's limits replaced by a list of
    /// "requests/seconds" limits (or none); environment variables override them like any key.
    @Test func quotasAreConfigurable() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        let json = Self.valid.replacingOccurrences(
            of: #""server": {"port": 9090},"#,
            with: #"""
                "server": {"port": 9090, "instance": "east-1"},
                "quotas": {"googlePlay": {"voidedPurchases": "3/2s, 100/86400s", "orders": "none", "maxWait": 5},
                           "appStore": {"overall": "50/1s"}},
                """#
        ).replacingOccurrences(of: #""processing": {"catchUp""#, with: #""processing": {"jobLease": 30, "catchUp""#)
        let path = try folder.write(json)
        let configuration = try await ConfigurationLoader.load(
            path: path,
            environment: [
                "QUOTAS_GOOGLE_PLAY_OVERALL": "1000/60s", "API_KEYS_APP_SECRET": "read-only-secret-0123456789",
            ])
        let google = configuration.quotas.googlePlay
        #expect(
            google.buckets[.voidedPurchases]
                == [QuotaLimit(requests: 3, per: .seconds(2)), QuotaLimit(requests: 100, per: .seconds(86_400))])
        #expect(google.buckets[.orders] == [])
        #expect(google.buckets[.subscriptions] == QuotaLimits.googleDefaults.buckets[.subscriptions])
        #expect(google.overall == [QuotaLimit(requests: 1000, per: .seconds(60))])
        #expect(google.maxWait == .seconds(5))
        #expect(configuration.quotas.appStore.overall == [QuotaLimit(requests: 50, per: .seconds(1))])
        #expect(configuration.server.instance == "east-1")
        #expect(configuration.processing.jobLease == 30)

        let broken = try folder.write(
            Self.valid.replacingOccurrences(
                of: #""server": {"port": 9090},"#,
                with: #""server": {"port": 9090}, "quotas": {"appStore": {"overall": "fast"}},"#))
        do {
            _ = try await ConfigurationLoader.load(
                path: broken, environment: ["API_KEYS_APP_SECRET": "read-only-secret-0123456789"])
            Issue.record("a quota that is not a list of limits loaded")
        } catch let error as ConfigurationError {
            #expect(error.problems.map(\.path) == ["quotas.appStore.overall"])
        }
    }

    @Test func theRefundPolicyAndProductRulesLoad() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        let json = Self.valid.replacingOccurrences(
            of: #""allowedRootFiles": ["root.der"]"#,
            with: #"""
                "allowedRootFiles": ["root.der"],
                "refundPolicy": {"preference": {"declineAboveConsumedPercent": 50, "otherwise": "GRANT_PRORATED"},
                                 "sampleContentProvided": true}
                """#
        ).replacingOccurrences(
            of: #""com.example.coins": {"kind": "consumable", "balance": "coins", "credits": 100}"#,
            with: #"""
                "com.example.coins": {"kind": "consumable", "balance": "coins", "credits": 100,
                                      "refundPolicy": {"preference": "DECLINE"}},
                "com.example.unlock": {"kind": "non_consumable", "entitlements": ["unlock"],
                                       "proratedRefund": {"revokeFromPercent": 50}},
                "com.example.pass": {"kind": "non_renewing_subscription", "entitlements": ["pass"],
                                     "proratedRefund": "keep", "refundPolicy": {"answer": false}}
                """#)
        let configuration = try await ConfigurationLoader.load(
            path: try folder.write(json), environment: ["API_KEYS_APP_SECRET": "read-only-secret-0123456789"])
        let policy = try #require(configuration.apps.first?.appStore?.refundPolicy)
        #expect(
            policy
                == RefundPolicy(
                    preference: .byConsumedShare(declineAbovePercent: 50, otherwise: .grantProrated),
                    sampleContentProvided: true))
        let catalog = configuration.catalog
        #expect(catalog.product("com.example.coins", in: .appStore)?.refundPolicy?.preference == .fixed(.decline))
        #expect(catalog.product("com.example.unlock", in: .appStore)?.proratedRefund == .revokeFromPercent(50))
        #expect(catalog.product("com.example.pass", in: .appStore)?.proratedRefund == .keep)
        #expect(catalog.product("com.example.pass", in: .appStore)?.refundPolicy?.answer == false)
        #expect(catalog.product("com.example.pro.monthly", in: .appStore)?.proratedRefund == .revoke)
    }

    @Test func aWrongRefundValueIsExplainedByItsKey() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        let json = Self.valid.replacingOccurrences(
            of: #""allowedRootFiles": ["root.der"]"#,
            with: #"""
                "allowedRootFiles": ["root.der"],
                "refundPolicy": {"preference": "MAYBE", "answer": "yes", "tone": "kind"}
                """#
        ).replacingOccurrences(
            of: #""com.example.coins": {"kind": "consumable", "balance": "coins", "credits": 100}"#,
            with: #"""
                "com.example.coins": {"kind": "consumable", "balance": "coins", "credits": 100,
                                      "proratedRefund": "keep", "entitlements": ["coins"]},
                "com.example.unlock": {"kind": "non_consumable", "entitlements": ["unlock"],
                                       "proratedRefund": {"revokeFromPercent": 150},
                                       "refundPolicy": {"preference": {"declineAboveConsumedPercent": 50, "otherwise": "DECLINE"}}}
                """#)
        do {
            _ = try await ConfigurationLoader.load(
                path: try folder.write(json), environment: ["API_KEYS_APP_SECRET": "read-only-secret-0123456789"])
            Issue.record("a wrong refund policy loaded")
        } catch let error as ConfigurationError {
            #expect(
                Set(error.problems.map(\.path)) == [
                    "apps.main.appStore.refundPolicy.preference", "apps.main.appStore.refundPolicy.answer",
                    "apps.main.appStore.refundPolicy.tone", "products.appStore.com.example.coins.proratedRefund",
                    "products.appStore.com.example.coins.entitlements",
                    "products.appStore.com.example.unlock.proratedRefund",
                    "products.appStore.com.example.unlock.refundPolicy.preference.otherwise",
                ])
            #expect(
                error.problems.first { $0.path.hasSuffix("refundPolicy.preference") }?.message.contains("MAYBE") == true
            )
        }
    }

    @Test func promotionalOffersNeedASigningKeyAndConfigCheckSaysWhere() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        let json = Self.valid.replacingOccurrences(
            of: #""keyId": "KEY1", "issuerId": "issuer", "privateKeyPath": "AuthKey.p8", "#, with: ""
        ).replacingOccurrences(
            of: #""com.example.pro.monthly": {"kind": "subscription", "entitlements": ["pro"], "group": "pro"}"#,
            with: #"""
                "com.example.pro.monthly": {"kind": "subscription", "entitlements": ["pro"], "group": "pro",
                                            "promotionalOffers": ["comeback"]}
                """#)
        do {
            _ = try await ConfigurationLoader.load(
                path: try folder.write(json), environment: ["API_KEYS_APP_SECRET": "read-only-secret-0123456789"])
            Issue.record("promotional offers without a signing key loaded")
        } catch let error as ConfigurationError {
            #expect(error.problems.map(\.path) == ["apps.main.appStore"])
            #expect(error.problems.first?.message.contains("privateKeyPath") == true)
        }
    }
}
