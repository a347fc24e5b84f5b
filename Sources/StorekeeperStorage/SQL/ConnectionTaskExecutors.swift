import NIOCore
import NIOPosix

// Task executors that run a transaction's body where its connection's results arrive, so that a
// statement's result resumes the body at once instead of queueing behind the HTTP handlers'
// signature checks on the shared cooperative pool. The ingest profiles showed why it matters:
// with every statement a round trip to the connection's thread and back to the cooperative pool,
// a transaction spent most of its time waiting for a pool thread (SQLite's thread was busy 20–40 %
// of the time; PostgreSQL sessions mostly waited in `ClientRead`, for the next statement).

/// Runs jobs on SQLite's connection thread (the `NIOThreadPool` SQLiteNIO runs statements on).
final class ThreadPoolTaskExecutor: TaskExecutor {
    private let pool: NIOThreadPool

    init(pool: NIOThreadPool) {
        self.pool = pool
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        // A job must run even after the pool began shutting down: its task would never end.
        pool.submit { _ in job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// Runs jobs on a PostgreSQL connection's event loop, where its query results are delivered.
final class EventLoopTaskExecutor: TaskExecutor {
    private let eventLoop: any EventLoop

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
