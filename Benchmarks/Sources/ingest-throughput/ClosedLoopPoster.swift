import Foundation
import LoadHTTP
import NIOCore
import NIOHTTP1
import NIOPosix

/// POSTs each body to one of the server instances, chosen at random as a load balancer would, with
/// `concurrency` requests in flight: each slot sends its next body when its previous one is
/// answered (a closed loop), over plain SwiftNIO channels on one event loop, kept open.
///
/// Not AsyncHTTPClient: a profile of the ingest run showed its sender (a task and a request state
/// machine per POST) using 8.5–10 % of the process's CPU, taken from the server it measures on the
/// 2-core machine. As in customer-read's `OpenLoopReader`, this sender costs a fraction of that,
/// as an external load generator (wrk) would.
struct ClosedLoopPoster: Sendable {
    struct Target: Sendable {
        var host: String
        var port: Int
    }

    let loop: any EventLoop
    let targets: [Target]
    let path: String
    let concurrency: Int

    /// The targets of base URLs such as `http://127.0.0.1:8080`.
    init(loop: any EventLoop, baseURLs: [String], path: String, concurrency: Int) throws {
        self.loop = loop
        self.targets = try baseURLs.map { url in
            guard let components = URLComponents(string: url), let host = components.host, let port = components.port
            else { throw BenchmarkError("not a base URL with a host and port: \(url)") }
            return Target(host: host, port: port)
        }
        self.path = path
        self.concurrency = concurrency
    }

    /// Posts every body and returns each request's milliseconds from send to the end of its answer;
    /// throws on the first answer other than 200 or a connection lost.
    func run(_ bodies: [ByteBuffer]) async throws -> [Double] {
        let run = Run(poster: self, bodies: bodies)
        return try await withCheckedThrowingContinuation { continuation in
            loop.execute { run.start { continuation.resume(with: $0) } }
        }
    }

    /// The posting of one set of bodies. Used on the event loop only.
    private final class Run: @unchecked Sendable {
        let poster: ClosedLoopPoster
        let bodies: [ByteBuffer]
        /// Per slot, a connection to each target.
        var slots: [[HTTPAnswerHandler]] = []
        var next = 0
        var answered = 0
        var latencies: [Double] = []
        var done: ((Result<[Double], any Error>) -> Void)?

        init(poster: ClosedLoopPoster, bodies: [ByteBuffer]) {
            self.poster = poster
            self.bodies = bodies
            latencies.reserveCapacity(bodies.count)
        }

        func start(_ done: @escaping (Result<[Double], any Error>) -> Void) {
            self.done = done
            guard !bodies.isEmpty else { return finish(.success([])) }
            let slotCount = min(poster.concurrency, bodies.count)
            var connecting: [EventLoopFuture<Void>] = []
            for _ in 0..<slotCount {
                var slot: [HTTPAnswerHandler] = []
                for target in poster.targets {
                    let connection = HTTPAnswerHandler()
                    slot.append(connection)
                    connecting.append(connect(connection, to: target))
                }
                slots.append(slot)
            }
            EventLoopFuture.andAllSucceed(connecting, on: poster.loop).whenComplete { result in
                switch result {
                case .success:
                    for slot in self.slots.indices { self.sendNext(on: slot) }
                case .failure(let error):
                    self.finish(.failure(BenchmarkError("cannot connect: \(error)")))
                }
            }
        }

        private func connect(_ connection: HTTPAnswerHandler, to target: Target) -> EventLoopFuture<Void> {
            ClientBootstrap(group: poster.loop)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        try channel.pipeline.syncOperations.addHandler(connection)
                    }
                }
                .connect(host: target.host, port: target.port)
                .map { connection.channel = $0 }
        }

        /// Sends the next body on the slot's connection to a random target, if any body is left.
        private func sendNext(on slot: Int) {
            guard done != nil, next < bodies.count else { return }
            let body = bodies[next]
            next += 1
            let choice = Int.random(in: 0..<poster.targets.count)
            let (target, connection) = (poster.targets[choice], slots[slot][choice])
            let sent = NIODeadline.now()
            connection.onAnswer = { status, answer in
                guard status == .ok else {
                    return self.finish(
                        .failure(BenchmarkError("HTTP \(status.code): \(String(buffer: answer).prefix(200))")))
                }
                self.latencies.append(Double((NIODeadline.now() - sent).nanoseconds) / 1e6)
                self.answered += 1
                if self.answered == self.bodies.count { return self.finish(.success(self.latencies)) }
                self.sendNext(on: slot)
            }
            connection.onFailure = { reason in self.finish(.failure(BenchmarkError(reason))) }
            guard let channel = connection.channel else {
                return finish(.failure(BenchmarkError("a connection was not open")))
            }
            let headers = HTTPHeaders([
                ("Host", "\(target.host):\(target.port)"), ("Content-Type", "application/json"),
                ("Content-Length", String(body.readableBytes)),
            ])
            channel.write(
                HTTPClientRequestPart.head(
                    HTTPRequestHead(version: .http1_1, method: .POST, uri: poster.path, headers: headers)),
                promise: nil)
            channel.write(HTTPClientRequestPart.body(.byteBuffer(body)), promise: nil)
            channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        }

        /// Reports the outcome once and closes the connections.
        private func finish(_ result: Result<[Double], any Error>) {
            guard let done else { return }
            self.done = nil
            for slot in slots {
                for connection in slot {
                    connection.onFailure = nil
                    connection.channel?.close(promise: nil)
                }
            }
            done(result)
        }
    }
}
