import Synchronization
import Testing

@testable import StorekeeperServer

/// The committer on its own: concurrent submissions share commits, each gets its own outcome,
/// and one bad item fails alone.
@Suite struct GroupCommitterTests {
    /// Records every commit's items; refuses a batch holding a negative number.
    final class Log: Sendable {
        let batches = Mutex<[[Int]]>([])

        func commit(_ group: GroupCommitter<Int, Int>.Group) async throws -> [Int] {
            let items = group.items()
            batches.withLock { $0.append(items) }
            // A commit takes a while, as an fsync does: submissions arriving meanwhile queue up.
            try await Task.sleep(for: .milliseconds(20))
            if items.contains(where: { $0 < 0 }) { throw Refused() }
            return items.map { $0 * 10 }
        }
    }

    struct Refused: Error {}

    @Test func concurrentSubmissionsShareCommitsAndEachGetsItsOwnOutcome() async throws {
        let log = Log()
        let committer = GroupCommitter<Int, Int>(maxBatch: 64, commit: log.commit)
        let results = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for item in 1...100 { group.addTask { (item, try await committer.submit(item)) } }
            return try await group.reduce(into: [Int: Int]()) { $0[$1.0] = $1.1 }
        }
        #expect(results.count == 100 && results.allSatisfy { $0.value == $0.key * 10 })
        let batches = log.batches.withLock { $0 }
        #expect(batches.flatMap { $0 }.sorted() == Array(1...100))
        #expect(batches.count < 100, "every submission had a commit of its own")
        #expect(batches.allSatisfy { $0.count <= 64 })
    }

    /// With `overlapping: 2`, a second group commits while the first is still in its commit (on
    /// SQLite, while the first waits for its flush), never a third.
    @Test func overlappingCommitsRunAtMostThatManyAtOnce() async throws {
        let running = Mutex((now: 0, most: 0))
        let committer = GroupCommitter<Int, Int>(maxBatch: 4, overlapping: 2) { group in
            let items = group.items()
            running.withLock { $0 = (now: $0.now + 1, most: max($0.most, $0.now + 1)) }
            // Each commit holds on until a second has run beside it, however slowly the machine
            // schedules them; if none ever does, it gives up after 10 s and `most` stays 1.
            let deadline = ContinuousClock.now + .seconds(10)
            while running.withLock({ $0.most }) < 2, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(1))
            }
            try await Task.sleep(for: .milliseconds(5))
            running.withLock { $0.now -= 1 }
            return items
        }
        let results = try await withThrowingTaskGroup(of: Int.self) { group in
            for item in 1...40 { group.addTask { try await committer.submit(item) } }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(results.sorted() == Array(1...40))
        #expect(running.withLock { $0.most } == 2)
        // The default: one commit at a time.
        let serial = GroupCommitter<Int, Int>(maxBatch: 4) { group in
            let items = group.items()
            running.withLock { $0 = (now: $0.now + 1, most: max($0.most, $0.now + 1)) }
            try await Task.sleep(for: .milliseconds(5))
            running.withLock { $0.now -= 1 }
            return items
        }
        running.withLock { $0 = (0, 0) }
        _ = try await withThrowingTaskGroup(of: Int.self) { group in
            for item in 1...20 { group.addTask { try await serial.submit(item) } }
            return try await group.reduce(into: 0) { $0 += $1 }
        }
        #expect(running.withLock { $0.most } == 1)
    }

    /// A commit takes its items when it asks for them: one that asks once it holds what it
    /// commits under (a transaction waiting for SQLite's one writer) commits the items that arrived
    /// while it waited, instead of leaving them to the next commit. Asking before waiting, as the
    /// committer once took its batch, commits the first item alone.
    @Test(arguments: [true, false])
    func aCommitTakesTheItemsThatArrivedWhileItWaitedToCommit(asksAfterWaiting: Bool) async throws {
        let commitsBegun = Mutex(0)
        let writerFree = Mutex(false)
        let batches = Mutex<[[Int]]>([])
        let committer = GroupCommitter<Int, Int>(maxBatch: 64) { group in
            var items = asksAfterWaiting ? [] : group.items()
            commitsBegun.withLock { $0 += 1 }
            let deadline = ContinuousClock.now + .seconds(30)
            while !writerFree.withLock({ $0 }), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(1))
            }
            if asksAfterWaiting { items = group.items() }
            // A transaction run again gets the same items.
            #expect(group.items() == items)
            batches.withLock { $0.append(items) }
            return items
        }
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { _ = try await committer.submit(1) }
            // The first commit has begun (having taken item 1, or to take its items later) before
            // the others come.
            let deadline = ContinuousClock.now + .seconds(30)
            while commitsBegun.withLock({ $0 }) == 0, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(1))
            }
            for item in 2...10 { tasks.addTask { _ = try await committer.submit(item) } }
            while committer.waitingCount < (asksAfterWaiting ? 10 : 9), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(1))
            }
            writerFree.withLock { $0 = true }
            try await tasks.waitForAll()
        }
        let committed = batches.withLock { $0 }
        #expect(committed.flatMap { $0 }.sorted() == Array(1...10))
        // Items 2...10 are submitted from tasks of their own, in whatever order those run.
        #expect(committed.first?.sorted() == (asksAfterWaiting ? Array(1...10) : [1]))
    }

    @Test func aBadItemFailsAloneAndItsNeighboursCommit() async throws {
        let log = Log()
        let committer = GroupCommitter<Int, Int>(maxBatch: 64, commit: log.commit)
        let results = await withTaskGroup(of: (Int, Result<Int, any Error>).self) { group in
            for item in [1, 2, -3, 4, 5] {
                group.addTask {
                    do { return (item, .success(try await committer.submit(item))) } catch {
                        return (item, .failure(error))
                    }
                }
            }
            return await group.reduce(into: [Int: Result<Int, any Error>]()) { $0[$1.0] = $1.1 }
        }
        for item in [1, 2, 4, 5] { #expect((try? results[item]?.get()) == item * 10) }
        #expect(throws: Refused.self) { try results[-3]?.get() }
    }
}
