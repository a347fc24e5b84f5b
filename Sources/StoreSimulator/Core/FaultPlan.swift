import Synchronization

/// Failures the simulator injects into its store APIs, to exercise clients' error handling: a
/// status (429 with Retry-After, 5xx) or a delay long enough to time a client out.
public struct APIFault: Codable, Sendable, Hashable {
    /// Requests whose path starts with this are affected (nil: every store request).
    public var pathPrefix: String?
    /// The HTTP status to answer with instead of the real answer; nil only delays.
    public var status: Int?
    /// `Retry-After` seconds to send with the status.
    public var retryAfterSeconds: Int?
    /// Seconds to wait before answering (a delay past the client's timeout is a timeout).
    public var delaySeconds: Double?
    /// How many matching requests it affects before it is used up.
    public var times: Int

    public init(
        pathPrefix: String? = nil, status: Int? = nil, retryAfterSeconds: Int? = nil, delaySeconds: Double? = nil,
        times: Int = 1
    ) {
        self.pathPrefix = pathPrefix
        self.status = status
        self.retryAfterSeconds = retryAfterSeconds
        self.delaySeconds = delaySeconds
        self.times = times
    }
}

/// The faults waiting to happen, consumed in order as matching requests arrive.
public final class FaultInjector: Sendable {
    private let faults = Mutex<[APIFault]>([])
    private let injected = Mutex<Int>(0)

    public init() {}

    /// Queues faults after those already waiting.
    public func add(_ new: [APIFault]) {
        faults.withLock { $0.append(contentsOf: new.filter { $0.times > 0 }) }
    }

    /// Drops every waiting fault.
    public func clear() {
        faults.withLock { $0.removeAll() }
    }

    /// The faults still waiting.
    public var pending: [APIFault] { faults.withLock { $0 } }

    /// How many requests a fault was injected into so far.
    public var injectedCount: Int { injected.withLock { $0 } }

    /// Takes the first waiting fault matching `path`, if any, using one of its `times`.
    func take(forPath path: String) -> APIFault? {
        let fault: APIFault? = faults.withLock { faults in
            guard let index = faults.firstIndex(where: { path.hasPrefix($0.pathPrefix ?? "") }) else { return nil }
            let fault = faults[index]
            faults[index].times -= 1
            if faults[index].times <= 0 { faults.remove(at: index) }
            return fault
        }
        if fault != nil { injected.withLock { $0 += 1 } }
        return fault
    }
}
