import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// When a request reached the simulator: stamped on the event loop as its head is read, before it
/// waits for a task to handle it. The simulator often runs inside a busy process (the whole test
/// suite), where a request can wait seconds for a handler; the request log's arrival times are the
/// store's view of when calls came in, which quota windows are counted on, so they are taken here.
struct ArrivalStamp: Sendable {
    /// The field the stamp travels in from the channel to the router; a client's own is replaced.
    static let field = HTTPField.Name("X-Storekeeper-Simulator-Arrival")

    /// The instant stamps count from.
    let reference: ContinuousClock.Instant

    /// The channel handler that stamps each request head (one per connection).
    func makeHandler() -> any RemovableChannelHandler { Handler(stamp: self) }

    /// The arrival a request was stamped with, or now when it carries no stamp.
    func arrival(of request: HTTPRequest) -> ContinuousClock.Instant {
        guard let field = Self.field, let text = request.headerFields[field], let nanoseconds = Int64(text) else {
            return .now
        }
        return reference.advanced(by: .nanoseconds(nanoseconds))
    }

    func stamp(_ head: inout HTTPRequest, at instant: ContinuousClock.Instant) {
        guard let field = Self.field else { return }
        let elapsed = (instant - reference).components
        let nanoseconds = elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000
        head.headerFields[field] = String(nanoseconds)
    }

    private final class Handler: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPRequestPart
        typealias InboundOut = HTTPRequestPart

        let stamp: ArrivalStamp

        init(stamp: ArrivalStamp) { self.stamp = stamp }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case .head(var head) = unwrapInboundIn(data) else {
                context.fireChannelRead(data)
                return
            }
            stamp.stamp(&head, at: .now)
            context.fireChannelRead(wrapInboundOut(.head(head)))
        }
    }
}
