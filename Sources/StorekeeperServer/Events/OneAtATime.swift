/// Runs the work given to it one piece at a time, in the order it came: a waiting caller suspends
/// (no thread is held) until the one before it has finished.
actor OneAtATime {
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func run<Result: Sendable>(_ work: @Sendable () async throws -> Result) async throws -> Result {
        await acquire()
        defer { release() }
        return try await work()
    }

    private func acquire() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    /// Hands the turn to the first waiter (which stays `busy`), or frees it.
    private func release() {
        if waiting.isEmpty {
            busy = false
        } else {
            waiting.removeFirst().resume()
        }
    }
}
