import Hummingbird
import StorekeeperStorage

/// Turns what a route throws into the answer a caller (or a store) should get. The store
/// adapters already translated their stores' errors into ``ServerError``; what is left is
/// storage (a 503, so stores retry) and anything unexpected (a 500 naming only its type).
enum ErrorMapping {
    static func serverError(for error: any Error) -> ServerError {
        switch error {
        case let error as ServerError:
            return error
        case let error as StorageError:
            return ServerError(.storageUnavailable, error.description, underlying: error)
        default:
            return ServerError(.internal, "unexpected error: \(String(describing: type(of: error)))")
        }
    }
}

/// Maps every error a route throws to its specific answer (see ``ErrorMapping``), and counts
/// answers by route for /metrics.
struct ErrorMappingMiddleware<Context: RequestContext>: RouterMiddleware {
    let metrics: ServerMetrics

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let route = context.endpointPath ?? "unmatched"
        do {
            let response = try await next(request, context)
            metrics.request(route: route, status: Int(response.status.code))
            return response
        } catch let error as HTTPError {
            metrics.request(route: route, status: Int(error.status.code))
            throw error
        } catch {
            let mapped = ErrorMapping.serverError(for: error)
            metrics.request(route: route, status: Int(mapped.status.code))
            throw mapped
        }
    }
}
