import Foundation
import GooglePlay

extension GooglePlaySimulation.State {
    /// When a purchase not yet acknowledged is refunded, if it can be.
    func acknowledgementDeadline(_ record: PlaySubscriptionRecord) -> Date? {
        guard !record.acknowledged, record.revokedAt == nil, record.endedAt == nil, let start = record.startTime
        else { return nil }
        return start.addingTimeInterval(acknowledgementWindow)
    }

    func acknowledgementDeadline(_ record: PlayProductRecord) -> Date? {
        guard !record.acknowledged, !record.consumed, !record.pending, !record.canceled, record.revokedAt == nil,
            let completed = record.completionTime
        else { return nil }
        return completed.addingTimeInterval(acknowledgementWindow)
    }

    /// When the subscription's next automatic lifecycle event happens, if it has one.
    func lifecycleDate(_ record: PlaySubscriptionRecord) -> Date? {
        switch record.phase {
        case .active: record.expiryTime
        case .gracePeriod(let until, _), .onHold(let until, _), .paused(let until): until
        case .pending, .expired, .pendingCanceled: nil
        }
    }

    enum DueEvent {
        case subscriptionAcknowledgement(String)
        case subscriptionLifecycle(String)
        case productAcknowledgement(String)
    }

    /// Fires every event due at or before `now`, earliest first (ties: acknowledgement refunds first,
    /// then by token).
    mutating func processDue(now: Date) {
        while true {
            var next: (event: DueEvent, date: Date, key: String)?
            func consider(_ event: DueEvent, _ date: Date?, _ key: String) {
                guard let date, date <= now else { return }
                if let current = next, current.date < date || (current.date == date && current.key <= key) { return }
                next = (event, date, key)
            }
            for (token, record) in subscriptions {
                consider(.subscriptionAcknowledgement(token), acknowledgementDeadline(record), "0" + token)
                consider(.subscriptionLifecycle(token), lifecycleDate(record), "1" + token)
            }
            for (token, record) in productPurchases {
                consider(.productAcknowledgement(token), acknowledgementDeadline(record), "0" + token)
            }
            guard let next else { return }
            switch next.event {
            case .subscriptionAcknowledgement(let token): refundUnacknowledged(subscription: token, at: next.date)
            case .subscriptionLifecycle(let token): fire(token, at: next.date)
            case .productAcknowledgement(let token): refundUnacknowledged(product: token, at: next.date)
            }
        }
    }

    /// Google refunds and revokes a purchase not acknowledged within the window.
    mutating func refundUnacknowledged(subscription token: String, at date: Date) {
        guard var record = subscriptions[token] else { return }
        record.phase = .expired(at: date)
        record.autoRenew = false
        record.revokedAt = date
        record.lastEventDate = date
        subscriptions[token] = record
        emitSubscription(.revoked, record, at: date)
        for orderId in record.orderIds {
            void(
                orderId: orderId, purchaseToken: token, packageName: record.packageName,
                purchaseTime: orders[orderId]?.createTime ?? record.purchaseTime, isSubscription: true,
                source: .google, reason: .unacknowledgedPurchase, at: date)
        }
    }

    mutating func refundUnacknowledged(product token: String, at date: Date) {
        guard var record = productPurchases[token] else { return }
        record.canceled = true
        record.revokedAt = date
        record.refundedQuantity = record.quantity
        productPurchases[token] = record
        if let orderId = record.orderId {
            void(
                orderId: orderId, purchaseToken: token, packageName: record.packageName,
                purchaseTime: record.purchaseTime, isSubscription: false, source: .google,
                reason: .unacknowledgedPurchase, at: date)
        }
    }

    /// The automatic lifecycle event of one subscription at `date`.
    mutating func fire(_ token: String, at due: Date) {
        guard var record = subscriptions[token] else { return }
        let date = max(due, record.lastEventDate)
        record.lastEventDate = date
        let event: SubscriptionNotification.NotificationType
        switch record.phase {
        case .active where !record.autoRenew || !record.plan.autoRenewing:
            record.phase = .expired(at: record.expiryTime)
            event = .expired
        case .active where record.scheduledPauseCycles != nil:
            let cycles = record.scheduledPauseCycles ?? 1
            var resume = record.expiryTime
            for _ in 0..<max(1, cycles) { resume = record.plan.billingPeriod.added(to: resume) }
            record.scheduledPauseCycles = nil
            record.phase = .paused(until: resume)
            event = .paused
        case .active where record.billingFails:
            let failedAt = record.expiryTime
            if record.plan.gracePeriod > 0 {
                record.phase = .gracePeriod(
                    until: failedAt.addingTimeInterval(record.plan.gracePeriod), failedAt: failedAt)
                event = .inGracePeriod
            } else if record.plan.accountHold > 0 {
                record.phase = .onHold(until: failedAt.addingTimeInterval(record.plan.accountHold), failedAt: failedAt)
                event = .onHold
            } else {
                record.cancellation = .system
                record.phase = .expired(at: failedAt)
                event = .expired
            }
        case .active:
            bill(&record, periodStart: record.expiryTime, at: date)
            event = .renewed
        case .gracePeriod(let until, let failedAt):
            if record.plan.accountHold > 0 {
                record.phase = .onHold(until: until.addingTimeInterval(record.plan.accountHold), failedAt: failedAt)
                event = .onHold
            } else {
                record.cancellation = .system
                record.autoRenew = false
                record.phase = .expired(at: until)
                event = .expired
            }
        case .onHold(let until, _):
            record.cancellation = .system
            record.autoRenew = false
            record.phase = .expired(at: until)
            event = .expired
        case .paused(let until) where !record.autoRenew:
            record.phase = .expired(at: until)
            event = .expired
        case .paused(let until):
            record.phase = .active
            bill(&record, periodStart: until, at: date)
            event = .renewed
        case .pending, .expired, .pendingCanceled:
            return
        }
        subscriptions[token] = record
        emitSubscription(event, record, at: date)
    }
}
