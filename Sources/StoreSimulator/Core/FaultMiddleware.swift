import Hummingbird

/// Applies the ``FaultInjector``'s waiting faults to the store routes it wraps.
struct FaultMiddleware<Context: RequestContext>: RouterMiddleware {
    let faults: FaultInjector

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let fault = faults.take(forPath: request.uri.path) else {
            return try await next(request, context)
        }
        if let delay = fault.delaySeconds, delay > 0 {
            try await Task.sleep(for: .milliseconds(Int(delay * 1000)))
        }
        guard let status = fault.status else {
            return try await next(request, context)
        }
        var headers = HTTPFields()
        if let retryAfter = fault.retryAfterSeconds {
            headers[.retryAfter] = String(retryAfter)
        }
        return Response(status: .init(code: status), headers: headers)
    }
}
