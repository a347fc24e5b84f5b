import Foundation
import LoadHTTP
import NIOCore
import NIOHTTP1
import NIOPosix
import Storekeeper

/// `GET /v1/customers/{id}` (or a console page) for random seeded customers at a fixed arrival rate: request n is
/// scheduled at start + n / rate and sent then whether or not earlier ones have answered (an open
/// loop), and its latency runs from that scheduled time to the end of the answer's body. A server
/// (or client) that falls behind therefore shows its queueing in the latencies instead of slowing
/// the load down (coordinated omission). It runs in a process of its own (``LoadProcess``).
///
/// Plain SwiftNIO channels on one event loop rather than AsyncHTTPClient: a profile of the run
/// showed the AsyncHTTPClient sender (a task and a request state machine per GET) using about 0.7
/// of a core at 1,000 req/s on the 2-core machine, leaving the servers too little to answer on
/// time; this sender costs a fraction of that, as an external load generator (wrk) would.
struct OpenLoopReader: Sendable {
    /// What is read for a customer: the API's view (with the API key), or the console's page of
    /// the customer or its overview (with an operator's session cookie).
    enum Page: Sendable {
        case customerAPI(apiKey: String)
        case consoleCustomer(cookie: String)
        case consoleOverview(cookie: String)
    }

    let loop: any EventLoop
    let host: String
    let port: Int
    let page: Page
    /// Customers are picked uniformly from 1...customers.
    let customers: Int
    /// Requests per second.
    let rate: Double
    /// Every n-th answer is decoded and checked to be the customer asked for (decoding is client
    /// work, kept out of the latency).
    let checkEvery: Int
    /// Connections opened at most; a request scheduled while all are busy waits for one (its wait
    /// counts in its latency).
    var maxConnections = 64

    /// What one window of requests measured.
    struct Window: Sendable, Codable {
        /// Milliseconds from scheduled send to the end of the answer, of the requests that succeeded.
        var latencies: [Double] = []
        /// Milliseconds from scheduled send to the request's write, of every request sent: a send
        /// timer that fired late (this process not run on time) or a wait for a free connection.
        /// Part of the latency that the server never saw.
        var sendLateness: [Double] = []
        var failures = 0
        var firstFailure: String?
        /// Seconds from the first scheduled send to the last answer.
        var elapsed: Double = 0
        var requests = 0
    }

    /// Sends `rate × seconds` requests on schedule over `connections` (kept open between windows)
    /// and waits for all of them.
    func run(seconds: Double, random: inout SplitMix64, connections: ConnectionPool) async -> Window {
        let count = max(1, Int((rate * seconds).rounded()))
        var numbers: [Int] = []
        numbers.reserveCapacity(count)
        for _ in 0..<count { numbers.append(Int(random.next() % UInt64(customers)) + 1) }
        let run = Run(reader: self, numbers: numbers, connections: connections)
        return await withCheckedContinuation { continuation in
            loop.execute { run.start { continuation.resume(returning: $0) } }
        }
    }

    /// The request for customer number `number`, and what its answer must show.
    fileprivate func request(for number: Int) -> (head: HTTPRequestHead, id: String) {
        let id = SeedSQL.customerID(number)
        var headers = HTTPHeaders([("Host", "\(host):\(port)")])
        let uri: String
        switch page {
        case .customerAPI(let apiKey):
            uri = "/v1/customers/" + id
            headers.add(name: "Authorization", value: "Bearer " + apiKey)
        case .consoleCustomer(let cookie):
            uri = "/console/customer?id=" + id
            headers.add(name: "Cookie", value: cookie)
        case .consoleOverview(let cookie):
            uri = "/console/overview"
            headers.add(name: "Cookie", value: cookie)
        }
        return (HTTPRequestHead(version: .http1_1, method: .GET, uri: uri, headers: headers), id)
    }

    private static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()

    /// Nil when the answer is the page of customer `id` (checked in full when `decode`), else why not.
    fileprivate func problem(status: HTTPResponseStatus, body: ByteBuffer, id: String, decode: Bool) -> String? {
        guard status == .ok else {
            return "HTTP \(status.code) for \(id): \(String(buffer: body).prefix(200))"
        }
        switch page {
        case .customerAPI:
            guard decode else { return nil }
            guard let view = try? Self.decoder.decode(CustomerView.self, from: Data(buffer: body)) else {
                return "the answer for \(id) is not a customer view"
            }
            return view.customerID.rawValue == id ? nil : "asked for \(id), answered for \(view.customerID)"
        case .consoleCustomer:
            return String(buffer: body).contains("<code id=\"customer-id\">\(id)</code>")
                ? nil : "the console's page for \(id) does not show it"
        case .consoleOverview:
            return String(buffer: body).contains("id=\"states-chart\"") ? nil : "the console's overview has no chart"
        }
    }

    /// The open connections of one load process, reused from window to window. Used on its event
    /// loop only.
    final class ConnectionPool: @unchecked Sendable {
        fileprivate var idle: [HTTPAnswerHandler] = []
        fileprivate var open = 0
        /// The running window's hand-out of connections to waiting requests: a connection opened in
        /// one window may close in a later one.
        fileprivate var sendWaiting: (() -> Void)?
    }

