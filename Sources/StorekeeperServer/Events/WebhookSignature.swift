import Crypto
public import Foundation
import StoreCore

/// How deliveries are signed (docs/events.md, "Verifying a delivery"): the header
/// `Storekeeper-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>[,v1=<hex>]`, each `v1` the
/// HMAC-SHA256, under one active secret, of the timestamp, a dot and the exact body bytes.
/// A receiver accepts the delivery if any `v1` matches under its secret and `t` is within its
/// tolerance of its own clock (5 minutes recommended) — a captured delivery can't be replayed later.
public enum WebhookSignature {
    public static let headerName = "Storekeeper-Signature"
    /// The tolerance the docs recommend and ``verify(header:body:secret:now:tolerance:)`` defaults to.
    public static let defaultTolerance: TimeInterval = 300

    /// The header's value for `body` sent at `timestamp`, signed with each secret.
    public static func header(timestamp: Int, body: Data, secrets: [WebhookSecret]) -> String {
        (["t=\(timestamp)"] + secrets.map { "v1=\(signature(timestamp: timestamp, body: body, key: $0.bytes))" })
            .joined(separator: ",")
    }

    static func signature(timestamp: Int, body: Data, key: [UInt8]) -> String {
        var message = Data("\(timestamp).".utf8)
        message.append(body)
        let mac = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key))
        return Hex.encode(mac)
    }

    /// Why a delivery fails verification.
    public enum Failure: Error, Sendable, Hashable {
        case malformedHeader
        case noMatchingSignature
        case outsideTolerance
    }

    /// Checks a received delivery the way a receiver should (used by the demo's receiver).
    public static func verify(
        header: String, body: Data, secret: String, now: Date, tolerance: TimeInterval = defaultTolerance
    ) throws(Failure) {
        var timestamp: Int?
        var signatures: [String] = []
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { throw .malformedHeader }
            switch pair[0].trimmingCharacters(in: .whitespaces) {
            case "t": timestamp = Int(pair[1])
            case "v1": signatures.append(pair[1])
            default: continue
            }
        }
        guard let timestamp, !signatures.isEmpty else { throw .malformedHeader }
        let expected = signature(timestamp: timestamp, body: body, key: Array(secret.utf8))
        // Compared in constant time, so the comparison tells nothing about how close a guess was.
        guard signatures.contains(where: { constantTimeEqual($0, expected) }) else { throw .noMatchingSignature }
        guard abs(now.timeIntervalSince1970 - Double(timestamp)) <= tolerance else { throw .outsideTolerance }
    }

    static func constantTimeEqual(_ lhs: String, _ rhs: String) -> Bool {
        let (a, b) = (Array(lhs.utf8), Array(rhs.utf8))
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
