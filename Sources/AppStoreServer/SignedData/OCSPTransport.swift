public import AsyncHTTPClient
import Foundation
public import NIOCore
import Synchronization
import X509

/// How OCSP requests reach a responder. Narrow on purpose: tests and the simulator supply their own.
public protocol OCSPTransport: Sendable {
    /// POSTs a DER-encoded OCSP request to `uri` and returns the DER-encoded response.
    ///
    /// Throw ``OCSPUnreachableError`` when the responder could not be asked (transport error,
    /// timeout, 5xx): verification then fails with a retryable error. Any other error fails it
    /// for good.
    func send(request: [UInt8], to uri: String) async throws -> [UInt8]
}

/// The responder could not be reached; asking again later may succeed.
public struct OCSPUnreachableError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(description: String) { self.description = description }
}

/// The responder refused the request (a 4xx answer).
public struct OCSPRejectedError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(description: String) { self.description = description }
}

/// OCSP over HTTP POST (RFC 6960 appendix A) with AsyncHTTPClient.
public struct HTTPOCSPTransport: OCSPTransport {
    let httpClient: HTTPClient
    let timeout: TimeAmount
    let maxResponseBytes: Int

    /// - Parameter timeout: how long one request may take, connecting included (AsyncHTTPClient keeps
    ///   retrying a refused connection until then).
    public init(httpClient: HTTPClient = .shared, timeout: TimeAmount = .seconds(5), maxResponseBytes: Int = 64 * 1024)
    {
        self.httpClient = httpClient
        self.timeout = timeout
        self.maxResponseBytes = maxResponseBytes
    }

    public func send(request: [UInt8], to uri: String) async throws -> [UInt8] {
        var httpRequest = HTTPClientRequest(url: uri)
        httpRequest.method = .POST
        httpRequest.headers.add(name: "Content-Type", value: "application/ocsp-request")
        httpRequest.body = .bytes(ByteBuffer(bytes: request))
        let response: HTTPClientResponse
        do {
            response = try await httpClient.execute(httpRequest, timeout: timeout)
        } catch {
            throw OCSPUnreachableError(description: "OCSP request to \(uri) failed: \(error)")
        }
        if response.status.code >= 500 {
            throw OCSPUnreachableError(description: "OCSP responder \(uri) answered HTTP \(response.status.code)")
        }
        guard response.status == .ok else {
            throw OCSPRejectedError(description: "OCSP responder \(uri) answered HTTP \(response.status.code)")
        }
        do {
            return Array(buffer: try await response.body.collect(upTo: maxResponseBytes))
        } catch {
            throw OCSPUnreachableError(description: "reading the OCSP response from \(uri) failed: \(error)")
        }
    }
}

/// Adapts an ``OCSPTransport`` to swift-certificates' requester, remembering whether any query
/// failed to reach its responder. Every failure is terminal: with hard failure, "could not ask"
/// must never pass as "good".
final class RecordingOCSPRequester: OCSPRequester {
    let transport: any OCSPTransport
    private let unreachable = Mutex<String?>(nil)

    init(transport: any OCSPTransport) {
        self.transport = transport
    }

    /// The first "could not reach the responder" failure seen, if any.
    var firstUnreachableFailure: String? { unreachable.withLock { $0 } }

    func query(request: [UInt8], uri: String) async -> OCSPRequesterQueryResult {
        do {
            return .response(try await transport.send(request: request, to: uri))
        } catch let error as OCSPUnreachableError {
            unreachable.withLock { $0 = $0 ?? error.description }
            return .terminalError(error)
        } catch is CancellationError {
            // The policy cancels a query that passes its deadline.
            unreachable.withLock { $0 = $0 ?? "the OCSP request to \(uri) timed out" }
            return .terminalError(OCSPUnreachableError(description: "the OCSP request to \(uri) timed out"))
        } catch {
            return .terminalError(error)
        }
    }
}
