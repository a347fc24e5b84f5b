import SwiftASN1

/// The one path through a PKCS#7 (CMS, RFC 5652) message that an app receipt needs:
///
/// ```
/// ContentInfo ::= SEQUENCE { contentType OBJECT IDENTIFIER (signedData), content [0] EXPLICIT SignedData }
/// SignedData  ::= SEQUENCE { version INTEGER, digestAlgorithms SET, encapContentInfo SEQUENCE, … }
/// encapContentInfo ::= SEQUENCE { eContentType OBJECT IDENTIFIER, eContent [0] EXPLICIT OCTET STRING OPTIONAL }
/// ```
///
/// Parsed with SwiftASN1's BER parser, which accepts indefinite lengths (genuine receipts use them)
/// and refuses nesting deeper than 50 levels; a constructed (chunked) `eContent` is joined by
/// `ASN1OctetString(berEncoded:)`. Certificates, signer infos and the signature are not read: see
/// ``AppReceipt`` for why the signature is not verified here. The `eContentType` must be an object
/// identifier but its value is not checked (Apple's receipts use id-data, 1.2.840.113549.1.7.1).
enum PKCS7Envelope {
    static let signedDataOID: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 7, 2]
    static let explicitZero = ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)

    /// The encapsulated content's bytes.
    static func content(of bytes: [UInt8]) throws(ReceiptError) -> ArraySlice<UInt8> {
        let root: ASN1Node
        do {
            root = try BER.parse(bytes)
        } catch {
            throw ReceiptError(.notPKCS7, "the bytes are not BER-encoded ASN.1 (\(ASN1Diagnostics.describe(error)))")
        }
        let contentInfo = try children(of: root, as: .sequence, .notPKCS7, "the ContentInfo is not a SEQUENCE")
        guard contentInfo.count >= 2,
            let contentType = try? ASN1ObjectIdentifier(berEncoded: contentInfo[0])
        else {
            throw ReceiptError(.notPKCS7, "the ContentInfo does not start with a content type")
        }
        guard contentType == signedDataOID else {
            throw ReceiptError(.notPKCS7, "the content type is \(contentType), not signedData (1.2.840.113549.1.7.2)")
        }
        let signedData = try explicitlyTagged(
            contentInfo[1], .notPKCS7, "the ContentInfo's content is not [0] EXPLICIT")
        let signedDataFields = try children(
            of: signedData, as: .sequence, .notPKCS7, "the SignedData is not a SEQUENCE")
        guard signedDataFields.count >= 3, signedDataFields[0].identifier == .integer,
            signedDataFields[1].identifier == .set
        else {
            throw ReceiptError(.notPKCS7, "the SignedData does not start with a version and digest algorithms")
        }
        let encapsulated = try children(
            of: signedDataFields[2], as: .sequence, .notPKCS7, "the SignedData's encapContentInfo is not a SEQUENCE")
        guard let first = encapsulated.first, first.identifier == .objectIdentifier else {
            throw ReceiptError(.notPKCS7, "the encapContentInfo does not start with a content type")
        }
        guard encapsulated.count >= 2 else {
            throw ReceiptError(.noContent, "the SignedData carries no encapsulated content (a detached signature)")
        }
        let eContent = try explicitlyTagged(encapsulated[1], .noContent, "the encapsulated content is not [0] EXPLICIT")
        do {
            return try ASN1OctetString(berEncoded: eContent).bytes
        } catch {
            throw ReceiptError(
                .noContent, "the encapsulated content is not an OCTET STRING (\(ASN1Diagnostics.describe(error)))")
        }
    }

    /// The children of a constructed node with the given identifier.
    static func children(
        of node: ASN1Node, as identifier: ASN1Identifier, _ reason: ReceiptError.Reason, _ detail: String
    ) throws(ReceiptError) -> [ASN1Node] {
        guard node.identifier == identifier, case .constructed(let nodes) = node.content else {
            throw ReceiptError(reason, detail)
        }
        return Array(nodes)
    }

    /// The single node inside a `[0] EXPLICIT` wrapper.
    private static func explicitlyTagged(
        _ node: ASN1Node, _ reason: ReceiptError.Reason, _ detail: String
    ) throws(ReceiptError) -> ASN1Node {
        let inner = try children(of: node, as: explicitZero, reason, detail)
        guard inner.count == 1 else { throw ReceiptError(reason, detail) }
        return inner[0]
    }
}

/// Short, stable descriptions of SwiftASN1's errors for one-line details (its own `description`
/// carries a source file path and line).
enum ASN1Diagnostics {
    static func describe(_ error: any Error) -> String {
        if let error = error as? ASN1Error { return "\(error.code)" }
        return "unexpected error"
    }
}
