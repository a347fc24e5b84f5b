import Foundation
public import Hummingbird
import NIOCore
import Storekeeper

/// JSON answers and errors in one shape: `{"error": {"code": "...", "message": "..."}}`.
enum JSONResponse {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    static func make(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        make(json: try encoder.encode(value), status: status)
    }

    /// The customer view, the API's most frequent answer, written by hand (the same bytes as
    /// ``encoder``; see `CustomerView.jsonData()`).
    static func make(_ view: CustomerView, status: HTTPResponse.Status = .ok) -> Response {
        make(json: view.jsonData(), status: status)
    }

    private static func make(json: Data, status: HTTPResponse.Status) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(data: json))
        )
    }
}

/// A 4xx/5xx answer: the error's code (which decides the status) and its sentence for people.
/// What it translates (``ServerError/underlying``) is logged, never answered.
extension ServerError: HTTPResponseError {
    public var status: HTTPResponse.Status { code.status }

    struct Body: Encodable {
        struct Detail: Encodable {
            var code: String
            var message: String
        }
        var error: Detail
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        try JSONResponse.make(Body(error: .init(code: code.rawValue, message: message)), status: status)
    }
}
