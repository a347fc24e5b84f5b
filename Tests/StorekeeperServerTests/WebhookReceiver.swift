import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A real HTTP receiver of webhooks on loopback, for the delivery tests: it records each request
/// and answers as told (2xx, a status, or only after a delay).
final class WebhookReceiver: Sendable {
    struct Received: Sendable {
        var body: Data
        var signature: String
        var eventID: String
        var type: String
        /// Whether this request was answered 2xx in time (the server may consider it delivered).
        var accepted: Bool
    }

    enum Answer: Sendable {
        case ok
        case status(Int)
        /// 200 after the duration: later than the sender waits in the tests that use it.
        case slow(Duration)
        /// 200 at once, then a body that never ends: 4 KiB chunks, one a millisecond (4 MB/s, and not
        /// a loop that takes a core from the server under test), for as long as the sender reads.
        case endlessBody
        /// 200 at once, then a body of one byte every `interval`, never ending.
        case tricklingBody(Duration)
    }

    private let state = Mutex<(answer: Answer, received: [Received])>((.ok, []))

    func answer(_ answer: Answer) { state.withLock { $0.answer = answer } }
    var received: [Received] { state.withLock { $0.received } }
    /// What was accepted, deduplicated by event id (what a receiver following the docs keeps).
    var acceptedOnce: [Received] {
        var seen = Set<String>()
        return received.filter { $0.accepted && seen.insert($0.eventID).inserted }
    }

    /// Runs the receiver on `port` (0: any) while `body` runs; `body` gets the port.
    func run<Result: Sendable>(port: Int, _ body: (Int) async throws -> Result) async throws -> Result {
        let router = Router()
        router.post("hook") { request, _ -> Response in
            let data = Data(buffer: try await request.body.collect(upTo: 1 << 20))
            let answer = self.state.withLock { $0.answer }
            let accepted: Bool
            switch answer {
            case .ok, .endlessBody, .tricklingBody: accepted = true
            // Slower than the sender waits: it gave up, so nothing was accepted.
            case .slow: accepted = false
            case .status(let code): accepted = (200..<300).contains(code)
            }
            // Recorded as it arrives: a slow answer recorded when it ends fell into whatever the
            // test counted next (a replay counted one delivery too many under load).
            self.state.withLock {
                $0.received.append(
                    Received(
                        body: data, signature: request.headers[HTTPField.Name("Storekeeper-Signature")!] ?? "",
                        eventID: request.headers[HTTPField.Name("Storekeeper-Event-Id")!] ?? "",
                        type: request.headers[HTTPField.Name("Storekeeper-Event-Type")!] ?? "", accepted: accepted))
            }
            if case .slow(let delay) = answer { try await Task.sleep(for: delay) }
            switch answer {
            case .status(let code): return Response(status: .init(code: code))
            case .endlessBody:
                let chunk = ByteBuffer(repeating: UInt8(ascii: "x"), count: 4096)
                return Response(
                    status: .ok,
                    body: ResponseBody { writer in
                        while true {
                            try Task.checkCancellation()
                            try await writer.write(chunk)
                            try await Task.sleep(for: .milliseconds(1))
                        }
                    })
            case .tricklingBody(let interval):
                return Response(
                    status: .ok,
                    body: ResponseBody { writer in
                        while true {
                            try Task.checkCancellation()
                            try await writer.write(ByteBuffer(string: "x"))
                            try await Task.sleep(for: interval)
                        }
                    })
            case .ok, .slow: return Response(status: .ok)
            }
        }
        let (bound, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) }, logger: TemporaryStorage.quietLogger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                // A server that fails to start (its port taken) ends the stream, so nobody waits
                // for a port that never comes.
                defer { continuation.finish() }
                try await app.runService(gracefulShutdownSignals: [])
            }
            var ports = bound.makeAsyncIterator()
            guard let actual = await ports.next() else {
                try await group.next()
                throw ReceiverStopped(port: port)
            }
            do {
                let result = try await body(actual)
                group.cancelAll()
                return result
            } catch {
                group.cancelAll()
                throw error
            }
        }
    }

    /// Checks a delivery's signature header with HMAC-SHA256 computed here, independently of the
    /// server's code: `t=<seconds>,v1=<hex>[,v1=<hex>]` over "<t>.<body>".
    static func signatureMatches(_ header: String, body: Data, secret: String) -> Bool {
        let parts = header.split(separator: ",").map { $0.split(separator: "=", maxSplits: 1).map(String.init) }
        guard let timestamp = parts.first(where: { $0.first == "t" })?.last else { return false }
        let expected = HMAC<SHA256>.authenticationCode(
            for: Data("\(timestamp).".utf8) + body, using: SymmetricKey(data: Data(secret.utf8))
        ).map { String(format: "%02x", $0) }.joined()
        return parts.contains { $0.first == "v1" && $0.last == expected }
    }

    static func timestamp(_ header: String) -> Int? {
        header.split(separator: ",").first { $0.hasPrefix("t=") }.flatMap { Int($0.dropFirst(2)) }
    }
}

/// The receiver's server stopped before it was bound, without saying why.
struct ReceiverStopped: Error, CustomStringConvertible {
    let port: Int
    var description: String { "the webhook receiver on port \(port) stopped before it was bound" }
}

/// A loopback port held, bound but not listened on, until ``release()``: connections to it are
/// refused, and no other test's server can take it meanwhile. (A port found free and released at
/// once was free for any server to take until the test listened on it, seconds later.)
final class ReservedPort: Sendable {
    let port: Int
    private let descriptor: Mutex<Int32?>

    init() throws {
        let held = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard held >= 0 else { throw ReservationFailed(step: "socket", code: errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(held, address, length) == 0 && getsockname(held, address, &length) == 0
            }
        }
        guard bound else {
            let code = errno
            close(held)
            throw ReservationFailed(step: "bind", code: code)
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        descriptor = Mutex(held)
    }

    /// Frees the port for the server that is to listen on it.
    func release() {
        if let held = descriptor.withLock({ $0.take() }) { close(held) }
    }

    deinit { release() }

    struct ReservationFailed: Error {
        var step: String
        var code: Int32
    }
}
