public import AppStoreServer
public import Foundation
import Hummingbird
public import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// Fake stores on loopback HTTP: what the real stores would serve, signed with the simulator's own
/// certificate chain (its root written to a file for servers to trust), on a controllable clock,
/// with injectable faults. Used by tests, `storekeeper demo` and users' own integration tests.
///
/// It serves the control API, OCSP for its chain, the App Store side (``appStore``) and the
/// Google Play side (``googleIdentity``, ``googlePlay``) on the same server and clock.
public final class StoreSimulator: Sendable {
    /// Where to listen and how time runs.
    public struct Configuration: Sendable {
        /// The address to listen on; loopback only by default.
        public var host: String
        /// The port; 0 picks a free one.
        public var port: Int
        /// Simulated time at start (default: the real time).
        public var start: Date?
        /// Simulated seconds per real second.
        public var rate: Double
        /// Where to write the root certificate (default: a new temporary directory, removed when the
        /// simulator stops).
        public var directory: URL?
        public var logger: Logger
        /// Ids, retries and delivery of the simulated App Store.
        public var appStore: AppStoreSimulation.Configuration
        /// Ids, Google's windows and Pub/Sub redelivery of the simulated Google Play.
        public var googlePlay: GooglePlaySimulation.Configuration
        /// The real clock: simulated time runs on it, and the lifetimes of what real clients judge on
        /// their own clock (API tokens, service-account assertions, access tokens, push tokens, OCSP
        /// answers) are kept on it. Injected in tests.
        public var wallClock: any WallClock

        public init(
            host: String = "127.0.0.1", port: Int = 0, start: Date? = nil, rate: Double = 1, directory: URL? = nil,
            logger: Logger = Logger(label: "storekeeper.simulator"),
            appStore: AppStoreSimulation.Configuration = AppStoreSimulation.Configuration(),
            googlePlay: GooglePlaySimulation.Configuration = GooglePlaySimulation.Configuration(),
            wallClock: any WallClock = SystemWallClock()
        ) {
            self.wallClock = wallClock
            self.appStore = appStore
            self.googlePlay = googlePlay
            self.host = host
            self.port = port
            self.start = start
            self.rate = rate
            self.directory = directory
            self.logger = logger
        }
    }

    /// Where the running simulator can be reached.
    public struct Endpoints: Sendable, Hashable, Codable {
        /// `http://127.0.0.1:<port>`. Its App Store Server API serves each app's default environment
        /// (``SimulatedApp/environment``).
        public var baseURL: String
        /// `baseURL + "/production"`: the App Store Server API of Production only, at Apple's paths
        /// (`api.storekit.itunes.apple.com`).
        public var productionBaseURL: String
        /// `baseURL + "/sandbox"`: the App Store Server API of Sandbox only, at Apple's paths
        /// (`api.storekit-sandbox.itunes.apple.com`).
        public var sandboxBaseURL: String
        /// The control API.
        public var controlURL: String
        /// The OCSP responder named in the chain's certificates.
        public var ocspURL: String
        /// The DER root certificate to trust (as an explicitly allowed root).
        public var rootCertificatePath: String
    }

    /// Why the simulator could not start.
    public struct StartError: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    struct Running: Sendable {
        var endpoints: Endpoints
        var chain: TestCertificateChain
        var ocsp: TestOCSPResponder
        var task: Task<Void, any Error>
        /// Where the root certificate (and service-account key files) are written.
        var directory: URL
        /// Whether the simulator made `directory` itself, so that stopping removes it.
        var ownsDirectory: Bool
    }

