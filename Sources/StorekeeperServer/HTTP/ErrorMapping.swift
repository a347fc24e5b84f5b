import AppStoreServer
import GooglePlay
import Hummingbird
import Storekeeper
import StorekeeperStorage

/// Turns what the service layer throws into the HTTP answer a caller (or a store) should get:
/// bad input is a 4xx with a specific code; storage or store outages are 5xx so stores retry.
enum ErrorMapping {
    static func apiError(for error: any Error) -> APIError {
        switch error {
        case let error as APIError:
            return error
        case let error as SignedDataVerificationError:
            return APIError(.badRequest, "invalid-signed-data", "\(error.reason.rawValue): \(error.detail)")
        case let error as ProcessingError:
            switch error.reason {
            case .malformedPayload: return APIError(.badRequest, error.reason.rawValue, error.detail)
            case .unknownApp, .environmentNotAccepted:
                return APIError(.unprocessableContent, error.reason.rawValue, error.detail)
            case .purchaseNotFound: return APIError(.notFound, error.reason.rawValue, error.detail)
            case .ownershipConflict: return APIError(.conflict, error.reason.rawValue, error.detail)
            case .notConfigured: return APIError(.unprocessableContent, error.reason.rawValue, error.detail)
            case .storeUnavailable: return APIError(.badGateway, error.reason.rawValue, error.detail)
            }
        case let error as ServiceError:
            switch error {
            case .customerNotFound(let id):
                return APIError(.notFound, "customer-not-found", "no customer \(id); create it with PUT first")
            case .ownershipConflict(let key, _):
                return APIError(
                    .conflict, "ownership-conflict",
                    "purchase \(key.id) belongs to another customer and the ownership policy keeps it there"
                )
            case .insufficientBalance(let balance, let available, let requested):
                return APIError(
                    .conflict, "insufficient-balance", "balance \(balance) has \(available), \(requested) requested"
                )
            case .idempotencyKeyReused(let key):
                return APIError(
                    .conflict, "idempotency-key-reused", "idempotency key \(key) was used for a different debit"
                )
            }
        case let error as AppStoreServerAPIError:
            if error.httpStatus == 404 {
                return APIError(.notFound, "purchase-not-found", "the App Store does not know it: \(error.message)")
            }
            return APIError(.badGateway, "store-unavailable", "App Store Server API: \(error)")
        case let error as PushAuthenticationError:
            if error.reason == .jwksUnavailable {
                // Google's keys couldn't be fetched: not the pusher's fault, and a 5xx makes Pub/Sub retry.
                return APIError(.serviceUnavailable, "push-keys-unavailable", error.detail)
            }
            return APIError(.unauthorized, "invalid-push-token", "\(error.reason.rawValue): \(error.detail)")
        case let error as AndroidPublisherError:
            if error.reason == .notFound || error.isGone {
                return APIError(.notFound, "purchase-not-found", "Google Play does not know it: \(error.message)")
            }
            return APIError(.badGateway, "store-unavailable", "Android Publisher API: \(error)")
        case let error as StorageError:
            return APIError(.serviceUnavailable, "storage-unavailable", error.description)
        default:
            return APIError(
                .internalServerError, "internal", "unexpected error: \(String(describing: type(of: error)))")
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
            let mapped = ErrorMapping.apiError(for: error)
            metrics.request(route: route, status: Int(mapped.status.code))
            throw mapped
        }
    }
}
