import NIOCore
import NIOPosix
import Synchronization

/// A TCP proxy on loopback that the test can cut and restore: while cut, open connections are
/// closed and new ones are closed as soon as they are accepted — to the client, the server behind
/// it is lost, without stopping that server.
final class LoopbackProxy: Sendable {
    let targetHost: String
    let targetPort: Int
    private struct State {
        var cut = false
        var connections: [any Channel] = []
    }
    private let state = Mutex(State())
    private let listener: Mutex<(any Channel)?> = Mutex(nil)

    init(targetHost: String, targetPort: Int) {
        self.targetHost = targetHost
        self.targetPort = targetPort
    }

    /// Starts listening on a free loopback port; returns it.
    func start() async throws -> Int {
        let (host, port, state) = (targetHost, targetPort, self)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { inbound in
                guard !state.isCut else { return inbound.close() }
                let inboundRelay = Relay()
                return inbound.pipeline.addHandler(inboundRelay).flatMap {
                    ClientBootstrap(group: inbound.eventLoop)
                        .channelInitializer { outbound in outbound.pipeline.addHandler(Relay(partner: inbound)) }
                        .connect(host: host, port: port)
                }.map { outbound in
                    inboundRelay.partner = outbound
                    state.track(inbound, outbound)
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        listener.withLock { $0 = channel }
        guard let bound = channel.localAddress?.port else { throw ChannelError.unknownLocalAddress }
        return bound
    }

    private var isCut: Bool { state.withLock(\.cut) }

    private func track(_ channels: any Channel...) {
        let cut = state.withLock { state in
            state.connections.removeAll { !$0.isActive }
            state.connections += channels
            return state.cut
        }
        if cut { for channel in channels { channel.close(promise: nil) } }
    }

    /// Closes every connection through the proxy and refuses new ones until ``restore()``.
    func cut() {
        let open = state.withLock { state in
            state.cut = true
            defer { state.connections = [] }
            return state.connections
        }
        for channel in open { channel.close(promise: nil) }
    }

    /// Lets connections through again.
    func restore() {
        state.withLock { $0.cut = false }
    }

    func stop() async {
        cut()
        let channel = listener.withLock { $0 }
        try? await channel?.close()
    }
}

/// Writes what one side reads to the other, and closes the other when one closes. Both sides of a
/// connection run on one event loop; `partner` is set on it before any data flows back.
private final class Relay: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    var partner: (any Channel)?

    init(partner: (any Channel)? = nil) {
        self.partner = partner
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        partner?.writeAndFlush(unwrapInboundIn(data), promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        partner?.close(promise: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
