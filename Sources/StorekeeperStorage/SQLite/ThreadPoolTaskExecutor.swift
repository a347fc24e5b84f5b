import NIOPosix

/// Runs a task's jobs on the SQLite connection's own thread, so that a transaction body and its
/// statements take turns on one thread: a statement's result resumes the body there, instead of
/// queueing behind the HTTP handlers' signature checks on the shared cooperative pool.
///
/// The ingest profile showed why it matters: with every statement a round trip to the SQLite
/// thread and back to the cooperative pool, a transaction spent most of its time waiting for a
/// pool thread, not in SQLite.
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
