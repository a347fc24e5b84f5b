import AppStoreServer
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import StoreSimulator
import Testing

@Suite struct SimulatorClockTests {
    @Test func runsAtItsRateAndAdvancesByHand() {
        let real = ManualClock(Date(timeIntervalSince1970: 1_000_000))
        let start = Date(timeIntervalSince1970: 2_000_000)
        let clock = SimulatorClock(start: start, rate: 3_600, real: real)
        #expect(clock.now() == start)
        real.advance(by: 2)
        #expect(clock.now() == start.addingTimeInterval(7_200))
        clock.advance(by: 86_400)
        #expect(clock.now() == start.addingTimeInterval(7_200 + 86_400))
        clock.setRate(0)
        real.advance(by: 100)
        #expect(clock.now() == start.addingTimeInterval(7_200 + 86_400))
        clock.advance(by: -50)  // never backwards
        #expect(clock.now() == start.addingTimeInterval(7_200 + 86_400))
    }
}

@Suite struct SimulatorServerTests {
    func request(
        _ method: HTTPMethod, _ url: String, json: String? = nil, bytes: [UInt8]? = nil
    ) async throws -> HTTPResult {
        try await loopbackRequest(method, url, json: json, bytes: bytes)
    }

    @Test func controlAPIDrivesTheClock() async throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        try await StoreSimulator.withRunning(configuration: .init(start: start, rate: 0)) { simulator, endpoints in

            let clock = try await request(.GET, endpoints.controlURL + "/clock")
            #expect(clock.status == 200)
            #expect(clock.body["now"] as? Int64 == 1_800_000_000_000)
            let advanced = try await request(
                .POST, endpoints.controlURL + "/clock/advance", json: #"{"seconds": 259200}"#)
            #expect(advanced.body["now"] as? Int64 == 1_800_259_200_000)
            #expect(simulator.clock.now() == start.addingTimeInterval(259_200))
            let refused = try await request(.POST, endpoints.controlURL + "/clock/advance", json: #"{"seconds": -1}"#)
            #expect(refused.status == 400)
            let garbled = try await request(.POST, endpoints.controlURL + "/clock/advance", json: #"{"sec"#)
            #expect(garbled.status == 400)
            #expect(simulator.clock.now() == start.addingTimeInterval(259_200))
            let rate = try await request(.POST, endpoints.controlURL + "/clock/rate", json: #"{"rate": 86400}"#)
            #expect(rate.body["rate"] as? Double == 86_400)
            let info = try await request(.GET, endpoints.controlURL + "/endpoints")
            #expect(info.body["rootCertificatePath"] as? String == endpoints.rootCertificatePath)
        }
    }

    /// The root certificate and the service accounts' private keys go to a directory; one the
    /// simulator made for itself is removed when it stops (a test suite starts a hundred), and
    /// one it was given is the caller's and stays.
    @Test func removesOnlyTheDirectoryItMadeWhenItStops() async throws {
        let made = try await StoreSimulator.withRunning { simulator, endpoints in
            let key = try simulator.writeServiceAccount().path
            #expect(FileManager.default.fileExists(atPath: endpoints.rootCertificatePath))
            #expect(FileManager.default.fileExists(atPath: key))
            return URL(fileURLWithPath: endpoints.rootCertificatePath).deletingLastPathComponent()
        }
        #expect(!FileManager.default.fileExists(atPath: made.path))

        let given = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-given-\(UUID())")
        defer { try? FileManager.default.removeItem(at: given) }
        let root = try await StoreSimulator.withRunning(configuration: .init(directory: given)) { _, endpoints in
            endpoints.rootCertificatePath
        }
        #expect(FileManager.default.fileExists(atPath: root))
    }

    /// The simulator's chain names its own OCSP responder: online verification runs end to end over
    /// loopback HTTP, including injected faults and revocation.
    @Test func onlineVerificationAgainstTheSimulatorsOCSPResponder() async throws {
        try await StoreSimulator.withRunning { simulator, endpoints in
            let chain = try #require(simulator.chain)
            let roots = try TrustedRoots(appleRootFiles: [], allowedRootFiles: [endpoints.rootCertificatePath])
            func verifier() throws -> SignedDataVerifier {
                try SignedDataVerifier(
                    configuration: .init(trustedRoots: roots, environment: .sandbox, onlineChecks: true),
                    ocspTransport: HTTPOCSPTransport(timeout: .seconds(30)))
            }
            let token = try AppStoreSigner(chain: chain).sign(
                JWSRenewalInfo(environment: .sandbox, originalTransactionId: "1", signedDate: simulator.clock.now()))

            // A 503 from the responder: could not ask, so retryable.
            let added = try await request(
                .POST, endpoints.controlURL + "/faults", json: #"[{"pathPrefix": "/ocsp", "status": 503, "times": 1}]"#)
            #expect((added.body["pending"] as? [Any])?.count == 1)
            do {
                _ = try await verifier().verify(token, as: JWSRenewalInfo.self)
                Issue.record("verified while the OCSP responder failed")
            } catch let error as SignedDataVerificationError {
                #expect(error.reason == .revocationCheckUnavailable)
                #expect(error.isRetryable)
            }
            // The fault is used up: a fresh verifier asks again and succeeds.
            _ = try await verifier().verify(token, as: JWSRenewalInfo.self)
            #expect(simulator.faults.injectedCount == 1)
            #expect(try #require(simulator.ocspResponder).queryCount == 2)

            // Revoked: refused for good.
            simulator.ocspResponder?.setStatus(.revoked(at: simulator.clock.now()), for: chain.leaf)
            do {
                _ = try await verifier().verify(token, as: JWSRenewalInfo.self)
                Issue.record("verified a revoked leaf")
            } catch let error as SignedDataVerificationError {
                #expect(error.reason == .revocationCheckFailed)
            }
        }
    }

    @Test func injectedStatusCarriesRetryAfterAndIsConsumed() async throws {
        try await StoreSimulator.withRunning { simulator, endpoints in
            simulator.faults.add([APIFault(pathPrefix: "/ocsp", status: 429, retryAfterSeconds: 7, times: 2)])
            let first = try await request(.POST, endpoints.ocspURL, bytes: [0x30, 0x00])
            #expect(first.status == 429)
            #expect(first.headers["retry-after"] == "7")
            #expect(try await request(.POST, endpoints.ocspURL, bytes: [0x30, 0x00]).status == 429)
            // Used up: the responder itself answers (and refuses the malformed request).
            #expect(try await request(.POST, endpoints.ocspURL, bytes: [0x30, 0x00]).status == 400)
            // Control routes are never faulted.
            simulator.faults.add([APIFault(status: 500, times: 5)])
            #expect(try await request(.GET, endpoints.controlURL + "/clock").status == 200)
            let cleared = try await request(.DELETE, endpoints.controlURL + "/faults")
            #expect((cleared.body["pending"] as? [Any])?.isEmpty == true)
        }
    }
}
