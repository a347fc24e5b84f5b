import NIOCore

/// Runs a task's jobs on a PostgreSQL connection's event loop, where its statements' results
/// arrive: a transaction body resumes there after each statement instead of queueing for a thread
/// of the shared cooperative pool behind the HTTP handlers' signature checks. (The ingest profile
/// showed PostgreSQL sessions mostly `idle in transaction`, waiting for the client's next
/// statement, one at a time.)
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
