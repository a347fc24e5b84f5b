import Foundation
import GooglePlay
import StoreSimulator
import Testing

@Suite struct GooglePlaySimulationRTDNTests {
    static let audience = "https://storekeeper.example/google/rtdn"
    static let pushAccount = "rtdn-push@example-project.iam.gserviceaccount.com"
    static let subscriptionName = "projects/example-project/subscriptions/play-rtdn"

    /// A harness whose app pushes to a local receiver, and an authenticator configured like the
    /// server's (the simulator's JWKS, the push subscription's audience and account).
    static func run(
        configuration: GooglePlaySimulation.Configuration = GooglePlaySimulation.Configuration(),
        _ body: (PlayHarness, PlayPushReceiver, PushAuthenticator) async throws -> Void
    ) async throws {
        let receiver = PlayPushReceiver()
        try await receiver.start()
        do {
            let push = PlayPushSubscription(
                name: subscriptionName, endpoint: receiver.url, audience: audience, serviceAccountEmail: pushAccount)
            try await PlayHarness.run(push: push, configuration: configuration) { h in
                let jwksURL = try #require(h.simulator.googleIdentity.jwksURL)
                var authConfiguration = PushAuthenticator.Configuration(
                    audience: audience, serviceAccountEmail: pushAccount, jwksURL: jwksURL)
                authConfiguration.jwksRequestTimeout = .seconds(20)
                let authenticator = PushAuthenticator(configuration: authConfiguration, clock: h.simulator.clock)
                try await body(h, receiver, authenticator)
            }
        } catch {
            await receiver.stop()
            throw error
        }
        await receiver.stop()
    }

    static func envelope(_ push: PlayPushReceiver.Push) throws -> PubSubPushEnvelope {
        try JSONDecoder().decode(PubSubPushEnvelope.self, from: push.body)
    }

    @Test func pushesDecodeAndCarryATokenThePushAuthenticatorAccepts() async throws {
        try await Self.run { h, receiver, authenticator in
            let purchase = try h.play.purchaseSubscription(packageName: PlayHarness.package, productId: "premium")
            try await h.play.deliveriesSettled()
            let push = try #require(receiver.received.first)
            #expect(receiver.received.count == 1)
            let identity = try await authenticator.authenticate(authorizationHeader: push.authorization)
            #expect(identity.email == Self.pushAccount)
            #expect(identity.audience == Self.audience)

            let envelope = try Self.envelope(push)
            #expect(envelope.subscription == Self.subscriptionName)
            #expect(envelope.message.messageId == h.play.pushes.first?.messageId)
            #expect(envelope.message.publishDate == PlayHarness.start)
            let notification = try envelope.developerNotification()
            #expect(notification.version == "1.0")
            #expect(notification.packageName == PlayHarness.package)
            #expect(notification.eventDate == PlayHarness.start)
            #expect(notification.subscriptionNotification?.notificationType == .purchased)
            #expect(notification.subscriptionNotification?.purchaseToken == purchase.purchaseToken)
            #expect(notification.subscriptionNotification?.subscriptionId == "premium")

            // Both spellings Pub/Sub sends are present on the wire.
            let raw = try #require(try JSONSerialization.jsonObject(with: push.body) as? [String: Any])
            let message = try #require(raw["message"] as? [String: Any])
            #expect(message["message_id"] as? String == envelope.message.messageId)
            #expect(message["publish_time"] as? String == envelope.message.publishTime)
            #expect(h.play.pushes.first?.status == .acknowledged)
        }
    }

    @Test func aFailedPushIsRedeliveredWithTheSameMessageIdAfterBackoff() async throws {
        try await Self.run { h, receiver, _ in
            receiver.plan([500, 503])
            try h.play.sendTestNotification(packageName: PlayHarness.package)
            try await h.play.deliveriesSettled()
            #expect(receiver.received.count == 1)
            #expect(h.play.pushes.first?.nextAttemptDate == PlayHarness.start.addingTimeInterval(10))
            h.play.advance(by: 10)
            try await h.play.deliveriesSettled()
            #expect(receiver.received.count == 2)
            // Exponential: 10 s, then 20 s.
            #expect(h.play.pushes.first?.nextAttemptDate == PlayHarness.start.addingTimeInterval(30))
            h.play.advance(by: 19)
            try await h.play.deliveriesSettled()
            #expect(receiver.received.count == 2)
            h.play.advance(by: 1)
            try await h.play.deliveriesSettled()
            #expect(receiver.received.count == 3)

            let ids = try receiver.received.map { try Self.envelope($0).message.messageId }
            #expect(Set(ids).count == 1)
            let message = try #require(h.play.pushes.first)
            #expect(message.status == .acknowledged)
            #expect(message.attempts.map(\.httpStatus) == [500, 503, 200])
            let test = try Self.envelope(try #require(receiver.received.last)).developerNotification()
            #expect(test.testNotification?.version == "1.0")
        }
    }

    @Test func backoffIsCappedAndRetentionEnds() async throws {
        let configuration = GooglePlaySimulation.Configuration(
            minimumBackoff: 10, maximumBackoff: 40, messageRetention: 100)
        try await Self.run(configuration: configuration) { h, receiver, _ in
            receiver.plan(Array(repeating: 500, count: 20))
            try h.play.sendTestNotification(packageName: PlayHarness.package)
            for _ in 0..<10 {
                try await h.play.deliveriesSettled()
                h.play.advance(by: 40)
            }
            let message = try #require(h.play.pushes.first)
            #expect(message.status == .expired)
            let gaps = zip(message.attempts, message.attempts.dropFirst()).map { $1.date.timeIntervalSince($0.date) }
            #expect(gaps.allSatisfy { $0 <= 40 })
            #expect(message.attempts.last.map { $0.date.timeIntervalSince(PlayHarness.start) <= 100 } == true)
        }
    }

    @Test func deliveryFaultsDuplicateDropReorderAndForgeTokens() async throws {
        try await Self.run { h, receiver, authenticator in
            h.play.injectPushFaults([.duplicate, .drop, .reorder, .invalidToken, .wrongAudience])
            for _ in 0..<6 { try h.play.sendTestNotification(packageName: PlayHarness.package) }
            try await h.play.deliveriesSettled()
            let ids = h.play.pushes.map(\.messageId)
            let received = try receiver.received.map { try Self.envelope($0).message.messageId ?? "" }
            // duplicate: twice; drop: never; reorder: after the next one; forged tokens: once each.
            #expect(received == [ids[0], ids[0], ids[3], ids[2], ids[4], ids[5]])
            #expect(h.play.pushes[1].status == .dropped)

            // receiver.received[2] is message 3 (invalidToken), [4] is message 4 (wrongAudience).
            let invalid: String
            do throws(PushAuthenticationError) {
                _ = try await authenticator.authenticate(authorizationHeader: receiver.received[2].authorization)
                invalid = "accepted"
            } catch {
                invalid = error.reason.rawValue
            }
            #expect(invalid == "unknown-key")
            do throws(PushAuthenticationError) {
                _ = try await authenticator.authenticate(authorizationHeader: receiver.received[4].authorization)
                Issue.record("a token for another audience was accepted")
            } catch {
                #expect(error.reason.rawValue == "wrong-audience")
            }
            _ = try await authenticator.authenticate(authorizationHeader: receiver.received[5].authorization)
        }
    }
}
