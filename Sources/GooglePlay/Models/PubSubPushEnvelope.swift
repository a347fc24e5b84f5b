public import Foundation

/// The JSON body Cloud Pub/Sub POSTs to a push endpoint; Google Play RTDN arrive this way.
public struct PubSubPushEnvelope: Codable, Hashable, Sendable {
    /// The delivered message.
    public var message: PubSubMessage
    /// Full subscription name, `projects/{project}/subscriptions/{subscription}`.
    public var subscription: String?
    /// Delivery attempt count; only present when a dead-letter policy is configured.
    public var deliveryAttempt: Int?

    /// Creates an envelope.
    public init(message: PubSubMessage, subscription: String? = nil, deliveryAttempt: Int? = nil) {
        self.message = message
        self.subscription = subscription
        self.deliveryAttempt = deliveryAttempt
    }

    /// Base64-decodes `message.data` and decodes it as a Google Play developer notification.
    public func developerNotification() throws -> DeveloperNotification {
        try JSONDecoder().decode(DeveloperNotification.self, from: message.decodedData())
    }
}

/// A Pub/Sub message as delivered to a push endpoint.
///
/// Pub/Sub sends both `messageId`/`message_id` and `publishTime`/`publish_time`; either spelling is
/// accepted when decoding, and both are written when encoding, as Pub/Sub does.
public struct PubSubMessage: Codable, Hashable, Sendable {
    /// Base64-encoded payload.
    public var data: String?
    /// Message attributes.
    public var attributes: [String: String]?
    /// Server-assigned message id, unique within the topic.
    public var messageId: String?
    /// RFC 3339 time the message was published.
    public var publishTime: String?
    /// Ordering key, when message ordering is used.
    public var orderingKey: String?

    /// Creates a message; every field defaults to `nil`.
    public init(
        data: String? = nil,
        attributes: [String: String]? = nil,
        messageId: String? = nil,
        publishTime: String? = nil,
        orderingKey: String? = nil
    ) {
        self.data = data
        self.attributes = attributes
        self.messageId = messageId
        self.publishTime = publishTime
        self.orderingKey = orderingKey
    }

    /// Creates a message whose `data` is `payload` base64-encoded.
    public init(
        payload: Data,
        attributes: [String: String]? = nil,
        messageId: String? = nil,
        publishTime: String? = nil,
        orderingKey: String? = nil
    ) {
        self.init(
            data: payload.base64EncodedString(), attributes: attributes, messageId: messageId,
            publishTime: publishTime, orderingKey: orderingKey)
    }

    private enum CodingKeys: String, CodingKey {
        case data, attributes, messageId, publishTime, orderingKey
        case messageIdSnake = "message_id"
        case publishTimeSnake = "publish_time"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        data = try container.decodeIfPresent(String.self, forKey: .data)
        attributes = try container.decodeIfPresent([String: String].self, forKey: .attributes)
        messageId =
            try container.decodeIfPresent(String.self, forKey: .messageId)
            ?? container.decodeIfPresent(String.self, forKey: .messageIdSnake)
        publishTime =
            try container.decodeIfPresent(String.self, forKey: .publishTime)
            ?? container.decodeIfPresent(String.self, forKey: .publishTimeSnake)
        orderingKey = try container.decodeIfPresent(String.self, forKey: .orderingKey)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(data, forKey: .data)
        try container.encodeIfPresent(attributes, forKey: .attributes)
        try container.encodeIfPresent(messageId, forKey: .messageId)
        try container.encodeIfPresent(messageId, forKey: .messageIdSnake)
        try container.encodeIfPresent(publishTime, forKey: .publishTime)
        try container.encodeIfPresent(publishTime, forKey: .publishTimeSnake)
        try container.encodeIfPresent(orderingKey, forKey: .orderingKey)
    }

    /// `publishTime` parsed as an RFC 3339 timestamp; `nil` when absent or malformed.
    public var publishDate: Date? { publishTime.flatMap(RFC3339.date(from:)) }

    /// The base64-decoded `data` (standard or URL-safe alphabet, padding optional).
    public func decodedData() throws -> Data {
        guard let data else { throw PubSubDataError.missingData }
        var text = data.replacingOccurrences(of: "-", with: "+")
            .replacingOccurrences(of: "_", with: "/")
            .filter { !$0.isWhitespace }
        let remainder = text.count % 4
        if remainder == 1 { throw PubSubDataError.invalidBase64 }
        if remainder > 0 { text += String(repeating: "=", count: 4 - remainder) }
        guard let decoded = Data(base64Encoded: text) else { throw PubSubDataError.invalidBase64 }
        return decoded
    }
}

/// Why `PubSubMessage.decodedData()` failed.
public enum PubSubDataError: Error, Hashable, Sendable {
    /// The message has no `data` field.
    case missingData
    /// `data` is not valid base64.
    case invalidBase64
}
