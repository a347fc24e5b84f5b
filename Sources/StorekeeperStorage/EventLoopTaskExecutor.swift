package import NIOCore

/// Runs a task's jobs on one event loop: the thread where the task's I/O completes, so that the
/// task resumes there instead of waking a thread of the shared cooperative pool and hopping back.
///
/// Used for a PostgreSQL transaction's body (on its connection's loop, where its statements'
/// results arrive: the ingest profile showed sessions mostly `idle in transaction`, waiting for the
/// client's next statement) and for an HTTP connection's requests (on the connection's loop; see
/// `EventLoopChildChannel` in StorekeeperServer).
package final class EventLoopTaskExecutor: TaskExecutor {
    private let eventLoop: any EventLoop

    package init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
