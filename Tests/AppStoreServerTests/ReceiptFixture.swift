import Foundation
import SwiftASN1

@testable import StoreSimulator

/// App receipts built in the tests: DER with SwiftASN1's serializer, BER (indefinite lengths, chunked
/// OCTET STRINGs) with ``TLV``. Values mirror Apple's format: each attribute's value is an OCTET
/// STRING holding a DER UTF8String, IA5String or INTEGER.
enum ReceiptFixture {
    struct Purchase {
        var productId: String
        var transactionId: String
        var originalTransactionId: String
        var purchaseDate: String
        var quantity: Int64 = 1
    }

    static let purchases = [
        Purchase(
            productId: "com.example.monthly", transactionId: "2000000100000001",
            originalTransactionId: "2000000100000001", purchaseDate: "2024-01-15T10:00:00Z"),
        Purchase(
            productId: "com.example.monthly", transactionId: "2000000100000002",
            originalTransactionId: "2000000100000001", purchaseDate: "2024-02-15T10:00:00Z"),
        Purchase(
            productId: "com.example.coins", transactionId: "2000000100000003",
            originalTransactionId: "2000000100000003", purchaseDate: "2024-01-20T08:30:00.250Z", quantity: 5),
    ]

    // DER building is the store simulator's receipt minter's; the fixture adds BER and bad inputs.
    static let signedDataOID = ReceiptMinter.signedDataOID
    static let dataOID = ReceiptMinter.dataOID
    static let sha256OID = ReceiptMinter.sha256OID

    // MARK: - Attribute values (DER, as Apple writes them)

    static func der(_ body: (inout DER.Serializer) throws -> Void) -> [UInt8] {
        (try? ReceiptMinter.der(body)) ?? []
    }

    static func utf8(_ text: String) -> [UInt8] { der { try $0.serialize(ASN1UTF8String(text)) } }
    static func ia5(_ text: String) -> [UInt8] { der { try $0.serialize(try ASN1IA5String(text)) } }
    static func integer(_ value: Int64) -> [UInt8] { der { try $0.serialize(value) } }

    /// `(type, value bytes)` pairs of one in-app purchase.
    static func inAppAttributes(_ purchase: Purchase) -> [(Int64, [UInt8])] {
        [
            (1701, integer(purchase.quantity)),
            (1702, utf8(purchase.productId)),
            (1703, utf8(purchase.transactionId)),
            (1704, ia5(purchase.purchaseDate)),
            (1705, utf8(purchase.originalTransactionId)),
            (1706, ia5(purchase.purchaseDate)),
            (1708, ia5("")),  // no expiry: Apple writes an empty date
            (1711, integer(1000)),  // web order line item id, not decoded
        ]
    }

    // MARK: - DER receipts (SwiftASN1's serializer)

    static func derAttributeSet(_ attributes: [(Int64, [UInt8])]) -> [UInt8] {
        (try? ReceiptMinter.attributeSet(attributes)) ?? []
    }

    static func payloadAttributes(
        bundleId: String? = "com.example", receiptType: String = "ProductionSandbox", purchases: [Purchase]
    ) -> [(Int64, [UInt8])] {
        var attributes: [(Int64, [UInt8])] = [(0, utf8(receiptType)), (3, utf8("1.0")), (4, [0x01, 0x02, 0x03])]
        if let bundleId { attributes.append((2, utf8(bundleId))) }
        attributes.append((12, ia5("2024-03-01T00:00:00Z")))
        for purchase in purchases {
            attributes.append((17, derAttributeSet(inAppAttributes(purchase))))
        }
        attributes.append((19, utf8("1.0")))
        return attributes
    }

    /// A complete DER `ContentInfo`/`SignedData` around `payload` (no certificates, an empty
    /// signature: the parser does not read them).
    static func derEnvelope(payload: [UInt8], contentType: ASN1ObjectIdentifier = signedDataOID) -> [UInt8] {
        (try? ReceiptMinter.envelope(payload: payload, contentType: contentType)) ?? []
    }

    static func derReceipt(
        bundleId: String? = "com.example", purchases: [Purchase] = purchases
    ) -> [UInt8] {
        derEnvelope(payload: derAttributeSet(payloadAttributes(bundleId: bundleId, purchases: purchases)))
    }

    // MARK: - BER receipts (hand-assembled)

