public import Foundation
import GooglePlay
import Storekeeper
import StorekeeperStorage

extension NotificationInbox {
    /// Authenticates a Pub/Sub push (its OIDC bearer token, against the app the notification names)
    /// and stores it under its `messageId`. Throws before anything is written if the envelope or
    /// the notification in it is malformed, the app is unknown, or the token doesn't verify.
    public func receiveGooglePlay(authorization: String?, body: Data) async throws -> Receipt {
        let (envelope, notification) = try Self.decodePush(body)
        let app = try googlePlay.apps.app(packageName: notification.packageName)
        guard let authenticator = app.pushAuthenticator else {
            throw ProcessingError(
                .notConfigured, "app \(app.name) has no push audience and push service account to check pushes with")
        }
        _ = try await authenticator.authenticate(authorizationHeader: authorization)
        guard let messageID = envelope.message.messageId, !messageID.isEmpty else {
            throw ProcessingError(.malformedPayload, "the push message has no messageId")
        }
        let item = InboxNotification(store: .googlePlay, dedupeKey: messageID, body: body, receivedAt: clock.now())
        let isNew = try await storage.transaction { try await $0.insertNotification(item) }
        return isNew ? .stored : .duplicate
    }

    static func decodePush(_ body: Data) throws(ProcessingError) -> (PubSubPushEnvelope, DeveloperNotification) {
        guard let envelope = try? JSONDecoder().decode(PubSubPushEnvelope.self, from: body) else {
            throw ProcessingError(.malformedPayload, "the body is not a Pub/Sub push ({\"message\": {…}, …})")
        }
        let notification: DeveloperNotification
        do {
            notification = try envelope.developerNotification()
        } catch {
            throw ProcessingError(
                .malformedPayload, "message.data is not a base64 developer notification: \(error)")
        }
        guard notification.packageName?.isEmpty == false else {
            throw ProcessingError(.malformedPayload, "the developer notification has no packageName")
        }
        return (envelope, notification)
    }

    /// Processes a stored push: Google's notifications only say that something changed, so the
    /// purchase's current state is fetched, recorded, and acknowledged if Google waits for that.
    func processGooglePlay(_ item: InboxNotification) async throws {
        let (envelope, notification) = try Self.decodePush(item.body)
        let package = notification.packageName
        let reference = envelope.message.messageId
        var fact: PurchaseFact?
        let event = notification.eventName
        do {
            if let subscription = notification.subscriptionNotification, let token = subscription.purchaseToken {
                let type = subscription.notificationType
                fact = try await googlePlay.subscriptionFact(
                    packageName: package, token: token, revoked: type == .revoked)
            } else if let product = notification.oneTimeProductNotification, let token = product.purchaseToken {
                fact = try await googlePlay.productFact(packageName: package, productID: product.sku, token: token)
            } else if let voided = notification.voidedPurchaseNotification, let token = voided.purchaseToken {
                fact = try await voidedFact(voided, token: token, packageName: package, at: notification.eventDate)
            }
        } catch let error as ProcessingError where error.reason == .purchaseNotFound {
            // 404/410: Google no longer answers for this purchase; what is stored stays as it is
            // (access is judged by its expiry anyway).
            logger.notice(
                "Google Play no longer knows the purchase of a notification",
                metadata: ["messageId": "\(reference ?? "")", "error": "\(error)"])
        }
        let cause = ChangeCause(source: "notification", event: event, reference: reference)
        var olderChain: [PurchaseKey] = []
        if let fact { olderChain = try await googlePlay.olderChain(of: fact, packageName: package) }
        let recorder = self.recorder
        if let fact {
            let recorded = try await storage.transaction { [olderChain] transaction in
                let purchase = try await recorder.record(fact, cause: cause, in: transaction).purchase
                for older in olderChain {
                    _ = try await recorder.supersede(older, by: fact, cause: cause, in: transaction)
                }
                return purchase
            }
            // Acknowledged (or consumed) once recorded and before the notification counts as
            // processed: a crash in between re-processes it, which records nothing twice (the fact
            // is stale by then) and acknowledges only if Google still waits. An acknowledgement
            // that fails is left to the sweeper.
            await googlePlay.settle(recorded, packageName: package)
        }
        try await storage.transaction { [now = clock.now()] in
            try await $0.updateNotification(item.markedProcessed(at: now))
        }
    }

    /// A voided purchase: a subscription is revoked; a one-time purchase is revoked, or for a
    /// quantity-based partial refund loses the voided units' share (found in the voided list).
    func voidedFact(
        _ voided: VoidedPurchaseNotification, token: String, packageName: String?, at eventDate: Date?
    ) async throws -> PurchaseFact {
        if voided.productType == .subscription {
            return try await googlePlay.subscriptionFact(packageName: packageName, token: token, revoked: true)
        }
        let stored = try await storage.transaction { try await $0.purchase(.googlePlay(token)) }
        var voidedQuantity: Int?
        if voided.refundType == .quantityBasedPartialRefund, let orderID = voided.orderId {
            voidedQuantity = try await googlePlay.voidedQuantity(
                packageName: packageName, orderID: orderID, around: eventDate ?? clock.now())
            // The list may lag the notification: retry later rather than take a partial refund for a full one.
            guard voidedQuantity != nil else {
                throw ProcessingError(
                    .storeUnavailable, "the voided purchases list does not show order \(orderID) yet")
            }
        }
        return try await googlePlay.productFact(
            packageName: packageName, productID: stored?.productID, token: token, voided: true,
            voidedQuantity: voidedQuantity)
    }
}

extension GooglePlayPurchases {
    /// How many units of `orderID` Google voided, from the voided purchases list around the
    /// notification's time (nil if the list doesn't show it).
    func voidedQuantity(packageName: String?, orderID: String, around date: Date) async throws -> Int? {
        let (app, client) = try apps.client(packageName: packageName)
        let query = VoidedPurchasesQuery(
            startTime: date.addingTimeInterval(-3600), type: .oneTimeProducts, includeQuantityBasedPartialRefund: true)
        return try await Self.calling {
            var total: Int?
            for try await entry in client.voidedPurchases(packageName: app.configuration.packageName, query)
            where entry.orderId == orderID {
                total = (total ?? 0) + (entry.voidedQuantity ?? 0)
            }
            return total
        }
    }
}
