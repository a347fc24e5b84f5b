import Foundation

extension AppStoreSimulation {
    struct DeliveryJob: Sendable {
        var index: Int
        var url: String
        var signedPayload: String
        var fault: DeliveryFault?
        var firstAttempt: Bool
    }

    /// Applies `faults` to the next notifications created, one each, in order.
    public func injectDeliveryFaults(_ faults: [DeliveryFault]) {
        state.withLock { $0.pendingFaults.append(contentsOf: faults) }
    }

    /// Starts the background loop that fires due events and delivers notifications.
    func startBackground() {
        background.start(interval: configuration.pollInterval) { [weak self] in
            guard let simulation = self else { return false }
            try? simulation.processDueEvents()
            await simulation.deliverDue()
            return true
        }
    }

    /// Stops the background loop once its current delivery is done (a request is never cut off, so
    /// receivers can shut down cleanly after the simulator), and waits for it.
    func stopBackground() async {
        await background.stop()
    }

    /// Waits until every notification due by the simulated now has been attempted and none is in
    /// flight (held-back ``DeliveryFault/reorder`` notifications and future retries don't count).
    public func deliveriesSettled(timeout: Duration = .seconds(30)) async throws(AppStoreSimulationError) {
        try await background.settle(timeout: timeout, stopped: .notStarted, timedOut: .timeout) {
            () throws(AppStoreSimulationError) in
            try processDueEvents()
            await deliverDue()
            let now = clock.now()
            return !state.withLock { state in
                state.settleDeliveredPrefix()
                return state.hasDeliveryInFlight || state.nextDelivery(now: now) != nil
            }
        }
    }

    /// Delivers every due notification, one at a time, oldest due first.
    func deliverDue() async {
        while !background.isStopping, let job = takeDelivery() {
            let attemptDate = clock.now()
            if job.fault == .drop, job.firstAttempt {
                finish(job, DeliveryAttempt(attemptDate: attemptDate, sendAttemptResult: "NO_RESPONSE"), dropped: true)
                continue
            }
            let outcome = await poster.post(job.signedPayload, to: job.url)
            if job.fault == .duplicate, job.firstAttempt {
                _ = await poster.post(job.signedPayload, to: job.url)
            }
            finish(
                job,
                DeliveryAttempt(
                    attemptDate: attemptDate, sendAttemptResult: outcome.result, httpStatus: outcome.status),
                dropped: false)
        }
    }

    private func takeDelivery() -> DeliveryJob? {
        let now = clock.now()
        return state.withLock { state in
            state.settleDeliveredPrefix()
            guard !state.hasDeliveryInFlight, let index = state.nextDelivery(now: now),
                let url = state.notifications[index].url
            else { return nil }
            state.notifications[index].inFlight = true
            let record = state.notifications[index]
            return DeliveryJob(
                index: index, url: url, signedPayload: record.notification.signedPayload, fault: record.fault,
                firstAttempt: record.notification.attempts.isEmpty)
        }
    }

    private func finish(_ job: DeliveryJob, _ attempt: DeliveryAttempt, dropped: Bool) {
        let intervals = configuration.retryIntervals
        state.withLock { state in
            var notification = state.notifications[job.index].notification
            notification.attempts.append(attempt)
            if dropped {
                notification.status = .dropped
                notification.nextAttemptDate = nil
            } else if attempt.sendAttemptResult == "SUCCESS" {
                notification.status = .delivered
                notification.nextAttemptDate = nil
            } else if notification.attempts.count <= intervals.count {
                notification.nextAttemptDate = attempt.attemptDate.addingTimeInterval(
                    intervals[notification.attempts.count - 1])
            } else {
                notification.status = .failed
                notification.nextAttemptDate = nil
            }
            state.notifications[job.index].notification = notification
            state.notifications[job.index].inFlight = false
        }
    }
}

extension AppStoreSimulation.State {
    /// Moves ``settledNotifications`` past the notifications now done with delivery (delivered,
    /// dropped, failed, or never to be sent). A notification never becomes pending again, so
    /// each is passed over once, and the scans before every delivery (every poll, 50 times a
    /// second) cover only the notifications still to deliver, not every one made so far (1.4 % of
    /// the ingest benchmark's process CPU with 8,000 made, none of them to deliver).
    mutating func settleDeliveredPrefix() {
        while settledNotifications < notifications.count,
            notifications[settledNotifications].notification.status != .pending,
            !notifications[settledNotifications].inFlight
        {
            settledNotifications += 1
        }
    }

    var hasDeliveryInFlight: Bool {
        notifications.indices[settledNotifications...].contains { notifications[$0].inFlight }
    }

    /// The index of the notification to attempt next, if one is due: earliest due date, then
    /// creation order. A notification held back by a reorder fault waits until a later one has
    /// been attempted.
    func nextDelivery(now: Date) -> Int? {
        // Fields are read in place (`notifications[index].…`), never by copying a whole record:
        // this runs before every delivery over every notification not yet settled, and copying
        // each (retaining its strings) was 12% of a busy benchmark's CPU.
        var best: Int?
        var bestDue: Date?
        for index in notifications.indices[settledNotifications...] {
            guard notifications[index].notification.status == .pending, notifications[index].url != nil,
                let due = notifications[index].notification.nextAttemptDate, due <= now
            else { continue }
            if notifications[index].fault == .reorder, notifications[index].notification.attempts.isEmpty,
                !notifications.indices[(index + 1)...].contains(where: {
                    !notifications[$0].notification.attempts.isEmpty
                })
            {
                continue
            }
            if let bestDue, bestDue <= due { continue }
            best = index
            bestDue = due
        }
        return best
    }
}
