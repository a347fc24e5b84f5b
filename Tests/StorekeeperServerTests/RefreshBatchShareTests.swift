import Testing

@testable import StorekeeperServer

/// How a refresh run of `refreshBatch` splits between overdue subscriptions and those awaiting
/// news (``MissedNotificationRecovery/shareBatch(_:overdue:awaitingNews:)``).
struct RefreshBatchShareTests {
    @Test(arguments: [
        // Both kinds with a batch's worth due: half each, the odd one to overdue. (Overdue first
        // alone gave awaiting news nothing while a batch's worth stayed overdue.)
        (100, 100, 100, 50, 50),
        (5, 5, 5, 3, 2),
        (1, 1, 1, 1, 0),
        // One kind short: the other takes the rest.
        (100, 100, 10, 90, 10),
        (100, 10, 100, 10, 90),
        (100, 30, 40, 30, 40),
        (100, 0, 100, 0, 100),
        (100, 100, 0, 100, 0),
        (100, 0, 0, 0, 0),
    ])
    func eachKindGetsHalfWhenBothHaveThatManyAndTheRestGoesToWhicheverHasMore(
        batch: Int, overdue: Int, awaitingNews: Int, overdueTaken: Int, awaitingNewsTaken: Int
    ) {
        let share = MissedNotificationRecovery.shareBatch(batch, overdue: overdue, awaitingNews: awaitingNews)
        #expect(share.overdue == overdueTaken)
        #expect(share.awaitingNews == awaitingNewsTaken)
        #expect(share.overdue + share.awaitingNews <= batch)
    }
}
