import Foundation
import SwiftASN1

/// Where in a receipt something is, for error details: the payload or the n-th in-app purchase
/// (1-based). Only turned into text when an error is thrown, so the success path builds no strings.
struct ReceiptLocation: CustomStringConvertible {
    /// The in-app purchase's position in the receipt, or `nil` for the top-level payload.
    var purchase: Int?

    static let payload = ReceiptLocation(purchase: nil)

    var description: String { purchase.map { "in-app purchase \($0)" } ?? "the receipt payload" }
}

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
    ///   - location: the set's place in the receipt, for error details.
    static func parseSet(
        _ bytes: ArraySlice<UInt8>, reason: ReceiptError.Reason, location: ReceiptLocation
    ) throws(ReceiptError) -> [ReceiptAttribute] {
        var node: ASN1Node
        do {
            node = try BER.parse(bytes)
            if node.identifier == .octetString {
                node = try BER.parse(try ASN1OctetString(berEncoded: node).bytes)
            }
        } catch {
            throw ReceiptError(reason, "\(location) is not BER-encoded ASN.1 (\(ASN1Diagnostics.describe(error)))")
        }
        guard node.identifier == .set, case .constructed(let elements) = node.content else {
            throw ReceiptError(reason, "\(location) is not a SET of attributes")
        }
        var attributes: [ReceiptAttribute] = []
        var index = 0
        for element in elements {
            index += 1
            attributes.append(try parseAttribute(element, reason: reason, location: location, index: index))
        }
        return attributes
    }

    private static func parseAttribute(
        _ element: ASN1Node, reason: ReceiptError.Reason, location: ReceiptLocation, index: Int
    ) throws(ReceiptError) -> ReceiptAttribute {
        guard element.identifier == .sequence, case .constructed(let nodes) = element.content else {
            throw ReceiptError(reason, "\(location), attribute \(index) is not a SEQUENCE")
        }
        var fields = nodes.makeIterator()
        guard let typeNode = fields.next(), fields.next() != nil, let valueNode = fields.next() else {
            throw ReceiptError(reason, "\(location), attribute \(index) lacks a type, version or value")
        }
        guard let type = try? Int64(berEncoded: typeNode, withIdentifier: .integer), type >= 0 else {
            throw ReceiptError(reason, "\(location), attribute \(index) has a type that is not a non-negative INTEGER")
        }
        guard let value = try? ASN1OctetString(berEncoded: valueNode) else {
            throw ReceiptError(
                reason, "\(location), attribute \(index) (type \(type)) has a value that is not an OCTET STRING")
        }
        return ReceiptAttribute(type: type, value: value.bytes)
    }

    // MARK: - Values

    /// A string value: UTF8String as documented, or IA5String or PrintableString (Apple's receipts are
    /// not consistent about the string type).
    static func string(_ attribute: ReceiptAttribute, in location: ReceiptLocation) throws(ReceiptError) -> String {
        let bytes: ArraySlice<UInt8>?
        if let node = try? BER.parse(attribute.value) {
            switch node.identifier {
            case .utf8String: bytes = try? ASN1UTF8String(berEncoded: node).bytes
            case .ia5String: bytes = try? ASN1IA5String(berEncoded: node).bytes
            case .printableString: bytes = try? ASN1PrintableString(berEncoded: node).bytes
            default: bytes = nil
            }
        } else {
            bytes = nil
        }
        guard let bytes else {
            throw ReceiptError(
                .malformedAttribute, "\(location): attribute type \(attribute.type) is not an ASN.1 string")
        }
        guard let string = String(validating: bytes, as: UTF8.self) else {
            throw ReceiptError(.malformedAttribute, "\(location): attribute type \(attribute.type) is not valid UTF-8")
        }
        return string
    }

    /// A non-negative INTEGER value that fits in 64 bits.
    static func integer(_ attribute: ReceiptAttribute, in location: ReceiptLocation) throws(ReceiptError) -> Int64 {
        guard let node = try? BER.parse(attribute.value),
            let value = try? Int64(berEncoded: node, withIdentifier: .integer), value >= 0
        else {
            throw ReceiptError(
                .malformedAttribute, "\(location): attribute type \(attribute.type) is not a non-negative INTEGER")
        }
        return value
    }

    /// An RFC 3339 date in a string value; an empty string means "absent" (receipts carry empty
    /// dates, e.g. no expiry for a non-subscription).
    static func date(_ attribute: ReceiptAttribute, in location: ReceiptLocation) throws(ReceiptError) -> Date? {
        let text = try string(attribute, in: location)
        if text.isEmpty { return nil }
        guard let date = ReceiptDate.parse(Array(text.utf8)[...]) else {
            throw ReceiptError(
                .malformedAttribute, "\(location): attribute type \(attribute.type) is not an RFC 3339 date")
        }
        return date
    }
}
