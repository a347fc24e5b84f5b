import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTesting
import NIOPosix
import Testing

@testable import StorekeeperServer

/// The server's HTTP connections are handled on their own event loops (`EventLoopChildChannel`),
/// over real loopback HTTP: a handler runs there, and resumes there after awaiting work finished on
/// another thread (as a storage call's is).
struct EventLoopChildChannelTests {
    /// Where the handler ran: "<before> <after>", each `loop` or `pool`.
    static func whereHandled(_ server: HTTPServerBuilder) async throws -> String {
        let router = Router()
        router.get("where") { _, _ -> String in
            let before = MultiThreadedEventLoopGroup.currentEventLoop == nil ? "pool" : "loop"
            await withCheckedContinuation { (resumed: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().async { resumed.resume() }
            }
            let after = MultiThreadedEventLoopGroup.currentEventLoop == nil ? "pool" : "loop"
            return "\(before) \(after)"
        }
        return try await Application(router: router, server: server).test(.live) { client in
            try await client.execute(uri: "/where", method: .get) { response in
                #expect(response.status == .ok)
                return String(buffer: response.body)
            }
        }
    }

    @Test func requestsAreHandledOnTheConnectionsEventLoop() async throws {
        #expect(try await Self.whereHandled(.http1OnConnectionEventLoops()) == "loop loop")
    }

    /// The control: Hummingbird's own HTTP/1.1 server handles requests on the cooperative pool.
    @Test func hummingbirdsDefaultHandlesThemOnThePool() async throws {
        #expect(try await Self.whereHandled(.http1()) == "pool pool")
    }
}
