import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore

/// `storekeeper health`: asks a running server's health or readiness endpoint, so that a container
/// health check needs no HTTP client in the image.
struct HealthCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "health",
        abstract: "Ask a running server whether it is healthy (exit 0) or not (exit 1).",
        discussion: """
            Sends GET to --url (default http://127.0.0.1:8080/health; /ready also requires the storage to \
            answer) and exits 0 when it answers 200 within --timeout. Otherwise prints one line on standard \
            error saying what it got and exits 1. Meant for container health checks: the runtime image \
            carries no curl.
            """
    )

    @Option(help: "The endpoint to ask.")
    var url: String = "http://127.0.0.1:8080/health"

    @Option(help: "Seconds to wait for the whole answer (1 to 300).")
    var timeout: Int = 5

    /// The most of an answer's body read: health answers are a few bytes.
    static let maxBodyBytes = 64 * 1024

    func run() async throws {
        guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme ?? ""), parsed.host != nil
        else {
            throw UsageError("--url takes an http(s) URL")
        }
        guard (1...300).contains(timeout) else { throw UsageError("--timeout takes 1 to 300 seconds") }
        let status: UInt
        do {
            let response = try await HTTPClient.shared.execute(
                HTTPClientRequest(url: url), timeout: .seconds(Int64(timeout)))
            _ = try await response.body.collect(upTo: Self.maxBodyBytes)
            status = response.status.code
        } catch {
            standardError("unhealthy: \(url): \(error)")
            throw ExitCode(1)
        }
        guard status == 200 else {
            standardError("unhealthy: \(url) answered HTTP \(status)")
            throw ExitCode(1)
        }
        print("healthy: \(url)")
    }
}