    /// One window: the schedule, the requests waiting for a connection, the outcomes. Used on the
    /// event loop only.
    private final class Run: @unchecked Sendable {
        let reader: OpenLoopReader
        let numbers: [Int]
        let connections: ConnectionPool
        let interval: Int64
        var start = NIODeadline.now()
        var next = 0
        /// Requests due but without a free connection, oldest first.
        var waiting: [(index: Int, scheduled: NIODeadline)] = []
        var waitingHead = 0
        /// Connections being opened for waiting requests.
        var openingNow = 0
        var answered = 0
        var window = Window()
        var done: ((Window) -> Void)?

        init(reader: OpenLoopReader, numbers: [Int], connections: ConnectionPool) {
            self.reader = reader
            self.numbers = numbers
            self.connections = connections
            interval = Int64((1e9 / reader.rate).rounded())
            window.requests = numbers.count
            window.latencies.reserveCapacity(numbers.count)
            window.sendLateness.reserveCapacity(numbers.count)
        }

        func start(_ done: @escaping (Window) -> Void) {
            self.done = done
            connections.sendWaiting = { self.sendWaiting() }
            start = NIODeadline.now() + .milliseconds(2)
            scheduleNext()
        }

        private func scheduled(_ index: Int) -> NIODeadline { start + .nanoseconds(interval * Int64(index)) }

        /// Sends every request now due, then sleeps until the next one is.
        private func scheduleNext() {
            let now = NIODeadline.now()
            while next < numbers.count, scheduled(next) <= now {
                waiting.append((next, scheduled(next)))
                next += 1
            }
            sendWaiting()
            guard next < numbers.count else { return }
            reader.loop.scheduleTask(deadline: scheduled(next)) { self.scheduleNext() }
        }

        /// Gives waiting requests the idle connections, opening new ones up to the limit.
        private func sendWaiting() {
            while waitingHead < waiting.count {
                if let connection = connections.idle.popLast() {
                    let (index, scheduled) = waiting[waitingHead]
                    waitingHead += 1
                    send(index, scheduled: scheduled, on: connection)
                } else {
                    // One connection on its way per waiting request, up to the limit.
                    while connections.open < reader.maxConnections && openingNow < waiting.count - waitingHead {
                        connect()
                    }
                    return
                }
            }
            waiting.removeAll(keepingCapacity: true)
            waitingHead = 0
        }

        private func connect() {
            connections.open += 1
            openingNow += 1
            let connection = HTTPAnswerHandler()
            ClientBootstrap(group: reader.loop)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        try channel.pipeline.syncOperations.addHandler(connection)
                    }
                }
                .connect(host: reader.host, port: reader.port)
                .whenComplete { result in
                    self.openingNow -= 1
                    switch result {
                    case .success(let channel):
                        connection.channel = channel
                        let connections = self.connections
                        channel.closeFuture.whenComplete { _ in
                            connections.open -= 1
                            connections.idle.removeAll { $0 === connection }
                            connections.sendWaiting?()
                        }
                        self.connections.idle.append(connection)
                    case .failure(let error):
                        self.connections.open -= 1
                        // The oldest waiting request fails, so that a refused connection ends the run.
                        if self.waitingHead < self.waiting.count {
                            self.waitingHead += 1
                            self.record(.failure("cannot connect: \(error)"))
                        }
                    }
                    self.sendWaiting()
                }
        }

        private func send(_ index: Int, scheduled: NIODeadline, on connection: HTTPAnswerHandler) {
            let (head, id) = reader.request(for: numbers[index])
            let decode = index % reader.checkEvery == 0
            window.sendLateness.append(Double((NIODeadline.now() - scheduled).nanoseconds) / 1e6)
            connection.onAnswer = { status, body in
                let latency = Double((NIODeadline.now() - scheduled).nanoseconds) / 1e6
                if let problem = self.reader.problem(status: status, body: body, id: id, decode: decode) {
                    self.record(.failure(problem))
                } else {
                    self.record(.success(latency))
                }
                self.connections.idle.append(connection)
                self.sendWaiting()
            }
            connection.onFailure = { reason in self.record(.failure("\(id): \(reason)")) }
            guard let channel = connection.channel else { return }
            channel.write(HTTPClientRequestPart.head(head), promise: nil)
            channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        }

        private enum Outcome {
            case success(Double)
            case failure(String)
        }

        private func record(_ outcome: Outcome) {
            switch outcome {
            case .success(let milliseconds): window.latencies.append(milliseconds)
            case .failure(let reason):
                window.failures += 1
                if window.firstFailure == nil { window.firstFailure = reason }
            }
            answered += 1
            guard answered == numbers.count, let done else { return }
            self.done = nil
            connections.sendWaiting = nil
            window.elapsed = Double((NIODeadline.now() - start).nanoseconds) / 1e9
            done(window)
        }
    }
}

/// A small seedable generator (SplitMix64), so a run's customer sequence can be repeated.
struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
