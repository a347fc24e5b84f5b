import Foundation
import Hummingbird
import NIOCore

/// JSON answers and errors in one shape: `{"error": {"code": "...", "message": "..."}}`.
enum JSONResponse {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    static func make(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        let data = try encoder.encode(value)
        return Response(
            status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(data: data))
        )
    }
}

/// A 4xx/5xx answer with a machine-readable code and a sentence for people.
struct APIError: HTTPResponseError {
    var status: HTTPResponse.Status
    var code: String
    var message: String

    init(_ status: HTTPResponse.Status, _ code: String, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    struct Body: Encodable {
        struct Detail: Encodable {
            var code: String
            var message: String
        }
        var error: Detail
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        try JSONResponse.make(Body(error: .init(code: code, message: message)), status: status)
    }
}
