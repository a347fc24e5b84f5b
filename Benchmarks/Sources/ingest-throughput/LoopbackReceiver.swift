import Foundation
import Hummingbird
import Logging

/// A Hummingbird server on a free loopback port that reads each `POST /hook` and answers with
/// `answer()`, until ``stop()``: the webhook receiver the benchmarks deliver to.
struct LoopbackReceiver {
    let url: URL
    private let task: Task<Void, any Error>

    static func start(
        logger: Logger, answer: @escaping @Sendable () -> HTTPResponse.Status
    ) async throws -> LoopbackReceiver {
        let router = Router()
        router.post("hook") { request, _ -> Response in
            _ = try await request.body.collect(upTo: 1 << 20)
            return Response(status: answer())
        }
        let (bound, continuation) = AsyncStream.makeStream(of: Int.self)
        let application = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) }, logger: logger)
        let task = Task { try await application.runService(gracefulShutdownSignals: []) }
        var ports = bound.makeAsyncIterator()
        guard let port = await ports.next(), port > 0, let url = URL(string: "http://127.0.0.1:\(port)/hook") else {
            task.cancel()
            throw BenchmarkError("the webhook receiver did not start")
        }
        return LoopbackReceiver(url: url, task: task)
    }

    func stop() { task.cancel() }
}
