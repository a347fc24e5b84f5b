import Foundation
import StorekeeperServer
import Testing

/// `retention` in the configuration file: the documented defaults, 0 for forever, and `config
/// check` explaining a wrong value by its key.
@Suite struct RetentionConfigurationTests {
    static func load(_ retention: String?) async throws -> StorekeeperConfiguration {
        let folder = try ConfigurationTests.Folder()
        defer { folder.remove() }
        let text =
            retention.map {
                ConfigurationTests.valid.replacingOccurrences(
                    of: #""server": {"port": 9090},"#, with: #""server": {"port": 9090}, "retention": \#($0),"#)
            } ?? ConfigurationTests.valid
        return try await ConfigurationLoader.load(
            path: try folder.write(text), environment: ["API_KEYS_APP_SECRET": "read-only-secret-0123456789"])
    }

    @Test func defaultsKeepThirtyDaysOfEventsAndAttempts() async throws {
        let retention = try await Self.load(nil).retention
        #expect(retention.events == 2_592_000.0)
        #expect(retention.deliveryAttempts == 2_592_000.0)
        #expect(retention.notifications == 2_592_000.0)
        #expect(retention.interval == 3_600)
        #expect(retention.batchSize == 1_000)
    }

    @Test func valuesAreDaysAndZeroKeepsForever() async throws {
        let retention = try await Self.load(
            #"{"events": 7.5, "deliveryAttempts": 0, "notifications": 45, "interval": 600, "batchSize": 250}"#
        ).retention
        #expect(retention.events == 7.5 * 86_400)
        #expect(retention.deliveryAttempts == nil)
        #expect(retention.notifications == TimeInterval(45 * 86_400))
        #expect(retention.interval == 600)
        #expect(retention.batchSize == 250)
    }

    @Test func wrongValuesAreExplainedByKey() async throws {
        do {
            _ = try await Self.load(
                #"{"events": -1, "deliveryAttempts": "a month", "interval": 0, "batchSize": 0}"#)
            Issue.record("a wrong retention loaded")
        } catch let error as ConfigurationError {
            let problems = error.problems.map(\.description)
            func has(_ prefix: String, _ words: String) -> Bool {
                problems.contains { $0.hasPrefix(prefix) && $0.contains(words) }
            }
            #expect(has("retention.events:", "0 or more"), "\(problems)")
            #expect(has("retention.deliveryAttempts:", "'a month' is not a number of days"), "\(problems)")
            #expect(has("retention.interval:", "more than 0 seconds"), "\(problems)")
            #expect(has("retention.batchSize:", "outside 1...100000"), "\(problems)")
        }
    }

    /// The catch-up stores what the store sent within its lookback and the inbox doesn't hold: a
    /// notification pruned within that span would be fetched and applied again.
    @Test func notificationsAreKeptAtLeastAsLongAsTheCatchUpLooksBack() async throws {
        do {
            _ = try await Self.load(#"{"notifications": 0.5}"#)
            Issue.record("a retention shorter than the catch-up's lookback loaded")
        } catch let error as ConfigurationError {
            let problems = error.problems.map(\.description)
            #expect(
                problems.contains { $0.hasPrefix("retention.notifications:") && $0.contains("historyLookback") },
                "\(problems)")
        }
        let kept = try await Self.load(#"{"notifications": 1.5}"#).retention.notifications
        #expect(kept == 1.5 * 86_400)
    }
}
