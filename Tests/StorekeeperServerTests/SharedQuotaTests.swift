import Foundation
import Logging
import StoreCore
import StorekeeperStorage
import Synchronization
import TestSupport
import Testing

@testable import StorekeeperServer

/// A wall clock the test sets.
final class SettableWallClock: WallClock {
    private let current: Mutex<Date>
    init(_ start: Date) { current = Mutex(start) }
    func now() -> Date { current.withLock { $0 } }
    func set(_ date: Date) { current.withLock { $0 = date } }
}

/// Store quotas counted in storage: instances sharing one database (here, two storage handles on
/// it) give calls turns as one limiter would, and never admit more than a limit between them.
@Suite(.serialized) struct SharedQuotaTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    /// Two storages on one fresh, migrated database of `backend`.
    func withTwoStorages(_ backend: StorageBackend, _ body: ([any Storage]) async throws -> Void) async throws {
        func run(_ url: String) async throws {
            var storages: [any Storage] = []
            do {
                for _ in 0..<2 {
                    let storage = try await StorageFactory.open(url, logger: TemporaryStorage.quietLogger)
                    storages.append(storage)
                    try await storage.migrate()
                }
                try await body(storages)
            } catch {
                for storage in storages { try? await storage.close() }
                throw error
            }
            for storage in storages { try await storage.close() }
        }
        switch backend {
        case .sqlite:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-quota-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            try await run(directory.appendingPathComponent("db.sqlite").path)
        case .postgresql:
            try await PostgresAdmin.withFreshDatabase(serverURL: try #require(PostgresAdmin.serverURL)) { url in
                try await run(url)
            }
        }
    }

    /// Calls alternate between two instances: their turns are those one limiter would give, so
    /// each instance sees the other's calls.
    @Test(arguments: StorageBackend.available)
    func turnsCountTheOtherInstancesCalls(_ backend: StorageBackend) async throws {
        try await withTwoStorages(backend) { storages in
            let clock = SettableWallClock(Self.start)
            let limits = QuotaLimits(
                buckets: [.init(rawValue: "reads"): [QuotaLimit(requests: 3, per: .seconds(10))]],
                overall: [QuotaLimit(requests: 5, per: .seconds(10))], maxWait: .seconds(60))
            let instances = storages.map {
                SharedQuota(scope: "google-play:shared", limits: limits, storage: $0, clock: clock)
            }
            let reads = QuotaBucket(rawValue: "reads")
            let writes = QuotaBucket(rawValue: "writes")
            var turns: [(QuotaBucket, TimeInterval)] = []
            for (index, bucket) in [reads, reads, reads, reads, writes, writes, reads, writes, writes].enumerated() {
                let turn = try await instances[index % 2].reserve(bucket)
                turns.append((bucket, turn.timeIntervalSince(Self.start)))
            }
            // Three reads at once; the fourth waits for the reads' window; calls keep their order of
            // arrival; the overall limit of 5 per 10 s holds the ninth call to 20 s.
            #expect(turns.map(\.1) == [0, 0, 0, 10, 10, 10, 10, 10, 20])
            Self.expectWithinLimits(turns.map(\.1), QuotaLimit(requests: 5, per: .seconds(10)))
            Self.expectWithinLimits(turns.filter { $0.0 == reads }.map(\.1), QuotaLimit(requests: 3, per: .seconds(10)))
            // Time passes: old calls stop counting (and are pruned).
            clock.set(Self.start.addingTimeInterval(100))
            let later = try await instances[1].reserve(reads)
            #expect(later == Self.start.addingTimeInterval(100))
            let stored = try await storages[0].transaction {
                try await $0.quotaAdmissions(scope: "google-play:shared", after: 0, since: .distantPast)
            }
            #expect(stored.count == 1, "admissions older than the longest window are pruned")
        }
    }

    /// A call that wakes long after its turn (a starved process) does not go on it: it takes a
    /// new turn, and the missed one stays counted, so it cannot arrive together with the calls of
    /// later turns.
    @Test(arguments: StorageBackend.available)
    func aCallThatWakesLateTakesANewTurn(_ backend: StorageBackend) async throws {
        try await withTwoStorages(backend) { storages in
            let clock = SettableWallClock(Self.start)
            let limits = QuotaLimits(
                buckets: [:], overall: [QuotaLimit(requests: 1, per: .seconds(10))], maxWait: .seconds(60))
            let wakes = Mutex(0)
            let quota = SharedQuota(
                scope: "google-play:late", limits: limits, storage: storages[0], clock: clock,
                sleep: { duration in
                    // The first wake comes 3 s after the turn; the others on time.
                    let late = wakes.withLock { count in
                        count += 1
                        return count == 1
                    }
                    let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
                    clock.set(clock.now().addingTimeInterval(seconds + (late ? 3 : 0)))
                })
            let bucket = QuotaBucket.appStoreServerAPI
            try await quota.acquire(bucket)  // its turn at once
            try await quota.acquire(bucket)  // turn at 10 s, woke at 13 s: a new turn at 20 s
            #expect(clock.now() == Self.start.addingTimeInterval(20))
            #expect(wakes.withLock { $0 } == 2)
            let stored = try await storages[1].transaction {
                try await $0.quotaAdmissions(scope: "google-play:late", after: 0, since: .distantPast)
            }
            #expect(stored.map { $0.time.timeIntervalSince(Self.start) }.suffix(2) == [10, 20])
        }
    }

    /// Two instances race for the last 3 slots of a limit with 20 calls at once: exactly 3 are
    /// admitted; the others are refused (their turn would be an hour away).
    @Test(arguments: StorageBackend.available)
    func instancesRacingForTheLastSlotsAdmitNoMoreThanTheLimit(_ backend: StorageBackend) async throws {
        try await withTwoStorages(backend) { storages in
            let limits = QuotaLimits(
                buckets: [:], overall: [QuotaLimit(requests: 10, per: .seconds(3600))], maxWait: .seconds(5))
            let instances = storages.map {
                SharedQuota(scope: "app-store:race:Production", limits: limits, storage: $0)
            }
            let bucket = QuotaBucket.appStoreServerAPI
            for index in 0..<7 { try await instances[index % 2].acquire(bucket) }
            let admitted = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<20 {
                    let quota = instances[index % 2]
                    group.addTask {
                        do {
                            try await quota.acquire(bucket)
                            return true
                        } catch is QuotaExhausted {
                            return false
                        }
                    }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(admitted == 3)
            let stored = try await storages[0].transaction {
                try await $0.quotaAdmissions(scope: "app-store:race:Production", after: 0, since: .distantPast)
            }
            #expect(stored.count == 10)
        }
    }

    /// Calls with no limit configured never touch storage.
    @Test func unlimitedQuotasAreNotMade() {
        #expect(StoreQuotas.inProcess.quota(scope: "app-store:x:Sandbox", limits: .unlimited) == nil)
    }

    /// No window of the limit's length holds more than `requests` of `times` (sorted seconds).
    static func expectWithinLimits(
        _ times: [TimeInterval], _ limit: QuotaLimit, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let window = Double(limit.window.components.seconds)
        let sorted = times.sorted()
        for index in sorted.indices where index + limit.requests < sorted.count {
            #expect(
                sorted[index + limit.requests] - sorted[index] >= window,
                "\(limit.requests + 1) calls within \(window) s from \(sorted[index])", sourceLocation: sourceLocation)
        }
    }
}
