public import AsyncHTTPClient
public import NIOCore

/// How verifyReceipt requests reach an endpoint. Narrow on purpose: tests and the store simulator
/// can supply their own; ``HTTPVerifyReceiptTransport`` is the real one.
public protocol VerifyReceiptTransport: Sendable {
    /// POSTs a JSON `body` to `url` and returns the HTTP status and the response body.
    ///
    /// Throw ``VerifyReceiptResponseTooLargeError`` when the body exceeds the transport's limit; any
    /// other error counts as a transport failure (retried by the client's policy).
    func post(json body: [UInt8], to url: String) async throws -> VerifyReceiptHTTPResponse
}

/// An HTTP answer: its status code and body.
public struct VerifyReceiptHTTPResponse: Hashable, Sendable {
    /// The HTTP status code.
    public var statusCode: Int
    /// The response body.
    public var body: [UInt8]

    /// An answer with the given status and body.
    public init(statusCode: Int, body: [UInt8]) {
        self.statusCode = statusCode
        self.body = body
    }
}

/// The response body was larger than the transport accepts.
public struct VerifyReceiptResponseTooLargeError: Error, Hashable, Sendable {
    /// The limit, in bytes.
    public var limit: Int
    /// An error naming the limit that was exceeded.
    public init(limit: Int) { self.limit = limit }
}

/// verifyReceipt over HTTPS with AsyncHTTPClient.
public struct HTTPVerifyReceiptTransport: VerifyReceiptTransport {
    let httpClient: HTTPClient
    let timeout: TimeAmount
    let maxResponseBytes: Int

    /// - Parameters:
    ///   - timeout: how long one request may take, connecting included.
    ///   - maxResponseBytes: the largest body read (responses with a long subscription history and
    ///     `latest_receipt` run to hundreds of KiB).
    public init(
        httpClient: HTTPClient = .shared, timeout: TimeAmount = .seconds(30), maxResponseBytes: Int = 16 << 20
    ) {
        self.httpClient = httpClient
        self.timeout = timeout
        self.maxResponseBytes = maxResponseBytes
    }

    /// POSTs `body` with `Content-Type: application/json` and collects at most `maxResponseBytes`.
    public func post(json body: [UInt8], to url: String) async throws -> VerifyReceiptHTTPResponse {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: body))
        let response = try await httpClient.execute(request, timeout: timeout)
        let collected: ByteBuffer
        do {
            collected = try await response.body.collect(upTo: maxResponseBytes)
        } catch is NIOTooManyBytesError {
            throw VerifyReceiptResponseTooLargeError(limit: maxResponseBytes)
        }
        return VerifyReceiptHTTPResponse(statusCode: Int(response.status.code), body: Array(buffer: collected))
    }
}
