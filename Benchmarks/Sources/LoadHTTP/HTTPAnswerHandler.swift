public import NIOCore
public import NIOHTTP1

/// The load generators' end of one HTTP/1.1 connection (customer-read's `OpenLoopReader`,
/// ingest-throughput's `ClosedLoopPoster`): collects the answer to the request in flight and hands
/// it over whole. One request at a time; used on the channel's event loop only.
public final class HTTPAnswerHandler: ChannelInboundHandler, @unchecked Sendable {
    public typealias InboundIn = HTTPClientResponsePart

    public var channel: (any Channel)?
    /// Told the status and body of the answer to the request in flight (nil when there is none).
    public var onAnswer: ((HTTPResponseStatus, ByteBuffer) -> Void)?
    /// Told why the request in flight got no answer.
    public var onFailure: ((String) -> Void)?
    private var status = HTTPResponseStatus.ok
    private var body = ByteBuffer()

    public init() {}

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = head.status
            body.clear()
        case .body(var part): body.writeBuffer(&part)
        case .end:
            let answer = onAnswer
            (onAnswer, onFailure) = (nil, nil)
            answer?(status, body)
        }
    }

    public func channelInactive(context: ChannelHandlerContext) {
        let failure = onFailure
        (onAnswer, onFailure) = (nil, nil)
        failure?("the connection closed before the answer")
        context.fireChannelInactive()
    }

    public func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