    public let configuration: Configuration
    public let clock: SimulatorClock
    public let faults: FaultInjector
    /// The simulated App Store: catalog, purchases, lifecycles and notification delivery.
    public let appStore: AppStoreSimulation
    /// Google's identity services: service-account token endpoint, push-signing JWKS, push tokens.
    public let googleIdentity: GooglePlayIdentity
    /// The simulated Google Play: catalog, purchases, lifecycles, the Android Publisher API and RTDN pushes.
    public let googlePlay: GooglePlaySimulation
    private let running = Mutex<Running?>(nil)

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        self.clock = SimulatorClock(start: configuration.start, rate: configuration.rate, real: configuration.wallClock)
        self.faults = FaultInjector()
        self.appStore = AppStoreSimulation(clock: clock, configuration: configuration.appStore)
        self.googleIdentity = GooglePlayIdentity(clock: clock)
        self.googlePlay = GooglePlaySimulation(
            clock: clock, identity: googleIdentity, configuration: configuration.googlePlay)
    }

    /// The endpoints, once started.
    public var endpoints: Endpoints? { running.withLock { $0?.endpoints } }
    /// The signing chain, once started (its certificates name this server's OCSP responder).
    public var chain: TestCertificateChain? { running.withLock { $0?.chain } }
    /// The OCSP responder, once started (to revoke certificates in tests).
    public var ocspResponder: TestOCSPResponder? { running.withLock { $0?.ocsp } }

    /// Starts listening, makes the signing chain and writes its root; returns the endpoints.
    @discardableResult
    public func start() async throws -> Endpoints {
        if let endpoints { return endpoints }
        let router = Router()
        ControlRoutes(clock: clock, faults: faults, endpoints: { [weak self] in self?.endpoints })
            .register(on: router)
        AppStoreControlRoutes(appStore: appStore).register(on: router)
        AppStoreOfferRoutes(appStore: appStore).register(on: router)
        GooglePlayControlRoutes(
            googlePlay: googlePlay,
            makeServiceAccount: { [weak self] email, projectID in
                guard let self else { throw HTTPError(.serviceUnavailable) }
                return try self.writeServiceAccount(email: email, projectID: projectID)
            }
        ).register(on: router)
        let arrivals = ArrivalStamp(reference: .now)
        let publisher = router.group(RouterPath(AndroidPublisherRoutes.prefix))
            .add(middleware: PlayRequestLogMiddleware(googlePlay: googlePlay, arrivals: arrivals))
            .add(middleware: FaultMiddleware(faults: faults))
        AndroidPublisherRoutes(googlePlay: googlePlay, identity: googleIdentity).register(on: publisher)
        let stores = router.group().add(middleware: FaultMiddleware(faults: faults))
        AppStoreAPIRoutes(appStore: appStore).register(on: stores)
        AppStoreAPIRoutes(appStore: appStore, environment: .production).register(on: stores.group("production"))
        AppStoreAPIRoutes(appStore: appStore, environment: .sandbox).register(on: stores.group("sandbox"))
        VerifyReceiptRoutes(appStore: appStore).register(on: stores)
        googleIdentity.register(on: stores, baseURL: { [weak self] in self?.endpoints?.baseURL })
        stores.post("ocsp") { [weak self] request, _ -> Response in
            guard let responder = self?.ocspResponder else { throw HTTPError(.serviceUnavailable) }
            let body = try await request.body.collect(upTo: 64 * 1024)
            do {
                let answer = try responder.respond(to: Array(buffer: body))
                var headers = HTTPFields()
                headers[.contentType] = "application/ocsp-response"
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: answer)))
            } catch {
                throw HTTPError(.badRequest, message: "\(error)")
            }
        }

        let (portStream, portContinuation) = AsyncStream.makeStream(of: Int?.self)
        let application = Application(
            router: router,
            server: .http1(configuration: .init(additionalChannelHandlers: [arrivals.makeHandler()])),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port)),
            onServerRunning: { channel in
                portContinuation.yield(channel.localAddress?.port)
                portContinuation.finish()
            },
            logger: configuration.logger
        )
        let task = Task {
            defer { portContinuation.finish() }
            try await application.runService(gracefulShutdownSignals: [])
        }
        var iterator = portStream.makeAsyncIterator()
        guard let boundPort = await iterator.next() ?? nil else {
            task.cancel()
            throw StartError(
                description: "the simulator could not listen on \(configuration.host):\(configuration.port)")
        }

        let baseURL = "http://\(configuration.host):\(boundPort)"
        var options = TestCertificateChain.Options(now: clock.now(), name: "Storekeeper Simulator")
        options.ocspResponderURL = baseURL + "/ocsp"
        let directory =
            configuration.directory
            ?? FileManager.default.temporaryDirectory.appendingPathComponent(
                "storekeeper-simulator-\(UUID().uuidString)")
        let ownsDirectory = configuration.directory == nil
        let rootPath = directory.appendingPathComponent("simulator-root.der").path
        let chain: TestCertificateChain
        do {
            chain = try TestCertificateChain(options: options)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try chain.writeRoot(to: rootPath)
        } catch {
            if ownsDirectory { try? FileManager.default.removeItem(at: directory) }
            task.cancel()
            throw error
        }
        let endpoints = Endpoints(
            baseURL: baseURL, productionBaseURL: baseURL + "/production", sandboxBaseURL: baseURL + "/sandbox",
            controlURL: baseURL + "/control", ocspURL: baseURL + "/ocsp", rootCertificatePath: rootPath)
        appStore.attach(signer: AppStoreSigner(chain: chain))
        appStore.startBackground()
        googlePlay.startBackground()
        running.withLock {
            $0 = Running(
                endpoints: endpoints, chain: chain,
                ocsp: TestOCSPResponder(chain: chain, clock: clock, alsoCurrentOn: clock.wallClock), task: task,
                directory: directory, ownsDirectory: ownsDirectory)
        }
        return endpoints
    }

    /// A new Google service account (``GooglePlayIdentity/makeServiceAccount(email:projectID:)``) whose
    /// JSON key is written to the simulator's directory, next to the root certificate; returns the
    /// account and the key file's path. The simulator must be running.
    public func writeServiceAccount(
        email: String? = nil, projectID: String? = nil
    ) throws -> (account: GooglePlayIdentity.ServiceAccount, path: String) {
        guard let directory = running.withLock({ $0?.directory }) else {
            throw StartError(description: "the simulator is not running")
        }
        let account = try googleIdentity.makeServiceAccount(
            email: email ?? GooglePlayIdentity.defaultServiceAccountEmail,
            projectID: projectID ?? GooglePlayIdentity.defaultProjectID)
        let path = directory.appendingPathComponent("service-account-\(account.privateKeyID.prefix(12)).json")
        try account.jsonKey.write(to: path, options: .atomic)
        return (account, path.path)
    }

    /// Runs a simulator for the duration of `body` and stops it afterwards, whether `body` returns or throws.
    public static func withRunning<Result>(
        configuration: Configuration = Configuration(),
        _ body: (StoreSimulator, Endpoints) async throws -> Result
    ) async throws -> Result {
        let simulator = StoreSimulator(configuration: configuration)
        let endpoints = try await simulator.start()
        do {
            let result = try await body(simulator, endpoints)
            await simulator.stop()
            return result
        } catch {
            await simulator.stop()
            throw error
        }
    }

    /// Stops listening and waits until the server is down. A directory the simulator made for its
    /// files (no ``Configuration/directory`` given) is removed with them.
    public func stop() async {
        guard let task = running.withLock({ $0?.task }) else { return }
        await appStore.stopBackground()
        await googlePlay.stopBackground()
        task.cancel()
        _ = await task.result
        let made = running.withLock { running -> URL? in
            defer { running = nil }
            return running?.ownsDirectory == true ? running?.directory : nil
        }
        if let made { try? FileManager.default.removeItem(at: made) }
    }
}