    /// A BER TLV with definite or indefinite length, for the encodings SwiftASN1's DER serializer
    /// cannot write.
    indirect enum TLV {
        case primitive(UInt8, [UInt8])
        case constructed(UInt8, [TLV], indefinite: Bool)
        /// Already-encoded bytes.
        case raw([UInt8])

        var bytes: [UInt8] {
            switch self {
            case .primitive(let tag, let content):
                return [tag] + TLV.length(content.count) + content
            case .constructed(let tag, let children, let indefinite):
                let content = children.flatMap(\.bytes)
                return indefinite ? [tag, 0x80] + content + [0, 0] : [tag] + TLV.length(content.count) + content
            case .raw(let bytes):
                return bytes
            }
        }

        static func length(_ count: Int) -> [UInt8] {
            if count < 0x80 { return [UInt8(count)] }
            var bytes: [UInt8] = []
            var rest = count
            while rest > 0 {
                bytes.insert(UInt8(rest & 0xFF), at: 0)
                rest >>= 8
            }
            return [0x80 | UInt8(bytes.count)] + bytes
        }

        /// A constructed OCTET STRING (tag 0x24) of `chunkSize`-byte primitive chunks.
        static func chunkedOctetString(_ bytes: [UInt8], chunkSize: Int, indefinite: Bool) -> TLV {
            var chunks: [TLV] = []
            var start = 0
            while start < bytes.count {
                let end = min(start + chunkSize, bytes.count)
                chunks.append(.primitive(0x04, Array(bytes[start..<end])))
                start = end
            }
            return .constructed(0x24, chunks, indefinite: indefinite)
        }
    }

    /// A BER attribute set: indefinite-length SET and SEQUENCEs, values as chunked OCTET STRINGs.
    static func berAttributeSet(_ attributes: [(Int64, TLV)]) -> TLV {
        .constructed(
            0x31,
            attributes.map { type, value in
                .constructed(0x30, [.raw(integer(type)), .raw(integer(1)), value], indefinite: true)
            }, indefinite: true)
    }

    /// The same receipt as ``derReceipt``, in BER: indefinite lengths for ContentInfo, [0], SignedData,
    /// encapContentInfo and every set; the content, the in-app sets and string values are
    /// constructed OCTET STRINGs in chunks.
    static func berReceipt(purchases: [Purchase] = purchases, chunkSize: Int = 7) -> [UInt8] {
        let payloadAttributes: [(Int64, TLV)] = payloadAttributes(purchases: purchases).map { type, value in
            if type == 17 {
                let set = berInAppSet(value) ?? .raw(value)
                return (type, TLV.chunkedOctetString(set.bytes, chunkSize: chunkSize, indefinite: true))
            }
            return (type, TLV.chunkedOctetString(value, chunkSize: 3, indefinite: false))
        }
        let payload = berAttributeSet(payloadAttributes).bytes
        return berEnvelope(content: TLV.chunkedOctetString(payload, chunkSize: chunkSize * 10, indefinite: true))
    }

    /// Re-encodes one DER in-app set in BER (indefinite lengths, chunked values).
    private static func berInAppSet(_ der: [UInt8]) -> TLV? {
        guard let root = try? BER.parse(der), case .constructed(let elements) = root.content else { return nil }
        var attributes: [(Int64, TLV)] = []
        for element in elements {
            guard case .constructed(let fields) = element.content else { return nil }
            let parts = Array(fields)
            guard parts.count == 3, let type = try? Int64(derEncoded: parts[0]),
                let value = try? ASN1OctetString(derEncoded: parts[2])
            else { return nil }
            attributes.append((type, TLV.chunkedOctetString(Array(value.bytes), chunkSize: 4, indefinite: true)))
        }
        return berAttributeSet(attributes)
    }

    static func berEnvelope(content: TLV?) -> [UInt8] {
        let oidBytes = der { try $0.serialize(signedDataOID) }
        let dataOIDBytes = der { try $0.serialize(dataOID) }
        var encapsulated: [TLV] = [.raw(dataOIDBytes)]
        if let content { encapsulated.append(.constructed(0xA0, [content], indefinite: true)) }
        let signedData = TLV.constructed(
            0x30,
            [
                .raw(integer(1)),
                .constructed(
                    0x31, [.constructed(0x30, [.raw(der { try $0.serialize(sha256OID) })], indefinite: true)],
                    indefinite: true),
                .constructed(0x30, encapsulated, indefinite: true),
                .constructed(0x31, [], indefinite: true),
            ], indefinite: true)
        return TLV.constructed(
            0x30, [.raw(oidBytes), .constructed(0xA0, [signedData], indefinite: true)], indefinite: true
        )
        .bytes
    }

    /// Base64 text in 64-character lines ending in CR LF, as receipts often arrive.
    static func wrapped(_ base64: String) -> String {
        var lines: [Substring] = []
        var rest = Substring(base64)
        while !rest.isEmpty {
            lines.append(rest.prefix(64))
            rest = rest.dropFirst(64)
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    // MARK: - Legacy transaction receipts

    static func legacyReceipt(purchaseInfo: String, outerExtra: String = "") -> String {
        let encodedInfo = Data(purchaseInfo.utf8).base64EncodedString()
        let outer = "{\n\t\"signature\" = \"AAAA\";\n\t\"purchase-info\" = \"\(encodedInfo)\";\n\(outerExtra)}\n"
        return Data(outer.utf8).base64EncodedString()
    }
}
