import HummingbirdCore
import Logging
import NIOCore
import StorekeeperStorage

/// Handles each HTTP connection on the connection's own event loop (a task executor preference)
/// instead of the shared cooperative pool.
///
/// Why: on the pool, every request woke a pool thread when it arrived and woke the event loop again
/// to write its answer. The customer-read profile (1,000 GET/s on SQLite) showed about a quarter of
/// the server's CPU in thread switches, most of them those wake-ups (the rest the storage's). On its
/// loop, a request is read, routed and answered on one thread; only the storage's own hops remain.
/// The pool has as many threads as there are event loops, so work that computes (signature checks)
/// has the same cores either way.
struct EventLoopChildChannel<Inner: ServerChildChannel>: ServerChildChannel {
    typealias Value = Inner.Value

    let inner: Inner

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        inner.setup(channel: channel, logger: logger)
    }

    func handle(value: Value, logger: Logger) async {
        await withTaskExecutorPreference(EventLoopTaskExecutor(eventLoop: value.channel.eventLoop)) {
            await inner.handle(value: value, logger: logger)
        }
    }
}

extension HTTPServerBuilder {
    /// HTTP/1.1, each connection handled on its own event loop (``EventLoopChildChannel``).
    static func http1OnConnectionEventLoops() -> HTTPServerBuilder {
        HTTPServerBuilder { responder in EventLoopChildChannel(inner: HTTP1Channel(responder: responder)) }
    }
}
