import AsyncHTTPClient
import Foundation
import GooglePlay
import Logging
import StoreCore
import Storekeeper
import Testing

@testable import StorekeeperServer

/// Google counts the Android Publisher quota per Google Cloud project, not per app: the clients of
/// apps whose service accounts belong to one project share one limiter.
@Suite struct GooglePlayQuotaTests {
    @Test func appsOfOneCloudProjectShareOneQuota() async throws {
        try await ServerHarness.run { h in
            let identity = h.simulator.googleIdentity
            var apps: [AppConfiguration] = []
            for (name, email, project) in [
                ("one", "one@shared.iam.gserviceaccount.com", "shared"),
                ("two", "two@shared.iam.gserviceaccount.com", "shared"),
                ("three", "three@other.iam.gserviceaccount.com", "other"),
            ] {
                let account = try identity.makeServiceAccount(email: email, projectID: project)
                let path = FileManager.default.temporaryDirectory.appendingPathComponent("sa-\(UUID()).json")
                try account.jsonKey.write(to: path)
                apps.append(
                    AppConfiguration(
                        name: name,
                        googlePlay: GooglePlayAppConfiguration(
                            packageName: "com.example.\(name)", serviceAccountKeyPath: path.path)))
            }
            let configuration = StorekeeperConfiguration(
                storageURL: "unused.sqlite", apiKeys: [], apps: apps, catalog: Catalog())
            let google = try GooglePlayApps(
                configuration: configuration, clock: SystemWallClock(), httpClient: .shared,
                logger: Logger(label: "test"))
            let quotas = google.apps.map { $0.client?.configuration.quota }
            #expect(quotas.allSatisfy { $0 != nil })
            #expect(quotas[0] === quotas[1])
            #expect(quotas[0] !== quotas[2])
        }
    }

    @Test func aKeyWithoutProjectIdCountsAgainstTheProjectOfItsEmail() async throws {
        try await ServerHarness.run { h in
            let account = try h.simulator.googleIdentity.makeServiceAccount(
                email: "push@acme-prod.iam.gserviceaccount.com", projectID: "")
            let key = try ServiceAccountKey(jsonData: account.jsonKey)
            #expect(GooglePlayApps.quotaProject(of: key) == "acme-prod")
        }
    }
}
