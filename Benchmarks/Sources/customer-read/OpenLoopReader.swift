import AsyncHTTPClient
import Foundation
import NIOCore
import Storekeeper

/// `GET /v1/customers/{id}` (or a console page) for random seeded customers at a fixed arrival rate: request n is
/// scheduled at start + n / rate and sent then whether or not earlier ones have answered (an open
/// loop), and its latency runs from that scheduled time to the end of the answer's body. A server
/// (or client) that falls behind therefore shows its queueing in the latencies instead of slowing
/// the load down (coordinated omission).
struct OpenLoopReader: Sendable {
    /// What is read for a customer: the API's view (with the API key), or the console's page of
    /// the customer or its overview (with an operator's session cookie).
    enum Page: Sendable {
        case customerAPI(apiKey: String)
        case consoleCustomer(cookie: String)
        case consoleOverview(cookie: String)
    }

    let client: HTTPClient
    let baseURL: String
    let page: Page
    /// Customers are picked uniformly from 1...customers.
    let customers: Int
    /// Requests per second.
    let rate: Double
    /// Every n-th answer is decoded and checked to be the customer asked for (decoding is client
    /// work, kept out of the latency).
    let checkEvery: Int

    /// What one window of requests measured.
    struct Window: Sendable {
        /// Milliseconds from scheduled send to the end of the answer, of the requests that succeeded.
        var latencies: [Double] = []
        var failures = 0
        var firstFailure: String?
        /// Seconds from the first scheduled send to the last answer.
        var elapsed: Double = 0
        var requests = 0
    }

    private enum Outcome: Sendable {
        case answered(milliseconds: Double)
        case failed(String)
    }

    /// Sends `rate × seconds` requests on schedule and waits for all of them.
    func run(seconds: Double, random: inout SplitMix64) async -> Window {
        let count = max(1, Int((rate * seconds).rounded()))
        let interval = Duration.nanoseconds(Int64((1e9 / rate).rounded()))
        let clock = ContinuousClock()
        let start = clock.now.advanced(by: .milliseconds(2))
        return await withTaskGroup(of: Outcome.self) { group in
            for index in 0..<count {
                let scheduled = start.advanced(by: interval * index)
                if clock.now < scheduled {
                    try? await Task.sleep(until: scheduled, tolerance: .microseconds(50), clock: clock)
                }
                let number = Int(random.next() % UInt64(customers)) + 1
                let check = index % checkEvery == 0
                group.addTask { await fetch(customer: number, scheduled: scheduled, check: check) }
            }
            var window = Window()
            window.requests = count
            window.latencies.reserveCapacity(count)
            for await outcome in group {
                switch outcome {
                case .answered(let milliseconds): window.latencies.append(milliseconds)
                case .failed(let reason):
                    window.failures += 1
                    if window.firstFailure == nil { window.firstFailure = reason }
                }
            }
            window.elapsed = CustomerRead.seconds(clock.now - start)
            return window
        }
    }

    private static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()

    private func fetch(customer number: Int, scheduled: ContinuousClock.Instant, check: Bool) async -> Outcome {
        let id = SeedSQL.customerID(number)
        var request: HTTPClientRequest
        switch page {
        case .customerAPI(let apiKey):
            request = HTTPClientRequest(url: baseURL + "/v1/customers/" + id)
            request.headers.add(name: "Authorization", value: "Bearer " + apiKey)
        case .consoleCustomer(let cookie):
            request = HTTPClientRequest(url: baseURL + "/console/customer?id=" + id)
            request.headers.add(name: "Cookie", value: cookie)
        case .consoleOverview(let cookie):
            request = HTTPClientRequest(url: baseURL + "/console/overview")
            request.headers.add(name: "Cookie", value: cookie)
        }
        do {
            let response = try await client.execute(request, timeout: .seconds(30))
            let body = try await response.body.collect(upTo: 1 << 22)
            let answered = ContinuousClock.now
            guard response.status == .ok else {
                return .failed("HTTP \(response.status.code) for \(id): \(String(buffer: body).prefix(200))")
            }
            switch page {
            case .customerAPI: break
            case .consoleCustomer:
                guard String(buffer: body).contains("<code id=\"customer-id\">\(id)</code>") else {
                    return .failed("the console's page for \(id) does not show it")
                }
                return .answered(milliseconds: CustomerRead.seconds(answered - scheduled) * 1000)
            case .consoleOverview:
                guard String(buffer: body).contains("id=\"states-chart\"") else {
                    return .failed("the console's overview has no chart")
                }
                return .answered(milliseconds: CustomerRead.seconds(answered - scheduled) * 1000)
            }
            if check {
                let view = try Self.decoder.decode(CustomerView.self, from: Data(buffer: body))
                guard view.customerID.rawValue == id else {
                    return .failed("asked for \(id), answered for \(view.customerID)")
                }
            }
            return .answered(milliseconds: CustomerRead.seconds(answered - scheduled) * 1000)
        } catch {
            return .failed("\(id): \(error)")
        }
    }
}

/// A small seedable generator (SplitMix64), so a run's customer sequence can be repeated.
struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
