import Foundation
import SwiftASN1

/// One receipt attribute, `SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`: its type
/// and the OCTET STRING's bytes (which hold a DER value of the type's documented kind).
struct ReceiptAttribute {
    var type: Int64
    var value: ArraySlice<UInt8>
}

/// Reads receipt attribute sets and the values inside attributes. Each call parses one level with
/// `BER.parse` and the levels are fixed (payload → in-app set → value), so work is linear in the input
/// and nesting is bounded by SwiftASN1's depth limit of 50 per parse.
enum ReceiptAttributes {
    /// Parses a SET of attributes. Xcode's receipts wrap the set in one more OCTET STRING; that one
    /// wrapper is removed, as Apple's library does. The version of each attribute is not read (Apple's
    /// library does not either), and elements after the value are ignored.
    ///
    /// - Parameters:
    ///   - reason: the error to throw when `bytes` are not such a set.
    ///   - what: names the set in error details ("the receipt payload", "in-app purchase 3").
    static func parseSet(
        _ bytes: ArraySlice<UInt8>, reason: ReceiptError.Reason, what: String
    ) throws(ReceiptError) -> [ReceiptAttribute] {
        var node: ASN1Node
        do {
            node = try BER.parse(bytes)
            if node.identifier == .octetString {
                node = try BER.parse(try ASN1OctetString(berEncoded: node).bytes)
            }
        } catch {
            throw ReceiptError(reason, "\(what) is not BER-encoded ASN.1 (\(ASN1Diagnostics.describe(error)))")
        }
        let elements = try PKCS7Envelope.children(of: node, as: .set, reason, "\(what) is not a SET of attributes")
        var attributes: [ReceiptAttribute] = []
        attributes.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            attributes.append(try parseAttribute(element, reason: reason, what: "\(what), attribute \(index + 1)"))
        }
        return attributes
    }

    private static func parseAttribute(
        _ element: ASN1Node, reason: ReceiptError.Reason, what: String
    ) throws(ReceiptError) -> ReceiptAttribute {
        let fields = try PKCS7Envelope.children(of: element, as: .sequence, reason, "\(what) is not a SEQUENCE")
        guard fields.count >= 3 else {
            throw ReceiptError(reason, "\(what) has \(fields.count) fields, not type, version and value")
        }
        guard let type = try? Int64(berEncoded: fields[0], withIdentifier: .integer), type >= 0 else {
            throw ReceiptError(reason, "\(what) has a type that is not a non-negative 64-bit INTEGER")
        }
        guard let value = try? ASN1OctetString(berEncoded: fields[2]) else {
            throw ReceiptError(reason, "\(what) (type \(type)) has a value that is not an OCTET STRING")
        }
        return ReceiptAttribute(type: type, value: value.bytes)
    }

    // MARK: - Values

    /// A string value: UTF8String as documented, or IA5String or PrintableString (Apple's receipts are
    /// not consistent about the string type).
    static func string(_ attribute: ReceiptAttribute, what: String) throws(ReceiptError) -> String {
        let failure = ReceiptError(.malformedAttribute, "\(what) (type \(attribute.type)) is not an ASN.1 string")
        guard let node = try? BER.parse(attribute.value) else { throw failure }
        let bytes: ArraySlice<UInt8>
        do {
            switch node.identifier {
            case .utf8String: bytes = try ASN1UTF8String(berEncoded: node).bytes
            case .ia5String: bytes = try ASN1IA5String(berEncoded: node).bytes
            case .printableString: bytes = try ASN1PrintableString(berEncoded: node).bytes
            default: throw failure
            }
        } catch {
            throw failure
        }
        guard let string = String(validating: bytes, as: UTF8.self) else {
            throw ReceiptError(.malformedAttribute, "\(what) (type \(attribute.type)) is not valid UTF-8")
        }
        return string
    }

    /// A non-negative INTEGER value that fits in 64 bits.
    static func integer(_ attribute: ReceiptAttribute, what: String) throws(ReceiptError) -> Int64 {
        guard let node = try? BER.parse(attribute.value),
            let value = try? Int64(berEncoded: node, withIdentifier: .integer), value >= 0
        else {
            throw ReceiptError(
                .malformedAttribute, "\(what) (type \(attribute.type)) is not a non-negative 64-bit INTEGER")
        }
        return value
    }

    /// An RFC 3339 date in a string value; an empty string means "absent" (receipts carry empty
    /// dates, e.g. no expiry for a non-subscription).
    static func date(_ attribute: ReceiptAttribute, what: String) throws(ReceiptError) -> Date? {
        let text = try string(attribute, what: what)
        if text.isEmpty { return nil }
        guard let date = ReceiptDate.parse(Array(text.utf8)[...]) else {
            throw ReceiptError(.malformedAttribute, "\(what) (type \(attribute.type)) is not an RFC 3339 date")
        }
        return date
    }
}
