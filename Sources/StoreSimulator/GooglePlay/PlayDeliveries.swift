import Foundation

extension GooglePlaySimulation {
    struct PushJob: Sendable {
        var index: Int
        var message: PlayPushMessage
        var push: PlayPushSubscription
        var fault: PlayPushFault?
        var firstAttempt: Bool
        /// Where this attempt goes: one of the subscription's endpoints.
        var endpoint: String
    }

    /// Applies `faults` to the next RTDN messages created for apps with a push subscription, one
    /// each, in order.
    public func injectPushFaults(_ faults: [PlayPushFault]) {
        state.withLock { $0.pendingFaults.append(contentsOf: faults) }
    }

    /// Starts the background loop that fires due events and pushes messages.
    func startBackground() {
        background.start(interval: configuration.pollInterval) { [weak self] in
            guard let simulation = self else { return false }
            simulation.processDueEvents()
            await simulation.deliverDue()
            return true
        }
    }

    /// Stops the background loop once its current push is done, and waits for it.
    func stopBackground() async {
        await background.stop()
    }

    /// Waits until every message due by the simulated now has been attempted and none is in flight
    /// (held-back ``PlayPushFault/reorder`` messages and future redeliveries don't count).
    public func deliveriesSettled(timeout: Duration = .seconds(30)) async throws(GooglePlaySimulationError) {
        try await background.settle(timeout: timeout, stopped: .stopped, timedOut: .timeout) {
            () throws(GooglePlaySimulationError) in
            processDueEvents()
            await deliverDue()
            let now = clock.now()
            return !state.withLock { state in
                state.pushes.contains(where: \.inFlight) || state.nextPush(now: now) != nil
            }
        }
    }

    /// Pushes every due message, one at a time, earliest due first.
    func deliverDue() async {
        while !background.isStopping, let job = takePush() {
            let date = clock.now()
            if job.fault == .drop, job.firstAttempt {
                finish(job, PlayPushAttempt(date: date, httpStatus: nil, acknowledged: false), dropped: true)
                continue
            }
            let body = PlayPushPoster.envelope(job.message, subscription: job.push.name)
            let bearer = token(for: job)
            var status = await poster.post(body, to: job.endpoint, bearer: bearer)
            if job.fault == .duplicate, job.firstAttempt {
                let second = await poster.post(body, to: job.endpoint, bearer: bearer)
                if status.map(Self.acknowledges) != true { status = second }
            }
            let acknowledged = status.map(Self.acknowledges) ?? false
            finish(
                job,
                PlayPushAttempt(date: date, httpStatus: status, acknowledged: acknowledged, endpoint: job.endpoint),
                dropped: false)
        }
    }

    /// Pub/Sub counts 102, 200, 201, 202 and 204 as acknowledgements; the simulator counts any 2xx.
    static func acknowledges(_ status: Int) -> Bool { status == 102 || (200...299).contains(status) }

    private func token(for job: PushJob) -> String? {
        let push = job.push
        switch job.fault {
        case .invalidToken where job.firstAttempt:
            return try? identity.makeUntrustedPushToken(audience: push.audience, email: push.serviceAccountEmail)
        case .wrongAudience where job.firstAttempt:
            return try? identity.makePushToken(audience: push.audience + "/wrong", email: push.serviceAccountEmail)
        default:
            return try? identity.makePushToken(audience: push.audience, email: push.serviceAccountEmail)
        }
    }

    private func takePush() -> PushJob? {
        let now = clock.now()
        let configuration = configuration
        return state.withLock { state in
            guard !state.pushes.contains(where: \.inFlight), let index = state.nextPush(now: now),
                let push = state.pushes[index].push
            else { return nil }
            state.pushes[index].inFlight = true
            let record = state.pushes[index]
            // Like Pub/Sub pushing to a service behind a load balancer: any endpoint, except one that
            // did not answer this message, or any message lately, while another may.
            let unanswered = Set(record.message.attempts.filter { $0.httpStatus == nil }.compactMap(\.endpoint))
            let hold = configuration.unansweredEndpointHold
            let candidates = push.endpoints.filter { endpoint in
                guard !unanswered.contains(endpoint) else { return false }
                guard let silent = state.unansweredEndpoints[endpoint] else { return true }
                return now.timeIntervalSince(silent) >= hold
            }
            let choices = candidates.isEmpty ? push.endpoints : candidates
            let endpoint = choices[Int(state.endpointChoice.next() % UInt64(choices.count))]
            return PushJob(
                index: index, message: record.message, push: push, fault: record.fault,
                firstAttempt: record.message.attempts.isEmpty, endpoint: endpoint)
        }
    }

    private func finish(_ job: PushJob, _ attempt: PlayPushAttempt, dropped: Bool) {
        let configuration = configuration
        state.withLock { state in
            var message = state.pushes[job.index].message
            message.attempts.append(attempt)
            let publish = state.pushes[job.index].publishDate
            if dropped {
                message.status = .dropped
                message.nextAttemptDate = nil
            } else if attempt.acknowledged {
                message.status = .acknowledged
                message.nextAttemptDate = nil
            } else {
                let failures = Double(message.attempts.count - 1)
                let delay = min(
                    configuration.maximumBackoff, configuration.minimumBackoff * pow(2, min(failures, 30)))
                let next = attempt.date.addingTimeInterval(delay)
                let outOfAttempts = configuration.maxDeliveryAttempts.map { message.attempts.count >= $0 } ?? false
                if outOfAttempts || next.timeIntervalSince(publish) > configuration.messageRetention {
                    message.status = .expired
                    message.nextAttemptDate = nil
                } else {
                    message.nextAttemptDate = next
                }
            }
            state.pushes[job.index].message = message
            state.pushes[job.index].inFlight = false
            if !dropped {
                if attempt.httpStatus == nil {
                    state.unansweredEndpoints[job.endpoint] = attempt.date
                } else {
                    state.unansweredEndpoints[job.endpoint] = nil
                }
            }
        }
    }
}

extension GooglePlaySimulation.State {
    /// The index of the message to push next, if one is due: earliest due date, then creation order.
    /// A message held back by a reorder fault waits until a later one has been attempted.
    func nextPush(now: Date) -> Int? {
        var best: Int?
        for index in pushes.indices {
            let record = pushes[index]
            guard record.message.status == .pending, record.push != nil,
                let due = record.message.nextAttemptDate, due <= now
            else { continue }
            if record.fault == .reorder, record.message.attempts.isEmpty,
                !pushes[(index + 1)...].contains(where: { !$0.message.attempts.isEmpty })
            {
                continue
            }
            if let current = best, let currentDue = pushes[current].message.nextAttemptDate, currentDue <= due {
                continue
            }
            best = index
        }
        return best
    }
}
