import Hummingbird
import NIOCore
import StorekeeperStorage

/// Liveness, readiness (the database answers) and Prometheus metrics.
struct HealthRoutes {
    let storage: any Storage
    let metrics: ServerMetrics
    /// Brings the inbox gauges up to date before metrics are rendered.
    let refreshGauges: @Sendable () async throws -> Void

    struct Status: Encodable {
        var status: String
    }

    func register(on router: Router<BasicRequestContext>) {
        router.get("health") { _, _ in try JSONResponse.make(Status(status: "ok")) }
        router.get("ready") { _, _ in
            do {
                _ = try await storage.schemaVersion()
                return try JSONResponse.make(Status(status: "ready"))
            } catch {
                return try JSONResponse.make(Status(status: "storage unavailable"), status: .serviceUnavailable)
            }
        }
        router.get("metrics") { _, _ in
            try? await refreshGauges()
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                body: .init(byteBuffer: ByteBuffer(string: metrics.exposition()))
            )
        }
    }
}
